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
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, small
B=build/fpgpu
call_head
carried build/h2x
tcu_run 80 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' $A/tcu-test.log
for round in a b; do
  small old$round 420 PYG=0 VARIANTS='^gpu (resident|cold)$' QGTC=$B/qgtc-old
  small new$round 420 PYG=0 VARIANTS='^gpu (resident|cold)$'
  small dense$round 420 PYG=0 VARIANTS='^gpu (resident|cold)$' INFER_ARGS='--sparse-input off'
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
