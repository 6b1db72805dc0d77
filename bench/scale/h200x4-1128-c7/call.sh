#!/usr/bin/env bash
# call 7 (4 GPUs): #21 the final tree (8f161a7) on 1/2/4 GPUs, a CPU profile of 2 GPUs and traces of 1 and 2 GPUs on a 10M file
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # call_setup, gen100, el, unxz, run, passes_table, resident_table
LIMIT=${LIMIT:-540}
call_setup c7
nvidia-smi topo -m > $L/topo.txt 2>&1; lscpu > $L/lscpu.txt 2>&1
Q=build/c7/qgtc M=build/scale/model-a4w4.safetensors
big=$W/big.qgpb mid=$W/mid.qgpb
gen100 $Q $big
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 3 --json --quiet)
run big1 60 $Q "${b[@]}" --device gpu
run big2 45 $Q "${b[@]}" --device gpu:0,1
run big4 45 $Q "${b[@]}" --device gpu:all
run big2b 45 $Q "${b[@]}" --device gpu:0,2
QGTC_CPUPROFILE=$OUT/big2.pprof run big2-prof 45 $Q "${b[@]}" --device gpu:0,1
QGTC_CPUPROFILE=$OUT/big1.pprof run big1-prof 60 $Q "${b[@]}" --device gpu
rm -f $big
run gen10 40 $Q data synth --model planted --nodes 10000000 --communities 10000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $mid --parts 200 --quiet
m=(infer --packed $mid --weights $M --other-data --agg sparse --passes 2 --json --quiet)
QGTC_TRACE=$W/mid1.trace run mid1-trace 30 $Q "${m[@]}" --device gpu
QGTC_TRACE=$W/mid2.trace run mid2-trace 30 $Q "${m[@]}" --device gpu:0,1
run mid1 30 $Q "${m[@]}" --device gpu
run mid2 30 $Q "${m[@]}" --device gpu:0,1
python3 -c 'import lzma,sys
for n in sys.argv[2:]: open(sys.argv[1]+"/"+n+".xz","wb").write(lzma.compress(open("/tmp/c7/"+n,"rb").read(), preset=6))' $OUT mid1.trace mid2.trace
passes_table big1 big2 big4 big2b big2-prof big1-prof mid1 mid2 mid1-trace mid2-trace
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
