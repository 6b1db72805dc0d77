# table.awk turns `go test -bench` lines of cpu's bit-product benchmarks
# into one table: the shape from the name, then per kernel the logical
# GOPS (mean wall time), bit-MACs per cycle of process CPU time
# (bitMAC/cpucyc), per cycle per core of wall time (bitMAC/cyc/core) and
# the ratio to the float32 GEMM (x_fp32, the GEMM's best wall time over
# the product's mean; x_fp32cpu, their mean CPU times), and bit-MACs per
# cycle per core of the fastest single run (best/cyc/core). Usage:
# awk -f table.awk gotest-output.txt
BEGIN {
	printf "%-28s %-12s %9s %14s %16s %8s %11s %14s\n", "shape", "impl", "GOPS", "bitMAC/cpucyc", "bitMAC/cyc/core", "x fp32", "x fp32 cpu", "best/cyc/core"
}
/^Benchmark/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	n = split(name, part, "/")
	impl = part[n]
	sub(/^impl=/, "", impl)
	shape = part[2]
	for (i = 3; i < n; i++) shape = shape "/" part[i]
	delete v
	for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
	if (impl == "fp32") {
		printf "%-28s %-12s %9s %14s %16s %8s %11s %14s   (%s GFLOPS, %s per CPU second)\n", shape, impl, "-", "-", "-", "1", "1", "-", v["GFLOPS"], v["GFLOPS/cpu"]
		next
	}
	printf "%-28s %-12s %9.1f %14.1f %16.1f %8.2f %11.2f %14.1f\n", shape, impl, v["GOPS"], v["bitMAC/cpucyc"], v["bitMAC/cyc/core"], v["x_fp32"], v["x_fp32cpu"], v["bitMAC/bestcyc/core"]
}
