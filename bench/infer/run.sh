#!/usr/bin/env bash
# Issue 5's speed comparison: one full inference pass of a 2-layer GCN
# (hidden 64) on the same batches and weights, quantized on bit tensors at
# 1/2/4/8 bits (aggregations as `qgtc infer --agg auto` picks them, and at
# 4 bits also all on the packed 1-bit adjacency), our fp32 path and PyTorch
# fp32 (when /usr/bin/python3 has torch), on Coauthor Physics and a 1M-node
# planted-partition graph, and the 4-bit and fp32 passes taken in turn
# (impl=paired: medians and their ratio). Writes results/qgcn_speed.txt.
#   bench/infer/run.sh [benchtime]
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bench/infer/results
out=bench/infer/results/qgcn_speed.txt
{
  echo "# $(date -u +%FT%TZ) $(go version) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "# go test -run '^\$' -bench QGCNSpeed -benchtime ${1:-5x} ./layers"
  go test -run '^$' -bench QGCNSpeed -benchtime "${1:-5x}" -timeout 60m ./layers
} | tee "$out"
