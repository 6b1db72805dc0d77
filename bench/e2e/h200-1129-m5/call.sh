#!/usr/bin/env bash
# call m5 (1 x H200, 16 cores), main after the merges of s11 and proteins (qgtc, tcu.test built
# here; qgtc-old = c8fa4b4, the tree call m4 measured; carried xz-compressed in build/m5x; g1's
# partitions and 4-bit models):
#  1. In the background: PROTEINS fold 1 with its quantized inference on the GPU (training on one
#     core, as on the CPU), whose accuracies must equal fold 1 of results-18f/proteins-bias.
#  2. tcu GPU tests: the aggregations, the folds, the conformance suite, the plans and the graph
#     plan (the readout's bias).
#  3. GCN on Physics and Computers, resident: c8fa4b4 and this tree in turn twice (groupRow).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, kept
B=build/fpgpu
call_head
carried build/m5x
(Q=$B/qgtc OUT=$A/proteins-gpu FOLDS=1 DEVICE=gpu BITS=2,4 timeout 200 bash bench/accuracy/proteins.sh > $A/proteins-gpu.txt 2>&1
 echo "proteins fold 1 on the GPU rc=$? at $(el)s" >> $OUT/steps.txt) &
tcu_run 110 'TestBackendAgg|TestBackendFolds|TestBackendSuite|TestGraphPlanOnDevice|TestPlanOnDevice|TestPlanReplayOnDevice|TestAggKernelsListed' $A/tcu-test.log
kept olda 150 QGTC=$B/qgtc-old PYG=0 MODELS=gcn VARIANTS='^gpu resident$'
kept newa 165 PYG=0 MODELS=gcn VARIANTS='^gpu resident$'
kept oldb 180 QGTC=$B/qgtc-old PYG=0 MODELS=gcn VARIANTS='^gpu resident$'
kept newb 195 PYG=0 MODELS=gcn VARIANTS='^gpu resident$'
wait
cat $A/proteins-gpu/summary.txt 2>/dev/null | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/m5.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
