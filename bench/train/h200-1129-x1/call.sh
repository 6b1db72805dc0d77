#!/usr/bin/env bash
# call x1 (1 x H200): the whole job behind the SpMM's launch bounds (cfe4dd0). Full-batch
# training epochs of GCN, SAGE and GIN on the GPU, on Coauthor Physics and the 2M-node planted
# graph, with qgtc built at b363b9c (before) and at 5d1d543 (after), PyG beside each run, in
# rounds before, after, after, before while time is left. Carries build/s17fp: qgtc-before,
# qgtc-after (CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' ./cmd/qgtc in each tree) and
# export (./bench/e2e/export). Tables in $OUT/table-<round>-<version>.md, logs in x1.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
call_head
mkdir -p build/fpgpu
cp build/s17fp/export build/fpgpu/export
n=0
for V in before after after before; do
  n=$((n + 1))
  ((n > 1 && $(el) > 300)) && { echo "round $n ($V) skipped at $(el)s" | tee -a $OUT/steps.txt; continue; }
  cp build/s17fp/qgtc-$V build/fpgpu/qgtc
  DEVICES=gpu MODELS='gcn sage gin' STEPS=bench EPOCHS=50 OUT=$R/r$n-$V timeout $((585 - $(el))) bash bench/train/run.sh > $R/r$n-$V.log 2>&1
  echo "round $n $V rc=$? at $(el)s" | tee -a $OUT/steps.txt
  cp $R/r$n-$V/table.md $OUT/table-r$n-$V.md 2>/dev/null && cat $OUT/table-r$n-$V.md
done
tar czf $OUT/x1.tgz -C $R . && rm -rf $R
echo "done $(el)s"
