#!/usr/bin/env bash
# The accuracy table of issues 5 and 18: GCN and GIN on Cora, CiteSeer,
# Amazon Computers/Photo and Coauthor CS/Physics, fp32 against 8, 4, 2 and 1
# bits (activations = weights), each from `qgtc sweep` (fp32 training, then
# calibration and QAT per width, test accuracy of the bit-kernel inference).
#
#   bench/accuracy/run.sh                         # every cell, seeds per dataset below
#   CELLS="cora:gin:3 citeseer:gcn:2" bench/accuracy/run.sh
#
# Each cell is dataset:model:seeds[:flags], flags comma-separated (e.g.
# amazon_photo:gin:2:--lr=0.005); settings not given come from the dataset's
# and model's recipe (pipeline.RecipeFor). BITS is the widths (default
# 8,4,2,1), TARGETS the table's targets (table.py; default issue18). Writes results/<dataset>-<model>/
# (sweep.csv, sweep.json, sweep.svg, sweep.png, the command in cmd.txt) and
# then results/table.md and results/table.csv (table.py). Models are
# trained from scratch: the model cache is a fresh folder per run.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/accuracy/results}
CELLS=${CELLS:-"cora:gcn:3 cora:gin:3 citeseer:gcn:3 citeseer:gin:3 amazon_photo:gcn:2 amazon_photo:gin:2
amazon_computers:gcn:3 amazon_computers:gin:3 coauthor_cs:gcn:2 coauthor_cs:gin:2 coauthor_physics:gcn:2 coauthor_physics:gin:2"}
BITS=${BITS:-8,4,2,1}
export TARGETS=${TARGETS:-issue18}
EXTRA=${EXTRA:-}
export QGTC_DATA=${QGTC_DATA:-$PWD/testdata}
export QGTC_CACHE=${QGTC_CACHE:-$(mktemp -d /tmp/qgtc-accuracy.XXXXXX)}
mkdir -p "$OUT"
if [ -z "${Q:-}" ]; then # Q: a qgtc binary to use instead of building one
  Q=$QGTC_CACHE/qgtc
  go build -o "$Q" ./cmd/qgtc
fi
for cell in $CELLS; do
  IFS=: read -r ds model seeds flags <<<"$cell"
  flags="${flags//,/ } $EXTRA"
  dir=$OUT/$ds-$model
  mkdir -p "$dir"
  cmd="qgtc sweep --dataset $ds --model $model --bits $BITS --seeds $seeds --out $dir $flags"
  echo "$cmd" | tee "$dir/cmd.txt" >&2
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$Q" sweep --dataset "$ds" --model "$model" --bits "$BITS" --seeds "$seeds" --out "$dir" --quiet $flags | tee "$dir/table.txt"
  echo "wall $(( $(date +%s) - start )) s" >>"$dir/table.txt"
done
python3 bench/accuracy/table.py "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"
