#!/usr/bin/env bash
# call j3 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test and export built here; qgtc-old =
# 651aacc; carried xz-compressed in build/j3x; partitions and models in build/g1dx as in j1).
# Experiment-only knobs of this tree: QGTC_AGG_HEAVY (the rows past which a row takes a block of
# warps) and QGTC_AGG_MINB (agg8's minimum blocks an SM, which caps its registers).
#  1. tcu GPU tests of the aggregations (light rows now a group of lanes each), the folds, the
#     chain, the suite and the replayed plans; compute-sanitizer memcheck and racecheck on
#     TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, then new with the
#     heavy rows past 64, 128 and 256 entries, and 128 with 4 blocks an SM, in turn twice.
#  3. New (heavy past 128) with the 16 cores' CPU pass, op-by-op kernels and PyG on the same
#     partitions.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/j3x
tcu_run 90 'TestBackendAgg|TestBackendFolds|TestBackendArgmax|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
for round in a b; do
  small old$round 300 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  for h in 64 128 256; do small h$h$round 300 QGTC_AGG_HEAVY=$h PYG=0 VARIANTS='^gpu (resident|cold)$'; done
  small m4$round 300 QGTC_AGG_HEAVY=128 QGTC_AGG_MINB=4 PYG=0 VARIANTS='^gpu (resident|cold)$'
done
small final 420 QGTC_AGG_HEAVY=128 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
cp $OUT/steps.txt $A/
tar czf $OUT/j3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
