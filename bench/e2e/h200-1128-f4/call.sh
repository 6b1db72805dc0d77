#!/usr/bin/env bash
# call f4 (1 x H200): the GPU tests f2 and f3 did not reach in their time, on this tree: the dense
# fp32 kernels (scale_add now without FMA), the plans on the device (one-wave products, packBits),
# zero-tile jumping, and the conformance suite's MulBit cases on the chosen path and on mma.sync.
set -uo pipefail
cd "$(dirname "$0")/../../.."
B=build/f4
cd tcu
QGTC_CACHE_DIR=/tmp/kt timeout 200 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestFPDense|TestPlanOnDevice|TestPlanReplayOnDevice|TestZeroTileJumping|TestConformance/(auto|mma)/mulbit' > $OUT/tcu-test.log 2>&1
echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.log) failed" | tee $OUT/steps.txt
grep -E '^--- (PASS|FAIL)|^\s*--- FAIL' $OUT/tcu-test.log | head -20 | tee -a $OUT/steps.txt
gzip $OUT/tcu-test.log
