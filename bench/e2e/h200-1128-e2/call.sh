#!/usr/bin/env bash
# call e2 (1 x H200): the tcu tests of this tree (uploads past 64 MiB in 16 MiB pieces through the
# ring); #16 synth2m cold passes, 8fbc125 ("old") against this tree ("new"), GCN/GIN/SAGE 4 bits;
# this tree resident; PyG on the same partition; then GCN's widths 1, 2, 8.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, tcu_tests, e2e
B=build/e2 E2E_END=575
call_head
tcu_tests 170
e2e old QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu cold$'
e2e new QGTC=$B/qgtc PYG_REPS=5 VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
cp $R/new/pyg-synth2m.json $OUT/ 2>/dev/null
e2e curve QGTC=$B/qgtc PYG=0 MODELS=gcn CURVE='1 2 8' CURVE_MODELS=gcn VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
