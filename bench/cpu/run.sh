#!/bin/sh
# Runs the CPU bit-kernel benchmarks whose outputs are kept beside this
# script (results/). Run from anywhere; takes a few minutes on 2 cores.
set -e
cd "$(dirname "$0")/../.."
out=bench/cpu/results
mkdir -p "$out"
go build -o bin/qgtc ./cmd/qgtc
{ date -u; uptime; } > "$out/when.txt"
./bin/qgtc info > "$out/info.txt"
# The aggregation grid A (N×N, 1 bit) × X (N×D, s bits) on the default path
# (the best this CPU has), then the same on AVX2, next to an fp32 GEMM.
./bin/qgtc bench bmm --time 500ms > "$out/grid.txt"
./bin/qgtc bench bmm --impl avx2 --time 500ms > "$out/grid_avx2.txt"
# Zero-tile jumping: a block-diagonal A (batched subgraphs, 2% ones).
./bin/qgtc bench bmm --a blockdiag --n 4096 --d 64 --bits 1,4 --time 500ms > "$out/blockdiag.txt"
# Inner kernel per path on L1-resident lines, layer-update shapes, dense vs
# block-diagonal, fused MulBit, fp32 GEMM.
go test -run '^$' -bench 'BenchmarkRow' ./cpu > "$out/inner.txt"
go test -run '^$' -bench 'BenchmarkMM2IntUpdate|BenchmarkMM2IntBlockDiag|BenchmarkSgemm|BenchmarkMulBit' -benchtime 30x ./cpu > "$out/gotest.txt"
# One core against two.
go test -run '^$' -bench 'BenchmarkMM2Int$/n=4096/d=64/s=(1|4|8)$' -cpu 1,2 -count 3 -benchtime 20x ./cpu > "$out/cores.txt"
{ date -u; uptime; } >> "$out/when.txt"
