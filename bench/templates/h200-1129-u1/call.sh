#!/usr/bin/env bash
# call u1 (1 x H200), an experiment's build (persist.patch in ../h200-1129-u3 is its final state):
# the persistent SpMM fed from per-SM queues (tcu.UploadCSRSM, _sm ops) against row order
# and part order (_hp). Tests first (TestFPPersistentSpMM and the ordered and conformance
# SpMM tests), then fpbench on the 8 graphs with one part per SM (A: --part-rows 0), cuSPARSE in
# both orders, the table; then the same with parts of about 256 nodes (B). Logs in u1.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
(cd tcu && timeout 150 ../$B/tcu.test -test.run '^(TestFP(PersistentSpMM|OrderedSpMM|SpMMConformance)|TestQueueStarts)$' -test.v \
  -test.count=1 -test.timeout 140s > $R/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $R/test.log) passed, $(grep -cE '^\s*--- FAIL' $R/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL|Error' $R/test.log | head | tee -a $OUT/steps.txt
OPS=copy_u_sum,u_mul_e_sum,copy_u_sum_hp,u_mul_e_sum_hp,copy_u_sum_sm,u_mul_e_sum_sm
for V in A:0:300 B:256:560; do
  IFS=: read N P END <<<"$V"
  left=$(( (END - $(el)) / 2 )); ((left < 30)) && { echo "$N skipped at $(el)s" | tee -a $OUT/steps.txt; continue; }
  timeout $left $B/fpbench --ops $OPS --part-rows $P --budget 0.3 --out /tmp/fp$N > $R/qgtc-$N.tsv 2> $R/fpbench-$N.log
  echo "$N: fpbench (part-rows $P) rc=$? at $(el)s; $(grep -c CHECK $R/fpbench-$N.log) checks failed" | tee -a $OUT/steps.txt
  grep -E 'CHECK|parts of|L2' $R/fpbench-$N.log | tee -a $OUT/steps.txt
  timeout $((END - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fp$N --budget 0.3 \
    --ops copy_u_sum,u_mul_e_sum > $R/torch-$N.tsv 2> $R/baselines-$N.log
  echo "$N: baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
  python3 bench/templates/table.py $R/qgtc-$N.tsv $R/torch-$N.tsv > $OUT/table-$N.md
  grep -A10 '^### Targets' $OUT/table-$N.md | tee -a $OUT/steps.txt
done
tar czf $OUT/u1.tgz -C $R . && rm -rf $R
echo "done $(el)s"
