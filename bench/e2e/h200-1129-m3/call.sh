#!/usr/bin/env bash
# call m3 (1 x H200, 16 cores), branch s11 (qgtc, tcu.test and export built here; qgtc-old =
# 4a58dab, main at the start of the session; carried xz-compressed in build/m3x; partitions and
# 4-bit models of build/g1dx, as in j1-m1):
# m2 failed every new run (46 kernel parameters, at most 32); m3 is the same with maxParams 64.
#  1. tcu GPU tests: backend (the product folded into AggBit, the split kernels), plans, uploads,
#     the graph plan; memcheck and racecheck on TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, new, in turn twice
#     (new's first round op by op too).
#  3. New with the 16 cores' CPU pass and PyG on the same partitions; the CPU pass again.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, kept
B=build/fpgpu
call_head
carried build/m3x
tcu_run 220 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed|TestGraphPlanOnDevice|TestKernelProfileOnDevice|TestDeviceResources' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
kept olda 300 QGTC=$B/qgtc-old PYG=0 KERNELS=1 VARIANTS='^gpu (resident|cold)$'
kept newa 340 PYG=0 KERNELS=1 VARIANTS='^gpu (resident|cold)$'
kept oldb 370 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
kept newb 400 PYG=0 VARIANTS='^gpu (resident|cold)$'
kept final 520 PYG_REPS=5 VARIANTS='^(gpu resident|gpu cold|cpu)$'
kept cpu2 550 PYG=0 VARIANTS='^cpu$'
cp $OUT/steps.txt $A/
tar czf $OUT/m3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
