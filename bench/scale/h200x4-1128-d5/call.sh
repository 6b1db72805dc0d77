#!/usr/bin/env bash
# call d5 (4 GPUs): the tcu tests of this tree (rowsums a row per lane group) on GPU 3 during the
# generation; #21 the 100M graph kept on 1, 2 and 4 GPUs, 8 passes, the predictions' arrays made in
# the first pass; #16 synth2m GCN/GIN/SAGE 4 bits on GPU 0: 9991da8 ("old", resident) then this tree
# (resident and cold, GIN's kernels) and PyG
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-520}
call_setup d5
B=build/d5 M=build/d5/model-a4w4.safetensors
for f in qgtc qgtc-old export tcu.test; do unxz $B/$f.xz $B/$f; done
(cd tcu && CUDA_VISIBLE_DEVICES=3 QGTC_CACHE_DIR=$W/kt timeout 150 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing' > $L/tcu-test.log 2>&1
  echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $L/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $L/tcu-test.log) failed" >> $OUT/steps.txt) &
TT=$!
big=$W/big.qgpb
gen100 $B/qgtc $big
b=(infer --packed $big --weights $M --other-data --agg sparse --json --quiet --passes 8 --resident)
run res1-1 60 $B/qgtc "${b[@]}" --device gpu
run res2-1 45 $B/qgtc "${b[@]}" --device gpu:0,1
run res4-1 45 $B/qgtc "${b[@]}" --device gpu:all
run res1-2 60 $B/qgtc "${b[@]}" --device gpu
run res4-2 45 $B/qgtc "${b[@]}" --device gpu:all
rm -f $big
passes_table res1-1 res2-1 res4-1 res1-2 res4-2
resident_table res1-1 res2-1 res4-1 res1-2 res4-2
wait $TT
left=$((LIMIT - $(el) - 10))
echo "e2e old: $left s left at $(el)s" | tee -a $OUT/steps.txt
OUT=$R/e2e-old STEPS=speed B=$B QGTC=$B/qgtc-old DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 PYG=0 \
  VARIANTS='^gpu resident$' CUDA_VISIBLE_DEVICES=0 timeout $((left / 3)) bash bench/e2e/run.sh > $R/e2e-old.txt 2>&1
echo "e2e old rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "synth2m .* 4:" $R/e2e-old.txt
left=$((LIMIT - $(el) - 10))
OUT=$R/e2e STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 KERNELS=1 PYG_REPS=5 \
  VARIANTS='^gpu (resident|cold)$' CUDA_VISIBLE_DEVICES=0 timeout $left bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -A12 "^## 4 bits" $R/e2e.txt; grep "kernels:\|rowsums" $R/e2e.txt
cp $R/e2e/table.md $OUT/table-e2e.md 2>/dev/null; cp $R/e2e-old/table.md $OUT/table-e2e-old.md 2>/dev/null
cp $R/e2e/runs.jsonl $OUT/runs-e2e.jsonl 2>/dev/null; cp $R/e2e/pyg-synth2m.json $OUT/ 2>/dev/null
cp $R/e2e/kernels-synth2m-*.json $OUT/ 2>/dev/null
cat $OUT/steps.txt | grep tcu
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
