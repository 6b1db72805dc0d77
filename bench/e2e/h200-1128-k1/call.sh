#!/usr/bin/env bash
# call k1 (1 x H200, 16 cores), tree bd7234c (qgtc, tcu.test and export built here; qgtc-old =
# 42648d4, the tree before this session; carried xz-compressed in build/k1x; partitions and 4-bit
# models of build/g1dx, as in j1-j4):
#  1. tcu GPU tests: every backend, plan, upload and fp test (a Device now runs its work on the
#     caller's OS thread); compute-sanitizer memcheck and racecheck on TestBackendAgg and
#     TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, new, in turn twice.
#  3. New with the 16 cores' CPU pass, op-by-op kernels and PyG on the same partitions.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/k1x
tcu_run 200 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed|TestFPDense$|TestFPSpMMConformance|TestFPSDDMMConformance|TestGraphPlanOnDevice|TestKernelProfileOnDevice|TestDeviceResources|TestConformance' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
for round in a b; do
  small old$round 420 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  small new$round 420 PYG=0 VARIANTS='^gpu (resident|cold)$'
done
small final 560 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
cp $OUT/steps.txt $A/
tar czf $OUT/k1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
