#!/usr/bin/env bash
# call h3 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test, export built here; qgtc-old =
# 1aff889, the tree before this session's aggregation changes; carried xz-compressed in build/h3x;
# models in build/g1dx as in g1, synth2m's in build/c10data):
#  1. tcu GPU tests of the aggregations, the backend chain and the plans; compute-sanitizer memcheck
#     and racecheck on TestBackendAgg; the registers and local memory of agg.cu's kernels.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old and new in turn, twice;
#     new's second run with the 16 cores, op-by-op kernels and PyG on the same partitions.
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, then new with its kernels.
#  4. Nsight Compute on Physics GCN's aggregations (one op-by-op pass).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/h3x
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 80 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $A/tcu-test.log | head | tee -a $OUT/steps.txt
for tool in memcheck racecheck; do
  (cd tcu && QGTC_CACHE_DIR=/tmp/kt2-$tool timeout 90 compute-sanitizer --tool $tool --error-exitcode 3 ../$B/tcu.test -test.run '^TestBackendAgg$' -test.short > $A/san-$tool.log 2>&1
   echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $A/san-$tool.log | tail -1) at $(el)s" | tee -a $OUT/steps.txt) &
done
wait
for f in $(grep -l agg8 /tmp/kt/* 2>/dev/null); do cuobjdump -res-usage $f 2>&1 | grep -A1 -E 'agg(8|32)'; done > $A/res-usage.txt
grep -E 'REG|STACK|LOCAL' $A/res-usage.txt | head -4 | tee -a $OUT/steps.txt
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
    timeout $((540 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/kernels-*.json $A/ 2>/dev/null; }
syn synold QGTC=$B/qgtc-old VARIANTS='^gpu resident$'
syn synnew VARIANTS='^gpu resident$' KERNELS=1
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
timeout $((585 - $(el))) ncu --kernel-name agg8 --launch-count 3 \
  --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  $B/qgtc infer --dataset coauthor_physics --model gcn --bits 4 --epochs 10 --qat-epochs 2 --partition build/g1data/coauthor_physics.part \
  --passes 1 --device gpu --resident --replay=false --json --quiet > $A/ncu-coauthor_physics-gcn.txt 2>&1
echo "ncu rc=$? at $(el)s" | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/h3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
