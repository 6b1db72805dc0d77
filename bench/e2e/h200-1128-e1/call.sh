#!/usr/bin/env bash
# call e1 (1 x H200): the tcu tests of this tree (agg takes a row's entries 32 at a time); #16
# synth2m GCN/GIN/SAGE 4 bits resident: 8fbc125 ("old"), 73e5d12 (8 gathers in flight a group, "u8")
# and that tree with 16 ("u16"); then u16 cold, its kernels, and PyG on the same partition.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, tcu_tests, e2e
B=build/e1
call_head
tcu_tests 170
e2e old QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu resident$'
e2e u8 QGTC=$B/qgtc PYG=0 VARIANTS='^gpu resident$' SYNTH_PART=/tmp/synth2m.part
e2e u16 QGTC=$B/qgtc-u16 PYG_REPS=5 KERNELS=1 VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
cp $R/u16/pyg-synth2m.json $R/u16/kernels-synth2m-*.json $OUT/ 2>/dev/null
grep -A30 "kernels:" $R/u16.txt | head -60
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
