#!/usr/bin/env bash
# call q1 (1 x H200): the gpufp GPU tests and tcu's fp GPU tests on this tree (fp_spmm's new
# visiting-order parameter under training); then #18: PyG's GCN and GIN (pyg_gin.py: GINConv with
# a Linear-BatchNorm-ReLU-Linear MLP, eps 0 or learnt, qgtc's recipe) on qgtc's 20/30-per-class
# splits, seeds 0-4, of Amazon Photo and Computers and Coauthor Physics (raw bag of words) and
# Coauthor CS (rows summing to one): does a standard GIN come within 3 points of GCN there?
# Carries build/q1 (tcu.test, gpufp.test, export).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/q1
call_head
(cd gpufp && QGTC_CACHE_DIR=/tmp/kt timeout 100 ../$B/gpufp.test -test.v -test.count=1 -test.timeout 90s > $R/test-gpufp.log 2>&1
 echo "gpufp.test rc=$? $(grep -cE '^\s*--- PASS' $R/test-gpufp.log) passed, $(grep -cE '^\s*--- FAIL' $R/test-gpufp.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 150 ../$B/tcu.test -test.run '^TestFP' -test.v -test.count=1 -test.timeout 140s > $R/test-tcu.log 2>&1
 echo "tcu.test -run TestFP rc=$? $(grep -cE '^\s*--- PASS' $R/test-tcu.log) passed, $(grep -cE '^\s*--- FAIL' $R/test-tcu.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -hE '^\s*--- FAIL' $R/test-*.log | head | tee -a $OUT/steps.txt
for ds in amazon_photo amazon_computers coauthor_physics coauthor_cs; do
  $B/export --dataset $ds --split-seeds 5 --out /tmp/pyg/$ds > /dev/null 2>> $R/export.err || echo "export $ds failed" | tee -a $OUT/steps.txt
done
echo "exported at $(el)s" | tee -a $OUT/steps.txt
timeout $((570 - $(el))) python3 -u bench/accuracy/pyg_gin.py --scale raw --out $OUT /tmp/pyg/amazon_photo /tmp/pyg/amazon_computers \
  /tmp/pyg/coauthor_physics > $R/pyg-raw.txt 2>&1
echo "pyg_gin raw rc=$? at $(el)s" | tee -a $OUT/steps.txt
timeout $((585 - $(el))) python3 -u bench/accuracy/pyg_gin.py --scale rows --out $OUT /tmp/pyg/coauthor_cs > $R/pyg-rows.txt 2>&1
echo "pyg_gin rows rc=$? at $(el)s" | tee -a $OUT/steps.txt
cat $OUT/summary.txt 2>/dev/null | tee -a $OUT/steps.txt
tar czf $OUT/q1.tgz -C $R . && rm -rf $R
echo "done $(el)s"
