# scaling.awk reads `go test -bench -cpu 1` and `-cpu 2` output and prints,
# per benchmark, the best (lowest) ns/op at 1 and at 2 cores and their
# ratio: the 1 -> 2 core speed-up of wall time.
/^Benchmark/ {
	name = $1
	cores = 1
	if (match(name, /-[0-9]+$/)) {
		cores = substr(name, RSTART + 1)
		name = substr(name, 1, RSTART - 1)
	}
	ns = $3
	key = name SUBSEP cores
	if (!(key in best) || ns < best[key]) best[key] = ns
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
}
END {
	printf "%-52s %12s %12s %8s\n", "benchmark", "ns/op 1 core", "ns/op 2 cores", "speed-up"
	for (i = 1; i <= n; i++) {
		k1 = order[i] SUBSEP 1; k2 = order[i] SUBSEP 2
		if ((k1 in best) && (k2 in best))
			printf "%-52s %12.0f %12.0f %8.2f\n", order[i], best[k1], best[k2], best[k1] / best[k2]
	}
}
