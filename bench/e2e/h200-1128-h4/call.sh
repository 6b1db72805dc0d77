#!/usr/bin/env bash
# call h4 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test built here; qgtc-old = 1aff889,
# the tree before this session's aggregation changes; carried xz-compressed in build/h4x; models in
# build/g1dx as in g1, synth2m's in build/c10data). QGTC_AGG_V (an experiment-only knob of this
# tree) sets agg.cu's columns a lane: 16 (the default), 8 or 4.
#  1. tcu GPU tests of the aggregations (at 16, 8 and 4 columns a lane), the backend chain and the
#     replayed plans; compute-sanitizer memcheck and racecheck on TestBackendAgg.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old, 16, 8, 4 in turn,
#     twice; then 16 with the 16 cores, op-by-op kernels and PyG on the same partitions.
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, 16, 8.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small, synth
B=build/fpgpu
call_head
carried build/h4x
tcu_run 60 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice' $A/tcu-test.log
for v in 8 4; do tcu_run 40 '^TestBackendAgg$' $A/tcu-test-v$v.log QGTC_AGG_V=$v; done
sanitize 60 '^TestBackendAgg$'
for round in a b; do
  small old$round 330 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
  for v in 16 8 4; do small v$v$round 330 QGTC_AGG_V=$v PYG=0 VARIANTS='^gpu (resident|cold)$'; done
done
small final 330 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
synth synold 520 VARIANTS='^gpu resident$' QGTC=$B/qgtc-old
synth syn16 520 VARIANTS='^gpu resident$' QGTC_AGG_V=16
synth syn8 520 VARIANTS='^gpu resident$' QGTC_AGG_V=8
cp $OUT/steps.txt $A/
tar czf $OUT/h4.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
