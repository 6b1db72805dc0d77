#!/usr/bin/env bash
# call p1 (1 x H200): the fp conformance tests with the partitioned SpMM (TestFPPartsSpMM) and
# the row-order kernel after its refactor; fpbench's copy_u_sum and u_mul_e_sum in row order
# and hybrid-partitioned (_hp, parts of about 256 nodes), on the 8 graphs at f = 16..256;
# cuSPARSE in the graphs' own order and in part order, and PyG; the ratio table.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/templates
call_head
export QGTC_CACHE_DIR=/tmp/kt
(cd tcu && timeout 150 ../$B/tcu.test -test.run '^TestFP(PartsSpMM|SpMMConformance|SampledSpMM|EdgeCases)$' -test.v \
  -test.count=1 -test.timeout 140s > $OUT/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $OUT/test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/test.log | head | tee -a $OUT/steps.txt
timeout $((460 - $(el))) $B/fpbench --ops copy_u_sum,u_mul_e_sum,copy_u_sum_hp,u_mul_e_sum_hp --budget 0.3 \
  --out /tmp/fpdata > $OUT/qgtc.tsv 2> $OUT/fpbench.log
echo "fpbench rc=$? at $(el)s" | tee -a $OUT/steps.txt
timeout $((585 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fpdata --budget 0.3 \
  --ops copy_u_sum,u_mul_e_sum > $OUT/torch.tsv 2> $OUT/baselines.log
echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
python3 bench/templates/table.py $OUT/qgtc.tsv $OUT/torch.tsv > $OUT/table.md
grep -A8 '^### Targets' $OUT/table.md | tee -a $OUT/steps.txt
echo "done $(el)s"
