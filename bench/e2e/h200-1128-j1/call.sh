#!/usr/bin/env bash
# call j1 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test and export built here; qgtc-old =
# 651aacc, the tree before this session's aggregation changes; carried xz-compressed in build/j1x;
# partitions and 4-bit models trained here by the same steps as g1's, in build/g1dx). QGTC_AGG_HEAVY
# (an experiment-only knob of this tree) sets the rows past which a row takes a block of warps.
#  1. tcu GPU tests of the aggregations, the folds, the chain, the suite and the replayed plans;
#     compute-sanitizer memcheck and racecheck on TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, then new with the
#     heavy rows past 64 (the default), 32, 128 and 256 entries, in turn twice; then new with the
#     16 cores' CPU pass, op-by-op kernels and PyG on the same partitions.
#  3. Nsight Compute on the aggregations of one op-by-op resident pass of Computers and Physics GCN.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/j1x
tcu_run 90 'TestBackendAgg|TestBackendFolds|TestBackendArgmax|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
for round in a b; do
  small old$round 330 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  for h in 64 32 128 256; do small h$h$round 330 QGTC_AGG_HEAVY=$h PYG=0 VARIANTS='^gpu (resident|cold)$'; done
done
small final 420 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
for g in amazon_computers coauthor_physics; do
  timeout $((560 - $(el))) ncu --kernel-name regex:'agg|rowsums|argmax|bmm' --launch-count 12 \
    --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section MemoryWorkloadAnalysis \
    $B/qgtc infer --dataset $g --model gcn --bits 4 --epochs 10 --qat-epochs 2 --partition build/g1data/$g.part \
    --passes 2 --device gpu --resident --replay=false --json --quiet > $A/ncu-$g-gcn.txt 2>&1
  echo "ncu $g rc=$? at $(el)s" | tee -a $OUT/steps.txt
done
cp $OUT/steps.txt $A/
tar czf $OUT/j1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
