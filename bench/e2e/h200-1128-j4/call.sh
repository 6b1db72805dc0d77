#!/usr/bin/env bash
# call j4 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test and export built here; qgtc-old =
# 651aacc; carried xz-compressed in build/j4x; partitions and models in build/g1dx as in j1):
#  1. tcu GPU tests: the aggregations, the folds, the chain, the conformance suite, the plans
#     (plain and replayed) and the uploads; compute-sanitizer memcheck and racecheck on
#     TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, new, in turn twice.
#  3. New with the 16 cores' CPU pass, op-by-op kernels and PyG on the same partitions.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/j4x
tcu_run 150 'TestBackendAgg|TestBackendFolds|TestBackendArgmax|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice|TestStagedUploads|TestUploadRing' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
for round in a b; do
  small old$round 330 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  small new$round 330 PYG=0 VARIANTS='^gpu (resident|cold)$'
done
small final 460 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
cp $OUT/steps.txt $A/
tar czf $OUT/j4.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
