#!/usr/bin/env bash
# call n1 (1 x H200, 16 cores), main at the start of the twelfth session (qgtc, tcu.test and export
# built here, carried xz-compressed in build/n1x; build/g1dx: g1's partitions and fp32 and 4-bit
# models of Physics and Computers; the other widths are trained in the call by run.sh's TRAIN from
# those fp32 models: the carry's 64 MiB has no room for them):
#  1. tcu GPU tests (backend, plans at 1/2/4/8 bits, uploads, the graph plan); memcheck and
#     racecheck on the aggregations and folds.
#  2. Physics and Computers, GCN/GIN/SAGE at every width 1-8, resident and cold; at 4 bits the
#     16 cores' CPU pass and PyG on the same partitions; then the CPU pass twice more.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/n1x
tcu_run 200 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed|TestGraphPlanOnDevice|TestKernelProfileOnDevice|TestDeviceResources' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
small curve 510 DATA=build/g1data CURVE='1 2 3 4 5 6 7 8' CURVE_MODELS='gcn gin sage' PYG_REPS=5 VARIANTS='^(gpu resident|gpu cold|cpu)$'
small cpu2 530 DATA=build/g1data PYG=0 VARIANTS='^cpu$'
small cpu3 550 DATA=build/g1data PYG=0 VARIANTS='^cpu$'
cp $OUT/steps.txt $A/
tar czf $OUT/n1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
