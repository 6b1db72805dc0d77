#!/usr/bin/env bash
# call g4 (1 x H200, 16 cores), tree of this commit (qgtc and tcu.test built here, and qgtc-g1 =
# call g1's qgtc, carried xz-compressed in build/g4x; models in build/g1dx as in g1):
#  1. tcu GPU tests of the hand-over and the replayed plans.
#  2. Physics and Computers, GCN/GIN/SAGE at 4 bits, resident and cold: g1's qgtc and this tree in
#     turn, twice (this tree's second run with the 16 cores), then PyG on the same partitions.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried
B=build/fpgpu
call_head
carried build/g4x
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 60 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestPoll|TestPlanReplayOnDevice|TestPlanReplayUncoveredOnDevice' > $A/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $A/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $A/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $A/tcu-test.log | head | tee -a $OUT/steps.txt
e2e2() { local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/g1data CURVE=4 MODELS='gcn gin sage' "$@" \
    timeout $((330 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^(coauthor|amazon)" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/pyg-*.json $R/$name/table.md $A/ 2>/dev/null; }
e2e2 g1a QGTC=$B/qgtc-g1 PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 newa PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 g1b QGTC=$B/qgtc-g1 PYG=0 VARIANTS='^gpu (resident|cold)$'
e2e2 newb PYG_REPS=5 VARIANTS='^(gpu resident|gpu cold|cpu)$'
cp $OUT/steps.txt $A/
tar czf $OUT/g4.tgz -C $OUT a 2>/dev/null; rm -rf $A $R
echo "done $(el)s"
