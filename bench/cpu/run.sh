#!/bin/sh
# Runs the CPU bit-kernel benchmarks whose outputs are kept beside this
# script (results/): `sh bench/cpu/run.sh` from anywhere. About 15
# minutes on 2 cores.
set -e
cd "$(dirname "$0")/../.."
out=bench/cpu/results
mkdir -p "$out"
go build -o bin/qgtc ./cmd/qgtc
go test -c -o bin/cpu.test ./cpu
go test -c -o bin/templates.test ./templates
{ date -u; uptime; } > "$out/when.txt"
./bin/qgtc info > "$out/info.txt"
# The inner AND+popcount row kernel per path on L1-resident lines: the
# issue's bars are 70% of its best figure per path.
./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkRow' > "$out/inner.txt"
# The aggregation grid A (N×N, 1 bit) × X (N×D, s bits) on the default
# path (the best this CPU has), then the same on AVX2, next to an fp32
# GEMM (each path as chosen by shape: the vertical kernel).
./bin/qgtc bench bmm --time 500ms > "$out/grid.txt"
./bin/qgtc bench bmm --impl avx2 --time 500ms > "$out/grid_avx2.txt"
# The layer-update shapes X (4096×256, s bits) × W (256×64, t bits): each
# path as chosen (vertical kernel) and forced onto the row kernels
# ("-rows"), side by side in one run, with the fp32 GEMM.
./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkMM2IntUpdate' -test.benchtime 100x > "$out/update_gotest.txt"
awk -f bench/cpu/table.awk "$out/update_gotest.txt" > "$out/update.txt"
# The whole grid again through go test: each path as chosen (vertical,
# 32-bit lanes), its 64-bit lanes and the row kernels side by side, the
# fp32 GEMM, and the fastest single run (best/cyc/core) beside the means.
./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkMM2Int/n=/d=/s=/impl=(avx|fp32)' -test.benchtime 20x > "$out/grid_gotest.txt"
awk -f bench/cpu/table.awk "$out/grid_gotest.txt" > "$out/grid_table.txt"
# Zero-tile jumping: a block-diagonal A (batched subgraphs, 2% ones).
./bin/qgtc bench bmm --a blockdiag --n 4096 --d 64 --bits 1,4 --time 500ms > "$out/blockdiag.txt"
# Dense against block-diagonal, the fused re-quantizing MulBit, Sgemm, the
# zero-chunk masks.
QGTC_BENCH_ROWS=0 ./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkMM2IntBlockDiag|BenchmarkMulBit|BenchmarkMark' -test.benchtime 30x > "$out/gotest.txt"
./bin/templates.test -test.run '^$' -test.bench 'BenchmarkSgemm' -test.benchtime 30x >> "$out/gotest.txt"
# One core against two (wall time: ns/op at -1 over ns/op at -2): one
# process per core count, taken in turn, 3 rounds. Not `-test.cpu 1,2` in
# one process: a b.Loop benchmark runs its first -cpu setting inside the
# framework's probe call, before GOMAXPROCS is set, so that result is
# measured at the previous benchmark's setting (it gave "1 core" figures
# at 2-core speed).
: > "$out/cores.txt"
for round in 1 2 3; do
  for c in 1 2; do
    GOMAXPROCS=$c QGTC_BENCH_ROWS=0 ./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkMM2Int$/n=(1024|4096)/d=(16|64)/s=(1|4)$/impl=avx' -test.cpu $c -test.benchtime 300ms >> "$out/cores.txt"
    GOMAXPROCS=$c QGTC_BENCH_ROWS=0 ./bin/cpu.test -test.run '^$' -test.bench 'BenchmarkMM2IntUpdate/s=(1|4)/t=(1|4)/impl=avx' -test.cpu $c -test.benchtime 300ms >> "$out/cores.txt"
  done
done
awk -f bench/cpu/scaling.awk "$out/cores.txt" > "$out/scaling.txt"
{ date -u; uptime; } >> "$out/when.txt"
