#!/usr/bin/env bash
# call h1 (1 x H200, 16 cores), tree of this commit (qgtc and tcu.test built here; qgtc-old = 1aff889,
# the tree before agg8/agg32; both carried xz-compressed in build/h1x; models in build/g1dx as in g1):
#  1. tcu GPU tests of the aggregations, the backend suite and the replayed plans; compute-sanitizer
#     memcheck and racecheck on TestBackendAgg.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old and new in turn, twice
#     (new's second run with the 16 cores, op-by-op kernels and PyG on the same partitions).
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, then new with its kernels.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/h1x
echo "tools: $(which nsys ncu compute-sanitizer 2>/dev/null | tr '\n' ' ')" | tee -a $OUT/steps.txt
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 100 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackendAgg|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $A/tcu-test.log | head | tee -a $OUT/steps.txt
for tool in memcheck racecheck; do
  (cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 ../$B/tcu.test -test.run '^TestBackendAgg$' -test.short > $A/san-$tool.log 2>&1
   echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $A/san-$tool.log | tail -1) at $(el)s" | tee -a $OUT/steps.txt) &
done
wait
e2e2() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin sage' "$@" \
    timeout $((400 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/pyg-*.json $R/$name/kernels-*.json $A/ 2>/dev/null; cp $R/$name/table.md $A/table-$name.md 2>/dev/null; }
e2e2 olda QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 newa PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 oldb QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 newb PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
syn() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 PYG=0 "$@" \
    timeout $((570 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/kernels-*.json $A/ 2>/dev/null; }
syn synold QGTC=$B/qgtc-old VARIANTS='^gpu resident$'
syn synnew VARIANTS='^gpu resident$' KERNELS=1
cp $OUT/steps.txt $A/
tar czf $OUT/h1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
