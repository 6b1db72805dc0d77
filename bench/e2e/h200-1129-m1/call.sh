#!/usr/bin/env bash
# call m1 (1 x H200, 16 cores), branch s11 (qgtc, tcu.test and export built here; qgtc-old =
# 4a58dab, main at the start of the session; carried xz-compressed in build/m1x; partitions and
# 4-bit models of build/g1dx, as in j1-k1):
#  1. tcu GPU tests: backend (the conformance suite's aggregations: the store-bound fix and the
#     entry-split light rows), plans, uploads, the graph plan; memcheck and racecheck on
#     TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident, op by op: old; new; new with the
#     experiment switches QGTC_AGG_SPLIT=0 (columns' groups for narrow outputs), QGTC_MMA_SHORT=0
#     (short products' stages as before) and QGTC_MMA_SHORT=2 (also half the warp tile).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, kept
B=build/fpgpu
call_head
carried build/m1x
tcu_run 220 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed|TestGraphPlanOnDevice|TestKernelProfileOnDevice|TestDeviceResources' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
kept old 330 QGTC=$B/qgtc-old PYG=0 KERNELS=1 VARIANTS='^gpu resident$'
kept new 360 PYG=0 KERNELS=1 VARIANTS='^gpu resident$'
kept split0 390 PYG=0 KERNELS=1 VARIANTS='^gpu resident$' QGTC_AGG_SPLIT=0
kept short0 420 PYG=0 KERNELS=1 VARIANTS='^gpu resident$' QGTC_MMA_SHORT=0
kept short2 450 PYG=0 KERNELS=1 VARIANTS='^gpu resident$' QGTC_MMA_SHORT=2
kept newb 480 PYG=0 KERNELS=1 VARIANTS='^gpu resident$'
cp $OUT/steps.txt $A/
tar czf $OUT/m1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
