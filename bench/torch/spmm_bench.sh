#!/usr/bin/env bash
# Runs the Go sparse-template benchmarks (templates: BenchmarkTemplates) and the
# PyTorch CPU baseline (spmm_bench.py) on the same graph, feature widths
# (16..256) and thread count, then prints one table with ratios.
#
#   bench/torch/spmm_bench.sh [graph]      # default coauthor_cs
#
# Environment: THREADS (2), COUNT (Go -count, 3), BENCHTIME (Go, 1s),
# PYTHON (/usr/bin/python3, which has Debian's python3-torch).
# Every figure is the fastest of its runs: on a shared machine the minimum
# is the least disturbed.
set -euo pipefail
graph=${1:-coauthor_cs}
threads=${THREADS:-2}
count=${COUNT:-3}
benchtime=${BENCHTIME:-1s}
python=${PYTHON:-/usr/bin/python3}
cd "$(dirname "$0")/../.."
"$python" -c 'import torch' 2>/dev/null || {
	echo "spmm_bench.sh: $python cannot import torch (Debian: apt-get install -y python3-torch)" >&2
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go run ./bench/torch/export --graph "$graph" -o "$tmp/graph.bin"
QGTC_BENCH_GRAPH=$graph go test ./templates -run '^$' -bench '^BenchmarkTemplates$' \
	-cpu "$threads" -count "$count" -benchtime "$benchtime" | tee "$tmp/go.txt" >&2
"$python" bench/torch/spmm_bench.py --graph "$tmp/graph.bin" --threads "$threads" | tee "$tmp/torch.txt" >&2
echo "# graph=$graph threads=$threads (Go GOMAXPROCS, torch.set_num_threads); $(go version | cut -d' ' -f3); $(grep -m1 '^# torch' "$tmp/torch.txt" | cut -c3-)"
"$python" bench/torch/spmm_table.py "$tmp/go.txt" "$tmp/torch.txt"
