#!/usr/bin/env bash
# call p2 (1 x H200): the fp tests (the partitioned SpMM staged and in part order, the row-order
# kernel); fpbench's copy_u_sum and u_mul_e_sum in row order and partitioned (_hp, parts of
# about 256 nodes, blocks of 512, tiles of 32 columns) on the 8 graphs, cuSPARSE (both orders)
# and PyG, the table; then copy_u_sum_hp alone on the five mid-size graphs with other parts,
# blocks and tiles (QGTC_FP_PART_EXP, an experiment's knob).
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
grep -E 'CHECK|pieces,|inside a' $OUT/fpbench.log | tee -a $OUT/steps.txt
timeout $((400 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fpdata --budget 0.3 \
  --ops copy_u_sum,u_mul_e_sum > $OUT/torch.tsv 2> $OUT/baselines.log
echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
python3 bench/templates/table.py $OUT/qgtc.tsv $OUT/torch.tsv > $OUT/table.md
grep -A8 '^### Targets' $OUT/table.md | tee -a $OUT/steps.txt
MID=pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics
for v in "256 block=256" "256 block=1024" "128 block=512" "512 block=512" "256 tile=64" "128 tile=64,block=1024"; do
  set -- $v
  left=$((585 - $(el))); ((left < 25)) && { echo "variant $v: skipped at $(el)s" | tee -a $OUT/steps.txt; continue; }
  QGTC_FP_PART_EXP=$2 timeout $((left < 60 ? left : 60)) $B/fpbench --graphs $MID --ops copy_u_sum_hp --part-rows $1 \
    --budget 0.2 --check=false --out /tmp/fpv > $OUT/v-$1-$2.tsv 2> $OUT/v-$1-$2.log
  echo "variant parts=$1 $2 rc=$? at $(el)s" | tee -a $OUT/steps.txt
done
echo "done $(el)s"
