#!/usr/bin/env bash
# call p3 (1 x H200), a build not kept in the history (RESULTS.md, "Rows in part order"): the fp
# tests (the partitioned SpMM in part order and grouped, the row-order kernel); fpbench's copy_u_sum
# and u_mul_e_sum in row order and partitioned (_hp: parts of about 204,800 nodes, rows in part
# order, 32-column tiles by groups of rows where x outgrows half the L2) on the 8 graphs; cuSPARSE
# in both orders and PyG; the table. Then _hp with parts of about 256 nodes: v1 on the synthetic
# graph (grouped), v2 on the five mid-size graphs (part order only; its files did not come back).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
(cd tcu && timeout 150 ../$B/tcu.test -test.run '^TestFP(PartsSpMM|SpMMConformance|SampledSpMM|EdgeCases|SDDMMConformance)$' -test.v \
  -test.count=1 -test.timeout 140s > $OUT/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $OUT/test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/test.log | head | tee -a $OUT/steps.txt
timeout $((300 - $(el))) $B/fpbench --ops copy_u_sum,u_mul_e_sum,copy_u_sum_hp,u_mul_e_sum_hp --budget 0.3 \
  --out /tmp/fpdata > $OUT/qgtc.tsv 2> $OUT/fpbench.log
echo "fpbench rc=$? at $(el)s" | tee -a $OUT/steps.txt
grep -E 'CHECK|parts,|L2' $OUT/fpbench.log | tee -a $OUT/steps.txt
timeout $((420 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fpdata --budget 0.3 \
  --ops copy_u_sum,u_mul_e_sum > $OUT/torch.tsv 2> $OUT/baselines.log
echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
python3 bench/templates/table.py $OUT/qgtc.tsv $OUT/torch.tsv > $OUT/table.md
grep -A8 '^### Targets' $OUT/table.md | tee -a $OUT/steps.txt
timeout $((500 - $(el))) $B/fpbench --graphs synth --ops copy_u_sum_hp,u_mul_e_sum_hp --part-rows 256 --budget 0.2 \
  --check=false --out /tmp/fpv > $OUT/v1.tsv 2> $OUT/v1.log
echo "v1 (synth, parts of 256) rc=$? at $(el)s" | tee -a $OUT/steps.txt
timeout $((585 - $(el))) $B/fpbench --graphs pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics \
  --ops copy_u_sum_hp,u_mul_e_sum_hp --part-rows 256 --budget 0.2 --check=false --out /tmp/fpv > $OUT/v2.tsv 2> $OUT/v2.log
echo "v2 (mid graphs, parts of 256) rc=$? at $(el)s" | tee -a $OUT/steps.txt
echo "done $(el)s"
