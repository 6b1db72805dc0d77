#!/usr/bin/env bash
# call 10 (4 GPUs): #21 9f9c5e3 (staged uploads, up to 16 host workers a device) on 1/2/4 GPUs; #16 synth2m against PyG on GPU 0
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$SECONDS; LIMIT=${LIMIT:-575}
el() { echo $((SECONDS - T0)); }
R=$OUT/raw; mkdir -p $R; L=$OUT/logs; mkdir -p $L; W=/tmp/c10; mkdir -p $W
export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
run() {
  local name=$1 max=$2; shift 2
  local left=$((LIMIT - $(el)))
  if ((left < 10)); then echo "$name: skipped at $(el)s" | tee -a $OUT/steps.txt; return 99; fi
  ((max > left)) && max=$left
  local t=$SECONDS
  python3 - "$L/$name.rss" timeout -k 5 $max "$@" > $L/$name.json 2> $L/$name.err <<'PY'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
PY
  local rc=$?
  echo "$name: rc $rc, $((SECONDS - t)) s, peak RSS $(( $(tail -1 $L/$name.rss 2>/dev/null || echo 0) / 1024 )) MiB, at $(el)s" | tee -a $OUT/steps.txt
  return $rc
}
echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
nvidia-smi topo -m > $L/topo.txt 2>&1; lscpu > $L/lscpu.txt 2>&1
M=build/c10/model-a4w4.safetensors NEW=build/c10/qgtc
unxz() { python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' "$1" "$2" && chmod +x "$2"; }
unxz build/c10/export.xz build/c10/export
big=$W/big.qgpb
run gen100 150 $NEW data synth --model planted --nodes 100000000 --communities 100000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $big --parts 2000 --quiet
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 4 --json --quiet)
for r in 1 2; do
  run big1-auto-$r 45 $NEW "${b[@]}" --device gpu
  run big2-auto-$r 30 $NEW "${b[@]}" --device gpu:0,1
  run big4-auto-$r 30 $NEW "${b[@]}" --device gpu:all
done
run big1-w8 45 $NEW "${b[@]}" --device gpu --host-workers 8
run big4-w32 30 $NEW "${b[@]}" --device gpu:all --host-workers 32
rm -f $big
python3 - $L > $OUT/table.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | passes ms | median ms | nodes/s | workers | read/prepare/run ms summed | devices (batches, run ms, wait ms) | preds |")
print("|---|---|---|---|---|---|---|---|")
for n in [f"big{g}-auto-{r}" for r in (1, 2) for g in (1, 2, 4)] + ["big1-w8", "big4-w32"]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | | | | | |"); continue
    med = r.get("pass_median_ms") or r.get("pass_ms") or 0
    nodes = r.get("batch_nodes", r.get("nodes", 0))
    devs = "; ".join("%s %d %.0f %.0f" % (d["device"], d["batches"], d.get("run_ms", 0), d.get("wait_ms", 0)) for d in r.get("devices") or [])
    ps = ", ".join("%.0f" % p for p in [r.get("pass_ms",0)] + (r.get("more_pass_ms") or []))
    print(f"| {n} | {ps} | {med:.1f} | {nodes/med*1e3:,.0f} | {r.get('workers')} | {r.get('read_ms',0):.0f}/{r.get('pack_ms',0):.0f}/{r.get('compute_ms',0):.0f} | {devs} | {r['predictions_sha256'][:12]} |")
PY
cat $OUT/table.md
# --- #16: synth2m (generated here, 40 parts), 4-bit GCN/GIN/SAGE resident and cold on GPU 0, then PyG
left=$((LIMIT - $(el) - 15))
echo "e2e: $left s left at $(el)s" | tee -a $OUT/steps.txt
OUT=$R/e2e STEPS=speed B=build/c10 DATA=build/c10data SPEED='synth2m:40' CURVE=4 PASSES=5 \
  VARIANTS='^gpu (resident|cold)$' PYG_REPS=5 CUDA_VISIBLE_DEVICES=0 timeout $left bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -30 $R/e2e.txt
cp $R/e2e/table.md $OUT/table-e2e.md 2>/dev/null
cp $R/e2e/runs.jsonl $OUT/runs-e2e.jsonl 2>/dev/null
cp $R/e2e/pyg-synth2m.json $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
