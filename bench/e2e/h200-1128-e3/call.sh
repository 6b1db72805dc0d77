#!/usr/bin/env bash
# call e3 (1 x H200): the tcu tests of this tree (operands with large k-step padding uploaded
# unpadded, padded on the device), the backend suite with every padded upload that way; #16
# synth2m cold passes, the e2 tree (f8c87c4, uploads in pieces) against this tree, GCN/GIN/SAGE
# 4 bits, this tree resident, PyG; #20 ES-SpMM at S = 16, 64, 128 beside the exact copy_u_sum.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, tcu_tests, e2e
B=build/e3 E2E_END=560
call_head
tcu_tests 200
grep -E '^--- (PASS|FAIL): TestBackendSuite' $OUT/tcu-test.log | tee -a $OUT/steps.txt
e2e e2 QGTC=$B/qgtc-e2 PYG=0 VARIANTS='^gpu cold$'
e2e new QGTC=$B/qgtc PYG_REPS=5 VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
cp $R/new/pyg-synth2m.json $R/new/table.md $OUT/ 2>/dev/null
for S in 16 64 128; do
  left=$((585 - $(el))); ((left < 20)) && { echo "es $S: skipped at $(el)s" | tee -a $OUT/steps.txt; continue; }
  QGTC_CACHE_DIR=/tmp/kt timeout $((left < 120 ? left : 120)) $B/fpbench --ops copy_u_sum,copy_u_sum_es --es-limit $S --budget 0.3 \
    --out /tmp/fpdata > $OUT/es-$S.tsv 2> $R/es-$S.log
  echo "es $S rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "sample keeps" $R/es-$S.log | head -40 > $OUT/es-$S.txt
done
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
