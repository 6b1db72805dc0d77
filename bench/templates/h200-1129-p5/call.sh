#!/usr/bin/env bash
# call p5 (1 x H200), an experiment's build (exp_block.patch on the tree before it) (QGTC_EXP_BLOCK: the SpMM's block on a partitioned
# graph): fpbench's _hp ops in part order on the five mid-size graphs, parts of about 128 and 256
# nodes, blocks of 256, 512 and 1024 threads. Logs in p5.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
MID=pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics
for P in 256 128; do for BL in 256 512 1024; do
  left=$((560 - $(el))); ((left < 20)) && { echo "P=$P block=$BL skipped" | tee -a $OUT/steps.txt; continue; }
  QGTC_EXP_BLOCK=$BL timeout $((left < 90 ? left : 90)) $B/fpbench --graphs $MID --ops copy_u_sum,copy_u_sum_hp,u_mul_e_sum_hp \
    --part-rows $P --budget 0.2 --out /tmp/fpv > $R/v-$P-$BL.tsv 2> $R/v-$P-$BL.log
  echo "P=$P block=$BL rc=$? at $(el)s; checks: $(grep -c 'differ in bits' $R/v-$P-$BL.log), failed: $(grep -c CHECK $R/v-$P-$BL.log)" | tee -a $OUT/steps.txt
done; done
cat $R/v-*.tsv > $OUT/all.tsv
tar czf $OUT/p5.tgz -C $R . && rm -rf $R
echo "done $(el)s"
