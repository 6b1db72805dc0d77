#!/usr/bin/env bash
# call d4 (4 GPUs): #21 the 100M graph kept on 1, 2 and 4 GPUs with the first product's planes (the
# default since 9991da8; call d1 ran the code lists); #16 GIN's kernels on synth2m (GPU 0, 4 bits)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/scale/steps.sh # el, unxz, run, passes_table
LIMIT=${LIMIT:-400}
R=$OUT/raw; mkdir -p $R; L=$OUT/logs; mkdir -p $L; W=/tmp/d4; mkdir -p $W
export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
B=build/d4 M=build/d4/model-a4w4.safetensors
unxz $B/qgtc.xz $B/qgtc; unxz $B/export.xz $B/export
big=$W/big.qgpb
run gen100 150 $B/qgtc data synth --model planted --nodes 100000000 --communities 100000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $big --parts 2000 --quiet
b=(infer --packed $big --weights $M --other-data --agg sparse --json --quiet --passes 5 --resident)
for r in 1 2; do
  run res1-$r 60 $B/qgtc "${b[@]}" --device gpu
  run res2-$r 45 $B/qgtc "${b[@]}" --device gpu:0,1
  run res4-$r 45 $B/qgtc "${b[@]}" --device gpu:all
done
rm -f $big
passes_table res1-1 res2-1 res4-1 res1-2 res2-2 res4-2
python3 - $L > $OUT/resident.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | sparse input | device: later passes from its memory, median ms | device peak GiB | host peak GiB |")
print("|---|---|---|---|---|")
for n in ["res1-1", "res2-1", "res4-1", "res1-2", "res2-2", "res4-2"]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | | |"); continue
    print(f"| {n} | {r.get('sparse_input')} | " + "; ".join("%s %.1f" % (d["device"], d.get("resident_median_ms", 0)) for d in r["devices"]) +
          " | " + "; ".join("%.1f" % (d.get("device_peak_bytes", 0) / 2**30) for d in r["devices"]) + f" | {r['peak_bytes']/2**30:.1f} |")
PY
cat $OUT/resident.md
left=$((LIMIT - $(el) - 10))
echo "e2e: $left s left at $(el)s" | tee -a $OUT/steps.txt
OUT=$R/e2e STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS=gin PASSES=5 KERNELS=1 PYG=0 \
  VARIANTS='^gpu resident$' CUDA_VISIBLE_DEVICES=0 timeout $left bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -40 $R/e2e.txt
cp $R/e2e/kernels-synth2m-gin.json $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
