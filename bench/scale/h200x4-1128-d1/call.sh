#!/usr/bin/env bash
# call d1 (4 GPUs): #21 the 100M graph kept on the devices (infer --packed --resident) on 1/2/4 GPUs,
# beside the streamed pass; the tcu tests of this tree on GPU 3 meanwhile; #16 synth2m GCN 1 and 4 bits
# against PyG on GPU 0 (the in-memory rate #21 compares with, and the 1-bit cost-model fix)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-570}
call_setup d1
B=build/d1 M=build/d1/model-a4w4.safetensors
unxz $B/qgtc.xz $B/qgtc; unxz $B/export.xz $B/export; unxz $B/tcu.test.xz $B/tcu.test
nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv -lms 500 > $L/nvidia-smi.csv 2>/dev/null &
SMI=$!
(cd tcu && CUDA_VISIBLE_DEVICES=3 QGTC_CACHE_DIR=$W/kt timeout 200 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestStagedUploads|TestUploadRing|TestBackend|TestPlan|TestRegion|TestTileMask|TestHeavy' > $L/tcu-test.log 2>&1
  echo "tcu.test rc=$?" >> $L/tcu-test.log) &
TT=$!
big=$W/big.qgpb
gen100 $B/qgtc $big
b=(infer --packed $big --weights $M --other-data --agg sparse --json --quiet)
for r in 1 2; do
  run res1-$r 60 $B/qgtc "${b[@]}" --passes 5 --resident --device gpu
  run res2-$r 45 $B/qgtc "${b[@]}" --passes 5 --resident --device gpu:0,1
  run res4-$r 45 $B/qgtc "${b[@]}" --passes 5 --resident --device gpu:all
done
run str1 45 $B/qgtc "${b[@]}" --passes 3 --device gpu
run str4 30 $B/qgtc "${b[@]}" --passes 3 --device gpu:all
rm -f $big
passes_table res1-1 res2-1 res4-1 res1-2 res2-2 res4-2 str1 str4
python3 - $L > $OUT/resident.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | device: later passes from its memory, median ms | device peak GiB |")
print("|---|---|---|")
for n in ["res1-1", "res2-1", "res4-1", "res1-2", "res2-2", "res4-2"]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | |"); continue
    print(f"| {n} | " + "; ".join("%s %.1f" % (d["device"], d.get("resident_median_ms", 0)) for d in r["devices"]) +
          " | " + "; ".join("%.1f" % (d.get("device_peak_bytes", 0) / 2**30) for d in r["devices"]) + " |")
PY
cat $OUT/resident.md
wait $TT
tail -3 $L/tcu-test.log | tee -a $OUT/steps.txt
echo "tcu: $(grep -cE '^\s*--- PASS' $L/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $L/tcu-test.log) failed" | tee -a $OUT/steps.txt
grep -E '^\s*--- FAIL' $L/tcu-test.log | head -20 | tee -a $OUT/steps.txt
# --- #16: synth2m GCN at 1 and 4 bits, resident and cold on GPU 0, then PyG
left=$((LIMIT - $(el) - 15))
echo "e2e: $left s left at $(el)s" | tee -a $OUT/steps.txt
OUT=$R/e2e STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE='1 4' MODELS=gcn CURVE_MODELS=gcn PASSES=5 \
  VARIANTS='^gpu (resident|cold)$' PYG_REPS=5 CUDA_VISIBLE_DEVICES=0 timeout $left bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -30 $R/e2e.txt
cp $R/e2e/table.md $OUT/table-e2e.md 2>/dev/null
cp $R/e2e/runs.jsonl $OUT/runs-e2e.jsonl 2>/dev/null
cp $R/e2e/pyg-synth2m.json $OUT/ 2>/dev/null
kill $SMI 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
