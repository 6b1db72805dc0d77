#!/usr/bin/env bash
# call n2 (1 x H200, 16 cores), the tree of call n1 (its binaries, build/n1x) with run.sh's inner
# timeouts in the caller's process group; build/n2dx: Computers' partition (g1's) and its GCN/GIN/SAGE
# models at every width 1-8, trained here by run.sh's TRAIN (call n1 ran out of time training them
# on the device); synth2m's 40-part partition and GCN/GIN/SAGE at every width, calibrated here on
# the 200k-node planted graph (bench/scale/model.sh's recipe):
#  1. Computers, GCN/GIN/SAGE at every width, resident and cold; at 4 bits the CPU pass and PyG;
#     the CPU pass once more.
#  2. synth2m (generated in the call), GCN/GIN/SAGE at 4 bits: resident, cold, the 16 cores' CPU
#     pass; PyG on the same partition.
#  3. synth2m at 1, 2 and 8 bits, resident and cold, until the call's end.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, small, synth
B=build/fpgpu
call_head
carried build/n1x
python3 -c 'import tarfile; tarfile.open("build/n2dx/n2data.tar.xz").extractall("build")'
small comp 150 DATA=build/n2data SPEED=amazon_computers:7 CURVE='1 2 3 4 5 6 7 8' CURVE_MODELS='gcn gin sage' PYG_REPS=5 VARIANTS='^(gpu resident|gpu cold|cpu)$'
small comp2 165 DATA=build/n2data SPEED=amazon_computers:7 PYG=0 VARIANTS='^cpu$'
synth s4 480 DATA=build/n2data PYG=1 PYG_REPS=5 VARIANTS='^(gpu resident|gpu cold|cpu)$'
synth w128 580 DATA=build/n2data CURVE='1 2 8' CURVE_MODELS='gcn gin sage' VARIANTS='^gpu (resident|cold)$'
cp $OUT/steps.txt $A/
tar czf $OUT/n2.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
