#!/usr/bin/env bash
# call w2 (1 x H200): the SpMM with __launch_bounds__(256, 4) (build/templates, the tree of the
# change) against the one before it (build/templates-m0: w1's experiment build with its knob unset,
# which generates the kernel of b363b9c), side by side: the GPU SpMM tests on the new build, then
# copy_u_sum and u_mul_e_sum in row order on the 8 graphs with each, then cuSPARSE. Logs in w2.tgz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
call_head
export QGTC_CACHE_DIR=/tmp/kt
(cd tcu && timeout 60 ../build/templates/tcu.test -test.run '^TestFP(SpMMConformance|OrderedSpMM|SampledSpMM|EdgeCases)$' -test.v \
  -test.count=1 -test.timeout 55s > $R/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $R/test.log) passed, $(grep -cE '^\s*--- FAIL' $R/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $R/test.log | head | tee -a $OUT/steps.txt
for V in m0:templates-m0 m4:templates; do
  IFS=: read N B <<<"$V"
  left=$((150 - $(el))); ((left < 20)) && { echo "$N skipped" | tee -a $OUT/steps.txt; continue; }
  timeout $((left / 2 + 10)) build/$B/fpbench --ops copy_u_sum,u_mul_e_sum --budget 0.3 --out /tmp/fp$N > $R/qgtc-$N.tsv 2> $R/fpbench-$N.log
  echo "$N rc=$? at $(el)s; $(grep -c CHECK $R/fpbench-$N.log) checks failed" | tee -a $OUT/steps.txt
done
timeout $((205 - $(el))) python3 -u bench/templates/baselines.py --data /tmp/fpm4 --budget 0.3 \
  --ops copy_u_sum,u_mul_e_sum > $R/torch.tsv 2> $R/baselines.log
echo "baselines rc=$? at $(el)s" | tee -a $OUT/steps.txt
for N in m0 m4; do python3 bench/templates/table.py $R/qgtc-$N.tsv $R/torch.tsv > $OUT/table-$N.md; grep -A4 '^### Targets' $OUT/table-$N.md | tail -2 | sed "s/^/$N /" | tee -a $OUT/steps.txt; done
tar czf $OUT/w2.tgz -C $R . && rm -rf $R
echo "done $(el)s"
