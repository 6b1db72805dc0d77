#!/usr/bin/env bash
# call n3 (1 x H200, 16 cores), the tree and data of call n2 (build/n1x, build/n2dx), the session's
# last device time, in order of need:
#  1. PyG on Computers' partition (calls n1 and n2 were cut before it).
#  2. synth2m GCN at 4 bits, resident and cold, a second reading (n2's cold ratio was 3.25x).
#  3. synth2m GIN at 2 and 8 bits, SAGE at 1, 2 and 8, resident and cold (n2 was cut after GIN at 1).
#  4. synth2m at 3, 5, 6 and 7 bits, resident only: GCN, then GIN and SAGE, until the call's end.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, small, synth
B=build/fpgpu
call_head
carried build/n1x
python3 -c 'import tarfile; tarfile.open("build/n2dx/n2data.tar.xz").extractall("build")'
small pyg 80 DATA=build/n2data SPEED=amazon_computers:7 PYG_REPS=5 VARIANTS='^none$'
synth gcn4 130 DATA=build/n2data MODELS=gcn VARIANTS='^gpu (resident|cold)$'
synth gin28 220 DATA=build/n2data MODELS=gin CURVE='2 8' CURVE_MODELS=gin VARIANTS='^gpu (resident|cold)$'
synth sage128 345 DATA=build/n2data MODELS=sage CURVE='1 2 8' CURVE_MODELS=sage VARIANTS='^gpu (resident|cold)$'
synth gcn3567 430 DATA=build/n2data MODELS=gcn CURVE='3 5 6 7' CURVE_MODELS=gcn VARIANTS='^gpu resident$'
synth gs3567 520 DATA=build/n2data MODELS='gin sage' CURVE='3 5 6 7' CURVE_MODELS='gin sage' VARIANTS='^gpu resident$'
cp $OUT/steps.txt $A/
tar czf $OUT/n3.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
