#!/usr/bin/env bash
# call f2 (1 x H200): #16, the mma.sync products of one-product launches in one wave of blocks
# whose pipeline runs on across tiles, with the epilogue's vectors loaded once a tile (0d4e00d,
# 764daf8). The GPU tests of the products, backend, plans and uploads; racecheck and memcheck on
# the backend's products; synth2m resident passes of the tree before (qgtc-old, b761e33) and
# after, GCN/GIN/SAGE at 4 bits; after: cold passes and the per-kernel times; PyG on the same
# partition.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, e2e
B=build/f2 E2E_END=585
call_head
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 230 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackend|TestPlan|TestConformance|TestLargeVsGeneric|TestZeroTileJumping|TestBatch|TestOut16|TestStagedUploads|TestUploadRing|TestAggKernelsListed|TestKernelProfile|TestGraphPlanOnDevice' \
  > $OUT/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/tcu-test.log | head
for tool in racecheck memcheck; do
  (cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 60 compute-sanitizer --tool $tool --error-exitcode 3 ../$B/tcu.test -test.run '^TestBackendProducts$' -test.short > $OUT/$tool.log 2>&1
   echo "$tool rc=$? at $(el)s: $(grep -E 'ERROR SUMMARY|hazard' $OUT/$tool.log | tail -1)" | tee -a $OUT/steps.txt)
done
e2e old QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu resident$'
e2e new QGTC=$B/qgtc PYG_REPS=5 VARIANTS='^gpu (resident|cold)$' KERNELS=1 SYNTH_PART=/tmp/synth2m.part
cp $R/new/pyg-synth2m.json $R/new/table.md $R/new/kernels-*.json $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
