#!/usr/bin/env bash
# call h4 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test built here; qgtc-old = 1aff889,
# the tree before this session's aggregation changes; carried xz-compressed in build/h4x; models in
# build/g1dx as in g1, synth2m's in build/c10data). QGTC_AGG_V (an experiment-only knob of this
# tree) sets agg.cu's columns a lane: 16 (the default), 8 or 4.
#  1. tcu GPU tests of the aggregations (at 16, 8 and 4 columns a lane), the backend chain and the
#     replayed plans; compute-sanitizer memcheck and racecheck on TestBackendAgg.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, 16, 8, 4 in turn,
#     twice; then 16 with the 16 cores, op-by-op kernels and PyG on the same partitions.
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, 16, 8.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/h4x
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 60 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
for v in 8 4; do
  (cd tcu && QGTC_AGG_V=$v QGTC_CACHE_DIR=/tmp/kt timeout 40 ../$B/tcu.test -test.v -test.short -test.run '^TestBackendAgg$' > $A/tcu-test-v$v.log 2>&1
   echo "tcu.test QGTC_AGG_V=$v rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test-v$v.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test-v$v.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
done
for tool in memcheck racecheck; do
  (cd tcu && QGTC_CACHE_DIR=/tmp/kt2-$tool timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 ../$B/tcu.test -test.run '^TestBackendAgg$' -test.short > $A/san-$tool.log 2>&1
   echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $A/san-$tool.log | tail -1) at $(el)s" | tee -a $OUT/steps.txt) &
done
wait
e2e2() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin sage' "$@" \
    timeout $((330 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/pyg-*.json $R/$name/kernels-*.json $A/ 2>/dev/null; cp $R/$name/table.md $A/table-$name.md 2>/dev/null; }
for round in a b; do
  e2e2 old$round QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  for v in 16 8 4; do e2e2 v$v$round QGTC_AGG_V=$v PYG=0 VARIANTS='^gpu (resident|cold)$'; done
done
e2e2 final PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
syn() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 PYG=0 VARIANTS='^gpu resident$' "$@" \
    timeout $((520 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; }
syn synold QGTC=$B/qgtc-old
syn syn16 QGTC_AGG_V=16
syn syn8 QGTC_AGG_V=8
cp $OUT/steps.txt $A/
tar czf $OUT/h4.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
