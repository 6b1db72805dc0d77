#!/usr/bin/env bash
# call j2 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test and export built here; qgtc-old =
# 651aacc; carried xz-compressed in build/j2x; partitions and models in build/g1dx as in j1).
# QGTC_AGG_HEAVY (an experiment-only knob of this tree) sets the rows past which a row takes a
# block of warps.
#  1. tcu GPU tests of the aggregations, the folds, the chain, the suite and the replayed plans;
#     compute-sanitizer memcheck and racecheck on TestBackendAgg and TestBackendFolds.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, then new with the
#     heavy rows past 64, 128 and 256 entries, in turn twice.
#  3. Nsight Compute source counters (instructions executed and stall samples per SASS
#     instruction) and warp states of the aggregations of one op-by-op pass of Computers GCN.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small
B=build/fpgpu
call_head
carried build/j2x
tcu_run 90 'TestBackendAgg|TestBackendFolds|TestBackendArgmax|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' $A/tcu-test.log
sanitize 60 '^TestBackend(Agg|Folds)$'
for round in a b; do
  small old$round 330 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  for h in 64 128 256; do small h$h$round 330 QGTC_AGG_HEAVY=$h PYG=0 VARIANTS='^gpu (resident|cold)$'; done
done
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
g=amazon_computers
timeout $((500 - $(el))) ncu --kernel-name agg8 --launch-skip 2 --launch-count 2 \
  --section SourceCounters --section WarpStateStats --section InstructionStats -o $A/ncu-agg \
  $B/qgtc infer --dataset $g --model gcn --bits 4 --epochs 10 --qat-epochs 2 --partition build/g1data/$g.part \
  --passes 3 --device gpu --resident --replay=false --json --quiet > $A/ncu-run.txt 2>&1
echo "ncu rc=$? at $(el)s" | tee -a $OUT/steps.txt
ncu --import $A/ncu-agg.ncu-rep --page source --csv --print-source sass > $A/ncu-src.csv 2> $A/ncu-src.err
echo "ncu source rc=$? $(wc -l < $A/ncu-src.csv) lines at $(el)s" | tee -a $OUT/steps.txt
ncu --import $A/ncu-agg.ncu-rep --page details --print-details all > $A/ncu-details.txt 2>&1
echo "ncu details rc=$? at $(el)s" | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/j2.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
