#!/usr/bin/env bash
# call 6 (2 GPUs): #16 the 2M synthetic graph against PyG on GPU 0; #21 the 100M graph after the
# device-thread fixes (b769075) against the build of call 5 (2f2379d)
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # el, unxz, run, gen100
LIMIT=${LIMIT:-500}
unxz build/c6/export.xz build/c6/export; unxz build/c6/qgtc-c5.xz build/c6/qgtc-c5
R=$OUT/raw; mkdir -p $R
L=$OUT/logs; mkdir -p $L
W=/tmp/c6; mkdir -p $W
export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
# --- #16: synth2m (generated there, 40 parts), 4-bit GCN/GIN/SAGE resident and cold on GPU 0, GCN on 16 cores, PyG
OUT=$R/e2e STEPS=speed B=build/c6 DATA=build/c6data SPEED='synth2m:40' CURVE=4 PASSES=5 CPU_PROCS=16 \
  VARIANTS='^(gpu resident|gpu cold|cpu)$' PYG_REPS=10 CUDA_VISIBLE_DEVICES=0 timeout ${E2E_S:-250} bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -30 $R/e2e.txt
cp $R/e2e/table.md $OUT/table-e2e.md 2>/dev/null
# --- #21: the 100M graph
big=$W/big.qgpb M=build/scale/model-a4w4.safetensors
gen100 build/c6/qgtc $big
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 3 --json --quiet)
run big1-new 60 build/c6/qgtc "${b[@]}" --device gpu
run big2-new 40 build/c6/qgtc "${b[@]}" --device gpu:0,1
run big1-c5 60 build/c6/qgtc-c5 "${b[@]}" --device gpu
run big2-c5 40 build/c6/qgtc-c5 "${b[@]}" --device gpu:0,1
python3 - $L > $OUT/table.md <<'PY'
import json, os, sys, glob
L = sys.argv[1]
def j(n):
    try: return json.load(open(os.path.join(L, n + ".json")))
    except Exception: return None
print("| run | pass ms (median) | first pass ms | nodes/s | read/prepare/run ms summed | devices (batches, run ms, wait ms) | preds |")
print("|---|---|---|---|---|---|---|")
for n in ["big1-new","big2-new","big1-c5","big2-c5"]:
    r = j(n)
    if not r: print(f"| {n} | failed | | | | | |"); continue
    med = r.get("pass_median_ms") or r.get("pass_ms") or 0
    first = r["pass_ms"] if "mode" in r else r.get("pack_ms", 0) + r.get("compute_ms", 0)
    nodes = r.get("batch_nodes", r.get("nodes", 0))
    devs = "; ".join("%s %d %.0f %.0f" % (d["device"], d["batches"], d.get("run_ms", 0), d.get("wait_ms", 0)) for d in r.get("devices") or [])
    print(f"| {n} | {med:.1f} | {first:.1f} | {nodes/med*1e3:,.0f} | {r.get('read_ms',0):.0f}/{r.get('pack_ms',0):.0f}/{r.get('compute_ms',0):.0f} | {devs} | {r['predictions_sha256'][:12]} |")
print()
print("| partition | seconds | edge cut |")
print("|---|---|---|")
for f in sorted(glob.glob(os.path.join(L, "part-*.json"))):
    try:
        r = json.load(open(f)); print(f"| {os.path.basename(f)[:-5]} | {r.get('seconds')} | {r.get('edge_cut')} |")
    except Exception as e: print(f"| {os.path.basename(f)} | failed | |")
PY
cat $OUT/table.md
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
