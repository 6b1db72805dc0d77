#!/usr/bin/env bash
# call p4 (1 x H200): the fp tests (the SpMM in part order, UploadCSRParts, and the row-order
# kernel); fpbench's copy_u_sum and u_mul_e_sum in row order and in part order (_hp: parts of about
# 256 nodes) on the 8 graphs; cuSPARSE in both orders and PyG; the table. Then _hp on the synthetic
# graph with parts of about 204,800 nodes (v1). Logs in p4.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
(cd tcu && timeout 150 ../$B/tcu.test -test.run '^TestFP(PartsSpMM|SpMMConformance|SampledSpMM|EdgeCases|SDDMMConformance)$' -test.v \
  -test.count=1 -test.timeout 140s > $R/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $R/test.log) passed, $(grep -cE '^\s*--- FAIL' $R/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $R/test.log | head | tee -a $OUT/steps.txt
timeout $((300 - $(el))) $B/fpbench --ops copy_u_sum,u_mul_e_sum,copy_u_sum_hp,u_mul_e_sum_hp --part-rows 256 --budget 0.3 \
  --out /tmp/fpdata > $R/qgtc.tsv 2> $R/fpbench.log
echo "fpbench rc=$? at $(el)s" | tee -a $OUT/steps.txt
grep -E 'CHECK|parts,|L2' $R/fpbench.log | tee -a $OUT/steps.txt
timeout $((430 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fpdata --budget 0.3 \
  --ops copy_u_sum,u_mul_e_sum > $R/torch.tsv 2> $R/baselines.log
echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
python3 bench/templates/table.py $R/qgtc.tsv $R/torch.tsv > $OUT/table.md
grep -A8 '^### Targets' $OUT/table.md | tee -a $OUT/steps.txt
timeout $((560 - $(el))) $B/fpbench --graphs synth --ops copy_u_sum_hp,u_mul_e_sum_hp --part-rows 204800 --budget 0.3 \
  --check=false --out /tmp/fpv > $R/v1.tsv 2> $R/v1.log
echo "v1 (synth, parts of 204800) rc=$? at $(el)s" | tee -a $OUT/steps.txt
grep -E 'us \(median' $R/v1.log | tee -a $OUT/steps.txt
tar czf $OUT/p4.tgz -C $R . && rm -rf $R
echo "done $(el)s"
