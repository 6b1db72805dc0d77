#!/usr/bin/env bash
# call g1 (1 x H200, 16 cores), tree of this commit (build/fpgpu from `make fpgpu-test` and
# bench/interop/export, carried xz-compressed in build/g1x; models in build/g1data, carried as build/g1dx's tar.xz):
#  1. #20: the GPU tests of fp32 training, GAT's kernels and GAT training included
#     (bench/train/run.sh STEPS=test), then one GAT layer against PyG's GATConv (STEPS=gatlayer)
#     and training epochs of GAT, SAGE and GIN against PyG (STEPS=bench, qgtc on the GPU only).
#  2. #16: Coauthor Physics and Amazon Computers, GCN/GIN/SAGE at 4 bits (resident, cold, the
#     16 cores, per-kernel times), GCN at widths 1..8, PyG on the same partitions; then a CPU
#     profile of 400 cold passes (Computers GCN) to see where a cold pass's host time goes.
#  3. #18: PyG's GCN and GraphSAGE on qgtc's own splits (seeds 0-4) of Amazon Computers and
#     Photo, features as rows summing to one and raw (bench/accuracy/pyg_anchor.py).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/g1x

timeout 150 env OUT=$A/train-test STEPS=test bash bench/train/run.sh > $A/train-test.txt 2>&1
echo "train tests rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^test |--- FAIL|^FAIL|^ok" $A/train-test.txt | head -20 | tee -a $OUT/steps.txt
timeout 60 env OUT=$A/gatlayer STEPS=gatlayer bash bench/train/run.sh > $A/gatlayer.txt 2>&1
echo "gatlayer rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "Benchmark|^pyg|^qgtc" $A/gatlayer.txt | tee -a $OUT/steps.txt
timeout 170 env OUT=$A/train-bench STEPS=bench MODELS="gat sage gin" EPOCHS=20 DEVICES=gpu bash bench/train/run.sh > $A/train-bench.txt 2>&1
echo "train bench rc=$? at $(el)s" | tee -a $OUT/steps.txt; cat $A/train-bench/table.md >> $OUT/steps.txt 2>/dev/null

env OUT=$R/e2e STEPS=speed B=$B DATA=build/g1data CURVE='1 2 3 4 5 6 7 8' CURVE_MODELS=gcn MODELS='gcn gin sage' \
  VARIANTS='^(gpu resident|gpu cold|cpu)$' KERNELS=1 PYG_REPS=10 timeout $((480 - $(el))) bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/e2e.txt | cut -c1-400 | tee -a $OUT/steps.txt
cp $R/e2e/runs.jsonl $OUT/runs-e2e.jsonl 2>/dev/null; cp $R/e2e/table.md $A/table-e2e.md 2>/dev/null; cp $R/e2e/*.json $A/ 2>/dev/null

export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
QGTC_CPUPROFILE=$A/cold.pprof timeout 30 $B/qgtc infer --dataset amazon_computers --model gcn --bits 4 --epochs 10 --qat-epochs 2 \
  --partition build/g1data/amazon_computers.part --passes 400 --device gpu --json --quiet > $A/cold-prof.json 2> $A/cold-prof.err
echo "cold profile rc=$? at $(el)s" | tee -a $OUT/steps.txt

for ds in amazon_computers amazon_photo; do for s in 0 1 2 3 4; do
  ((  $(el) > 560 )) && break 2
  build/fpgpu/iexport --dataset $ds --seed $s --out /tmp/anchor/$ds-s$s > /dev/null 2>> $A/anchor.err &&
    timeout $((575 - $(el))) python3 bench/accuracy/pyg_anchor.py /tmp/anchor/$ds-s$s --seed $s >> $A/anchor.jsonl 2>> $A/anchor.err
done; done
echo "anchor at $(el)s: $(wc -l < $A/anchor.jsonl) lines" | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/g1.tgz -C $OUT a raw 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
