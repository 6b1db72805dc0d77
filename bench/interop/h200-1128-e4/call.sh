#!/usr/bin/env bash
# call e4 (1 x H200 host, its CPU for qgtc, its GPU for PyG's training): bench/interop/run.sh on
# Cora and CiteSeer with this tree's defaults (issue 18, item 5), cut at the call's limit; the
# table from whatever finished.
set -uo pipefail
cd "$(dirname "$0")/../../.."
T0=$SECONDS
OUT=$OUT/interop DATASETS="cora citeseer" timeout 315 bash bench/interop/run.sh > $OUT/run.txt 2>&1
echo "run.sh rc=$? at $((SECONDS - T0))s" | tee -a $OUT/run.txt
python3 bench/interop/pyg_interop.py table $OUT/interop > $OUT/table.md 2>> $OUT/run.txt; cat $OUT/table.md
tail -5 $OUT/run.txt
find $OUT/interop -name '*.safetensors' -delete; find $OUT/interop -type d -name data -prune -exec rm -rf {} +
tar czf $OUT/interop.tgz -C $OUT interop && rm -rf $OUT/interop
