#!/usr/bin/env bash
# call h3 (1 x H200, 16 cores), tree of this commit (qgtc, tcu.test, export built here; qgtc-old =
# 1aff889, the tree before this session's aggregation changes; carried xz-compressed in build/h3x;
# models in build/g1dx as in g1, synth2m's in build/c10data):
#  1. tcu GPU tests of the aggregations, the backend chain and the plans; compute-sanitizer memcheck
#     and racecheck on TestBackendAgg; the registers and local memory of agg.cu's kernels.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: old and new in turn, twice;
#     new's second run with the 16 cores, op-by-op kernels and PyG on the same partitions.
#  3. synth2m (40 parts), GCN/GIN/SAGE at 4 bits, resident: old, then new with its kernels.
#  4. Nsight Compute on Physics GCN's aggregations (one op-by-op pass).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run, sanitize, small, synth
B=build/fpgpu
call_head
carried build/h3x
tcu_run 80 'TestBackendAgg|TestBackendChain|TestAggKernelsListed|TestPlanReplayOnDevice|TestPlanOnDevice' $A/tcu-test.log
sanitize 90 '^TestBackendAgg$'
for f in $(grep -l agg8 /tmp/kt/* 2>/dev/null); do cuobjdump -res-usage $f 2>&1 | grep -A1 -E 'agg(8|32)'; done > $A/res-usage.txt
grep -E 'REG|STACK|LOCAL' $A/res-usage.txt | head -4 | tee -a $OUT/steps.txt
small olda 400 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
small newa 400 PYG=0 VARIANTS='^gpu (resident|cold)$'
small oldb 400 QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu (resident|cold)$'
small newb 400 PYG_REPS=5 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$'
synth synold 540 QGTC=$B/qgtc-old VARIANTS='^gpu resident$'
synth synnew 540 VARIANTS='^gpu resident$' KERNELS=1
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels
timeout $((585 - $(el))) ncu --kernel-name agg8 --launch-count 3 \
  --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  $B/qgtc infer --dataset coauthor_physics --model gcn --bits 4 --epochs 10 --qat-epochs 2 --partition build/g1data/coauthor_physics.part \
  --passes 1 --device gpu --resident --replay=false --json --quiet > $A/ncu-coauthor_physics-gcn.txt 2>&1
echo "ncu rc=$? at $(el)s" | tee -a $OUT/steps.txt
cp $OUT/steps.txt $A/
tar czf $OUT/h3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
