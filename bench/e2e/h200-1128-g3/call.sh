#!/usr/bin/env bash
# call g3 (1 x H200, 16 cores): which side of the device thread's hand-over should spin? qgtc built
# from 19412e8 plus an experiment-only knob (QGTC_TCU_SPIN=none|dev|caller|both,
# QGTC_TCU_SPIN_US), carried xz-compressed in build/g3x; models in build/g1dx as in g1.
# Physics and Computers, GCN and GIN at 4 bits, resident and cold, once per setting, in turn.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/g3x
for cfg in none both:100 caller:100 dev:100 both:30 none dev:30; do
  ((  $(el) > 250 )) && break
  name=${cfg/:/-}-$(el)
  env QGTC_TCU_SPIN=${cfg%%:*} QGTC_TCU_SPIN_US=${cfg#*:} OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin' PYG=0 \
    VARIANTS='^gpu (resident|cold)$' timeout 60 bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$cfg rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-200 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null
done
cp $OUT/steps.txt $A/
tar czf $OUT/g3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
