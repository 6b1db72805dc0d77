#!/usr/bin/env bash
# call h2 (1 x H200, 16 cores), tree of this commit (qgtc and tcu.test built here; qgtc-old = 1aff889;
# both carried xz-compressed in build/h2x; models in build/g1dx as in g1):
#  1. tcu GPU tests of the aggregations and the replayed plans.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold, in turn twice: old, new, and
#     new with the first layer from the dense feature planes (--sparse-input off).
#  3. Nsight Compute on one op-by-op resident pass of Physics and Computers GCN: launch statistics,
#     occupancy, speed of light and warp states of every kernel.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/h2x
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 80 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $A/tcu-test.log | head | tee -a $OUT/steps.txt
e2e2() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin sage' PYG=0 VARIANTS='^gpu (resident|cold)$' "$@" \
    timeout $((420 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; }
for round in a b; do
  e2e2 old$round QGTC=$B/qgtc-old
  e2e2 new$round
  e2e2 dense$round INFER_ARGS='--sparse-input off'
done
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
for g in coauthor_physics:18 amazon_computers:7; do ds=${g%%:*}
  timeout $((560 - $(el))) ncu --launch-count 14 \
    --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    $B/qgtc infer --dataset $ds --model gcn --bits 4 --epochs 10 --qat-epochs 2 --partition build/g1data/$ds.part \
    --passes 2 --device gpu --resident --replay=false --json --quiet > $A/ncu-$ds-gcn.txt 2>&1
  echo "ncu $ds rc=$? at $(el)s" | tee -a $OUT/steps.txt
done
cp $OUT/steps.txt $A/
tar czf $OUT/h2.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
