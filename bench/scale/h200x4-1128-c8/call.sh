#!/usr/bin/env bash
# call 8 (4 GPUs): #21 2c8665c (uploads filled off the device thread) against 8f161a7 on 1/2/4 GPUs, traces on a 10M file; tcu tests
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-540}
call_setup c8
nvidia-smi topo -m > $L/topo.txt 2>&1; lscpu > $L/lscpu.txt 2>&1
M=build/c8/model-a4w4.safetensors NEW=build/c8/qgtc OLD=build/c8/qgtc-c7
unxz build/c8/qgtc-c7.xz $OLD; unxz build/c8/tcu.test.xz build/c8/tcu.test
# the tcu tests on the last GPU while the graph is generated (CPU-bound)
( cd tcu && CUDA_VISIBLE_DEVICES=3 QGTC_CACHE_DIR=$W/kt timeout 200 ../build/c8/tcu.test -test.v -test.short > $L/tcu-test.log 2>&1; echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $L/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $L/tcu-test.log) failed at $(el)s" >> $OUT/steps.txt ) &
big=$W/big.qgpb mid=$W/mid.qgpb
gen100 $NEW $big
wait
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 4 --json --quiet)
for r in 1 2; do
  run big1-new-$r 60 $NEW "${b[@]}" --device gpu
  run big2-new-$r 45 $NEW "${b[@]}" --device gpu:0,1
  run big4-new-$r 45 $NEW "${b[@]}" --device gpu:all
  run big1-old-$r 60 $OLD "${b[@]}" --device gpu
  run big2-old-$r 45 $OLD "${b[@]}" --device gpu:0,1
  run big4-old-$r 45 $OLD "${b[@]}" --device gpu:all
done
rm -f $big
run gen10 40 $NEW data synth --model planted --nodes 10000000 --communities 10000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $mid --parts 200 --quiet
m=(infer --packed $mid --weights $M --other-data --agg sparse --passes 2 --json --quiet)
QGTC_TRACE=$W/mid1.trace run mid1-trace 30 $NEW "${m[@]}" --device gpu
QGTC_TRACE=$W/mid4.trace run mid4-trace 30 $NEW "${m[@]}" --device gpu:all
python3 -c 'import lzma,sys
for n in sys.argv[2:]: open(sys.argv[1]+"/"+n+".xz","wb").write(lzma.compress(open("/tmp/c8/"+n,"rb").read(), preset=6))' $OUT mid1.trace mid4.trace
passes_table $(for r in 1 2; do for v in new old; do for g in 1 2 4; do echo big$g-$v-$r; done; done; done) mid1-trace mid4-trace
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
