#!/usr/bin/env bash
# call d2 (2 GPUs: no 4-GPU kind was lent by then): #21 the first product's planes or code lists on the 100M graph, streamed and resident:
# HEAD (the features' own dense rate in the cost model, code lists staged) against 9f9c5e3 (call 10's tree)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-500}
call_setup d2
lscpu > $L/lscpu.txt 2>&1
B=build/d2 M=build/d2/model-a4w4.safetensors NEW=build/d2/qgtc OLD=build/d2/qgtc-c10
unxz $B/qgtc.xz $NEW; unxz $B/qgtc-c10.xz $OLD
big=$W/big.qgpb
gen100 $NEW $big
b=(infer --packed $big --weights $M --other-data --agg sparse --json --quiet)
for r in 1 2; do
  run str1-old-$r 45 $OLD "${b[@]}" --passes 3 --device gpu
  run str1-new-$r 45 $NEW "${b[@]}" --passes 3 --device gpu
done
run str1-new-lists 45 $NEW "${b[@]}" --passes 3 --device gpu --sparse-input on
run str2-new 30 $NEW "${b[@]}" --passes 3 --device gpu:all
run str2-old 30 $OLD "${b[@]}" --passes 3 --device gpu:all
run res1-planes 60 $NEW "${b[@]}" --passes 5 --resident --device gpu
run res1-lists 60 $NEW "${b[@]}" --passes 5 --resident --device gpu --sparse-input on
run res2-planes 45 $NEW "${b[@]}" --passes 5 --resident --device gpu:all
run res2-lists 45 $NEW "${b[@]}" --passes 5 --resident --device gpu:all --sparse-input on
rm -f $big
passes_table str1-old-1 str1-new-1 str1-old-2 str1-new-2 str1-new-lists str2-old str2-new res1-planes res1-lists res2-planes res2-lists
python3 - $L > $OUT/resident.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | sparse input | device: later passes from its memory, median ms | device peak GiB |")
print("|---|---|---|---|")
for n in ["res1-planes", "res1-lists", "res2-planes", "res2-lists"]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | |"); continue
    print(f"| {n} | {r.get('sparse_input')} | " + "; ".join("%s %.1f" % (d["device"], d.get("resident_median_ms", 0)) for d in r["devices"]) +
          " | " + "; ".join("%.1f" % (d.get("device_peak_bytes", 0) / 2**30) for d in r["devices"]) + " |")
for n in ["str1-old-1", "str1-new-1", "str1-new-lists"]:
    try: r = json.load(open(os.path.join(L, n + ".json"))); print(f"- {n}: sparse input {r.get('sparse_input')}")
    except Exception: pass
PY
cat $OUT/resident.md
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
echo "done $(el)s"
