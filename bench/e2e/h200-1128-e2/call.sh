#!/usr/bin/env bash
# call e2 (1 x H200): the tcu tests of this tree (uploads past 64 MiB in 16 MiB pieces through the
# ring); #16 synth2m cold passes, 8fbc125 ("old") against this tree ("new"), GCN/GIN/SAGE 4 bits;
# this tree resident; PyG on the same partition; then GCN's widths 1, 2, 8.
set -uo pipefail
cd "$(dirname "$0")/../../.."
T0=$SECONDS; el() { echo $((SECONDS - T0)); }
B=build/e2 R=$OUT/raw; mkdir -p $R
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 170 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed' > $OUT/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/tcu-test.log | head
e2e() { # name, then env assignments for run.sh
  local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 "$@" \
    timeout $((575 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $OUT/runs-$name.jsonl 2>/dev/null
}
e2e old QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu cold$'
e2e new QGTC=$B/qgtc PYG_REPS=5 VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
cp $R/new/pyg-synth2m.json $OUT/ 2>/dev/null
e2e curve QGTC=$B/qgtc PYG=0 MODELS=gcn CURVE='1 2 8' CURVE_MODELS=gcn VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
