#!/bin/sh
# Times synthetic graph generation (in memory, no output) and data synth
# --pack-out at 1M and 4M nodes, GOMAXPROCS 1 and 2 (or the CPUS given),
# with /usr/bin/time's CPU seconds and peak RSS beside the wall time: on a
# shared machine the CPU seconds tell contention from the work. Checks that
# the packed files are the same bytes at every GOMAXPROCS.
#   bench/scale/run.sh [OUTDIR] [CPUS]
set -eu
out=${1:-/tmp/qgtc-scale}
cpus=${2:-"1 2"}
mkdir -p "$out"
go test -c -o "$out/subgraph.test" ./subgraph
go build -o "$out/qgtc" ./cmd/qgtc
uptime
for n in 1048576 4194304; do
	for model in rmat planted; do
		for p in $cpus; do
			/usr/bin/time -f "   -> $model n=$n GOMAXPROCS=$p: wall %e s, user %U s, sys %S s, maxrss %M KiB" \
				"$out/subgraph.test" -test.run XXX -test.bench "Synth/model=$model/n=$n\$" -test.benchtime 1x -test.cpu "$p" 2>&1 |
				grep -E 'Benchmark|->'
		done
	done
	parts=$((n / 2048))
	for p in $cpus; do
		/usr/bin/time -f "   -> pack-out n=$n GOMAXPROCS=$p: wall %e s, user %U s, sys %S s, maxrss %M KiB" \
			env GOMAXPROCS="$p" "$out/qgtc" data synth --quiet --model planted --nodes "$n" --communities $((n / 1024)) \
			--avg-degree 16 --mixing 0.1 --features 128 --feature-nnz 16 --classes 16 --seed 1 \
			--pack-out "$out/planted-$n-p$p.qgpb" --parts "$parts"
	done
	sha256sum "$out"/planted-$n-p*.qgpb
	ls -l "$out"/planted-$n-p*.qgpb
	rm -f "$out"/planted-$n-p*.qgpb
	uptime
done
