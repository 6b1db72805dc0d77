#!/usr/bin/env bash
# call e1 (1 x H200): the tcu tests of this tree (agg takes a row's entries 32 at a time); #16
# synth2m GCN/GIN/SAGE 4 bits resident: 8fbc125 ("old"), 73e5d12 (8 gathers in flight a group, "u8")
# and that tree with 16 ("u16"); then u16 cold, its kernels, and PyG on the same partition.
set -uo pipefail
cd "$(dirname "$0")/../../.."
T0=$SECONDS; el() { echo $((SECONDS - T0)); }
B=build/e1 R=$OUT/raw; mkdir -p $R
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 170 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed' > $OUT/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/tcu-test.log | head
e2e() { # name, then env assignments for run.sh
  local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 "$@" \
    timeout $((570 - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $OUT/runs-$name.jsonl 2>/dev/null; cp $R/$name/table.md $OUT/table-$name.md 2>/dev/null
}
e2e old QGTC=$B/qgtc-old PYG=0 VARIANTS='^gpu resident$'
e2e u8 QGTC=$B/qgtc PYG=0 VARIANTS='^gpu resident$' SYNTH_PART=/tmp/synth2m.part
e2e u16 QGTC=$B/qgtc-u16 PYG_REPS=5 KERNELS=1 VARIANTS='^gpu (resident|cold)$' SYNTH_PART=/tmp/synth2m.part
cp $R/u16/pyg-synth2m.json $R/u16/kernels-synth2m-*.json $OUT/ 2>/dev/null
grep -A30 "kernels:" $R/u16.txt | head -60
tar czf $OUT/logs.tgz -C $OUT raw && rm -rf $R
echo "done $(el)s"
