#!/usr/bin/env bash
# call d4 (4 GPUs): #21 the 100M graph kept on 1, 2 and 4 GPUs with the first product's planes (the
# default since 9991da8; call d1 ran the code lists); #16 GIN's kernels on synth2m (GPU 0, 4 bits)
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-400}
call_setup d4
B=build/d4 M=build/d4/model-a4w4.safetensors
unxz $B/qgtc.xz $B/qgtc; unxz $B/export.xz $B/export
big=$W/big.qgpb
gen100 $B/qgtc $big
b=(infer --packed $big --weights $M --other-data --agg sparse --json --quiet --passes 5 --resident)
for r in 1 2; do
  run res1-$r 60 $B/qgtc "${b[@]}" --device gpu
  run res2-$r 45 $B/qgtc "${b[@]}" --device gpu:0,1
  run res4-$r 45 $B/qgtc "${b[@]}" --device gpu:all
done
rm -f $big
passes_table res1-1 res2-1 res4-1 res1-2 res2-2 res4-2
resident_table res1-1 res2-1 res4-1 res1-2 res2-2 res4-2
left=$((LIMIT - $(el) - 10))
echo "e2e: $left s left at $(el)s" | tee -a $OUT/steps.txt
OUT=$R/e2e STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS=gin PASSES=5 KERNELS=1 PYG=0 \
  VARIANTS='^gpu resident$' CUDA_VISIBLE_DEVICES=0 timeout $left bash bench/e2e/run.sh > $R/e2e.txt 2>&1
echo "e2e rc=$? at $(el)s" | tee -a $OUT/steps.txt; tail -40 $R/e2e.txt
cp $R/e2e/kernels-synth2m-gin.json $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
