#!/usr/bin/env bash
# call 10 (4 GPUs): #21 9f9c5e3 (staged uploads, up to 16 host workers a device) on 1/2/4 GPUs; #16 synth2m against PyG on GPU 0
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-575}
call_setup c10
nvidia-smi topo -m > $L/topo.txt 2>&1; lscpu > $L/lscpu.txt 2>&1
M=build/c10/model-a4w4.safetensors NEW=build/c10/qgtc
unxz build/c10/export.xz build/c10/export
big=$W/big.qgpb
gen100 $NEW $big
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 4 --json --quiet)
for r in 1 2; do
  run big1-auto-$r 45 $NEW "${b[@]}" --device gpu
  run big2-auto-$r 30 $NEW "${b[@]}" --device gpu:0,1
  run big4-auto-$r 30 $NEW "${b[@]}" --device gpu:all
done
run big1-w8 45 $NEW "${b[@]}" --device gpu --host-workers 8
run big4-w32 30 $NEW "${b[@]}" --device gpu:all --host-workers 32
rm -f $big
passes_table $(for r in 1 2; do for g in 1 2 4; do echo big$g-auto-$r; done; done) big1-w8 big4-w32
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
