#!/usr/bin/env bash
# call g2 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test, export, iexport of
# `make fpgpu-test`, and qgtc-g1 = call g1's qgtc, carried xz-compressed in build/g2x; models in
# build/g1dx as in g1):
#  1. #20: one GAT layer against PyG's GATConv, with the layer's own peak memory (TrimPool).
#  2. #16: tcu GPU tests of plans, replays and the backend suite (the features' row sums kept;
#     the device thread's spinning hand-over).
#  3. #16: Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: g1's qgtc, then
#     this tree (with the 16 cores), then g1's again, then PyG on the same partitions.
#  4. #18: PyG's GCN and GraphSAGE on qgtc's splits of Coauthor CS and Physics (seeds 0-4).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/g2x

timeout 60 env OUT=$A/gatlayer STEPS=gatlayer bash bench/train/run.sh > $A/gatlayer.txt 2>&1
echo "gatlayer rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "Benchmark|^pyg" $A/gatlayer.txt | sort -u | tee -a $OUT/steps.txt

(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 130 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestPoll|TestPlanOnDevice|TestPlanReplayOnDevice|TestPlanReplayUncoveredOnDevice|TestBackendSuite|TestKernelProfileOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $A/tcu-test.log | head | tee -a $OUT/steps.txt

e2e2() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin sage' "$@" \
    timeout $((430 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $OUT/runs-$name.jsonl 2>/dev/null; cp $R/$name/*.json $R/$name/table.md $A/ 2>/dev/null; }
e2e2 old1 QGTC=$B/qgtc-g1 PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 new VARIANTS='^(gpu resident|gpu cold|cpu)$' PYG=0
e2e2 old2 QGTC=$B/qgtc-g1 PYG=1 PYG_REPS=10 VARIANTS='^gpu (resident|cold)$'

for ds in coauthor_cs coauthor_physics; do for s in 0 1 2 3 4; do
  ((  $(el) > 560 )) && break 2
  $B/iexport --dataset $ds --seed $s --out /tmp/anchor/$ds-s$s > /dev/null 2>> $A/anchor.err &&
    timeout $((575 - $(el))) python3 bench/accuracy/pyg_anchor.py /tmp/anchor/$ds-s$s --seed $s >> $A/anchor.jsonl 2>> $A/anchor.err
done; done
echo "anchor at $(el)s: $(wc -l < $A/anchor.jsonl) lines" | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/g2.tgz -C $OUT a raw 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
