#!/usr/bin/env bash
# call u3 (1 x H200): the persistent SpMM (_sm) with each claim taking CLAIM items at once
# (QGTC_EXP_CLAIM, an experiment's build: u2's kernel with that knob; persist.patch beside this file), one part per SM
# (--part-rows 0), on the five mid-size graphs and the synthetic one; row order and _hp beside it.
# cuSPARSE on the same orders is call u2's (the partition is the same, seed 1). Logs in u3.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
G=pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics,synth
for C in 4 16; do
  left=$((280 - $(el))); ((left < 30)) && { echo "CLAIM=$C skipped" | tee -a $OUT/steps.txt; continue; }
  QGTC_EXP_CLAIM=$C timeout $left $B/fpbench --graphs $G --ops copy_u_sum,copy_u_sum_hp,copy_u_sum_sm,u_mul_e_sum_hp,u_mul_e_sum_sm \
    --part-rows 0 --budget 0.3 --out /tmp/fp$C > $R/qgtc-c$C.tsv 2> $R/fpbench-c$C.log
  echo "CLAIM=$C rc=$? at $(el)s; $(grep -c CHECK $R/fpbench-c$C.log) checks failed" | tee -a $OUT/steps.txt
  grep -E '_sm' $R/qgtc-c$C.tsv | tr '\n' ' ' | tee -a $OUT/steps.txt; echo | tee -a $OUT/steps.txt
done
tar czf $OUT/u3.tgz -C $R . && rm -rf $R
echo "done $(el)s"
