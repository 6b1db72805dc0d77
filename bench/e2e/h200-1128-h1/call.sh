#!/usr/bin/env bash
# call h1 (1 x H200, 16 cores), tree of this commit (qgtc and tcu.test built here; qgtc-old = 1aff889,
# the tree before agg8/agg32; both carried xz-compressed in build/h1x; models in build/g1dx as in g1):
#  1. tcu GPU tests of the aggregations, the backend suite and the replayed plans; compute-sanitizer
#     memcheck and racecheck on TestBackendAgg.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old and new in turn, twice
#     (new's second run with the 16 cores, op-by-op kernels and PyG on the same partitions).
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, then new with its kernels.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small, synth
B=build/fpgpu
call_head
carried build/h1x
echo "tools: $(which nsys ncu compute-sanitizer 2>/dev/null | tr '\n' ' ')" | tee -a $OUT/steps.txt
tcu_run 100 'TestBackendAgg|TestBackendChain|TestBackendSuite|TestAggKernelsListed|TestPlanReplayOnDevice' $A/tcu-test.log
sanitize 60 '^TestBackendAgg$'
small olda 400 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
small newa 400 PYG=0 VARIANTS='^gpu (resident|cold)$'
small oldb 400 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
small newb 400 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
synth synold 570 QGTC=$B/qgtc-old VARIANTS='^gpu resident$'
synth synnew 570 VARIANTS='^gpu resident$' KERNELS=1
cp $OUT/steps.txt $A/
tar czf $OUT/h1.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
