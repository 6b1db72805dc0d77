#!/usr/bin/env bash
# call w1 (1 x H200), an experiment's build (QGTC_EXP_MINB: the SpMM's __launch_bounds__ minimum
# blocks per SM; minb.patch beside this file): copy_u_sum and u_mul_e_sum in row order on the five
# mid-size graphs with MINB unset (0), 8, 6 and 4, each call's blocks per SM in the fpbench logs;
# cuSPARSE once. Why u_mul_e_sum runs 15-33% behind copy_u_sum at f = 64-128 where neither is
# bound by bytes. Logs in w1.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
G=pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics
for M in 0 8 6 4; do
  left=$((200 - $(el))); ((left < 20)) && { echo "MINB=$M skipped" | tee -a $OUT/steps.txt; continue; }
  QGTC_EXP_MINB=$M timeout $left $B/fpbench --graphs $G --ops copy_u_sum,u_mul_e_sum --budget 0.3 --out /tmp/fp$M \
    > $R/qgtc-$M.tsv 2> $R/fpbench-$M.log
  echo "MINB=$M rc=$? at $(el)s; $(grep -c CHECK $R/fpbench-$M.log) checks failed" | tee -a $OUT/steps.txt
  if [ $M = 0 ]; then
    timeout $((150 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fp0 --budget 0.3 \
      --ops copy_u_sum,u_mul_e_sum > $R/torch.tsv 2> $R/baselines.log
    echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
  fi
  grep -oE 'coauthor_cs spmm (copy_u|u_mul_e) sum f=(64|128) .*blocks/SM=[0-9]+: [0-9.]+ us' $R/fpbench-$M.log | sed 's/fe=1.*ordered=false//' | tee -a $OUT/steps.txt
done
for M in 0 8 6 4; do python3 bench/templates/table.py $R/qgtc-$M.tsv $R/torch.tsv > $OUT/table-$M.md; grep -A4 '^### Targets' $OUT/table-$M.md | tail -2 | sed "s/^/MINB=$M /" | tee -a $OUT/steps.txt; done
tar czf $OUT/w1.tgz -C $R . && rm -rf $R
echo "done $(el)s"
