#!/usr/bin/env bash
# call p7 (1 x H200), after the review: tcu's fp GPU tests (TestFP*, TestFPOrderedSpMM among them:
# UploadCSROrder) and gpufp's; fpbench's row-order and ordered sums on Cora and Photo (checked
# against the CPU templates at f = 16 and bit for bit against the row-order kernel at every f);
# pyg_gin.py and pyg_grid.py (now trained through pyg_gin's run) on Photo, one seed.
# Carries build/q1 (tcu.test, gpufp.test, export, fpbench).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/q1
call_head
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 150 ../$B/tcu.test -test.run '^TestFP|^TestCheckOrder' -test.v -test.count=1 -test.timeout 140s > $R/test-tcu.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $R/test-tcu.log) passed, $(grep -cE '^\s*--- FAIL' $R/test-tcu.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
(cd gpufp && QGTC_CACHE_DIR=/tmp/kt timeout 60 ../$B/gpufp.test -test.v -test.count=1 -test.timeout 50s > $R/test-gpufp.log 2>&1
 echo "gpufp.test rc=$? $(grep -cE '^\s*--- PASS' $R/test-gpufp.log) passed, $(grep -cE '^\s*--- FAIL' $R/test-gpufp.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -hE '^\s*--- FAIL' $R/test-*.log | head | tee -a $OUT/steps.txt
QGTC_CACHE_DIR=/tmp/kt timeout 60 $B/fpbench --graphs cora,amazon_photo --ops copy_u_sum,u_mul_e_sum,copy_u_sum_hp,u_mul_e_sum_hp \
  --budget 0.1 --out /tmp/fpdata > $R/qgtc.tsv 2> $R/fpbench.log
echo "fpbench rc=$? at $(el)s; $(grep -c '0 of .* differ in bits' $R/fpbench.log) comparisons equal in bits, $(grep -c CHECK $R/fpbench.log) failed" | tee -a $OUT/steps.txt
$B/export --dataset amazon_photo --split-seeds 1 --out /tmp/pyg/amazon_photo > /dev/null 2>> $R/export.err
timeout 60 python3 -u bench/accuracy/pyg_gin.py --scale raw --seeds 1 --out $R/gin /tmp/pyg/amazon_photo > $R/gin.txt 2>&1
echo "pyg_gin rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -4 $R/gin.txt | tee -a $OUT/steps.txt
timeout 90 python3 -u bench/accuracy/pyg_grid.py --seeds 1 --out $R/grid /tmp/pyg/amazon_photo > $R/grid.txt 2>&1
echo "pyg_grid rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -3 $R/grid.txt | tee -a $OUT/steps.txt
tar czf $OUT/p7.tgz -C $R . && rm -rf $R
echo "done $(el)s"
