#!/usr/bin/env bash
# call f3 (1 x H200, 16 cores), tree of this commit (build/fpgpu from `make fpgpu-test`, carried
# xz-compressed in build/f3x with build/f3's older binaries):
#  1. #20: the GPU tests of fp32 training on the device (bench/train/run.sh STEPS=test).
#  2. #19: Coauthor Physics one-shot `qgtc infer --passes 8` at 16 cores, 6 processes each of
#     c3e0af1 (qgtc-c3, before the merged batch was built on the cores) and this tree, in turn;
#     2 each at 8 and 1 cores.
#  3. #16: the tcu GPU tests of the products (packBits changed: every MulBit path), backend, plans.
#  4. #16: synth2m GIN resident, f2's tree (qgtc-f2) against this one (packBits), per-kernel
#     times, PyG's GIN on the same partition.
#  5. #20: a full-batch training epoch against PyG (bench/train/run.sh STEPS=bench, GCN), in what
#     time is left.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, e2e
B=build/fpgpu E2E_END=470
call_head
# The binaries travel xz-compressed (build/f3x) to fit the call's 64 MiB.
mkdir -p build/fpgpu build/f3
for f in build/f3x/*.xz; do n=$(basename $f .xz)
  case $n in fpgpu-*) o=build/fpgpu/${n#fpgpu-};; *) o=build/f3/$n;; esac
  python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' $f $o && chmod +x $o; done
mkdir -p $OUT/a
timeout 120 env OUT=$OUT/a/train-test STEPS=test bash bench/train/run.sh > $OUT/a/train-test.txt 2>&1
echo "train tests rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "^test |--- FAIL|^FAIL|^ok" $OUT/a/train-test.txt | head -20 | tee -a $OUT/steps.txt

W=/tmp/f3p; mkdir -p $W; export QGTC_DATA=$PWD/testdata QGTC_CACHE=$W/cache
GOMAXPROCS=16 $B/qgtc partition --dataset coauthor_physics --parts 18 --out $W/phys.part --json --quiet > $OUT/a/part.json
GOMAXPROCS=16 $B/qgtc infer --dataset coauthor_physics --partition $W/phys.part --bits 4 --epochs 0 --qat-epochs 0 --json --quiet > $OUT/a/calib.json
M=$(ls $W/cache/models/coauthor_physics-gcn-*-a4w4.safetensors | head -1)
os=(infer --dataset coauthor_physics --partition $W/phys.part --weights $M --json --quiet --passes 8 --device cpu)
for i in 1 2 3 4 5 6; do
  for b in c3 new; do q=build/f3/qgtc-c3; [ $b = new ] && q=$B/qgtc
    GOMAXPROCS=16 timeout 20 $q "${os[@]}" > $OUT/a/os16-$b-$i.json 2>> $OUT/a/os.err; done
done
for c in 8 1; do for i in 1 2; do for b in c3 new; do q=build/f3/qgtc-c3; [ $b = new ] && q=$B/qgtc
  GOMAXPROCS=$c timeout 20 $q "${os[@]}" > $OUT/a/os$c-$b-$i.json 2>> $OUT/a/os.err; done; done; done
echo "oneshot done at $(el)s" | tee -a $OUT/steps.txt
unset QGTC_DATA QGTC_CACHE

(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 150 ../$B/tcu.test -test.v -test.short \
  -test.run 'TestBackendSuite|TestBackendProducts|TestBackendChain|TestConformance|TestPlanOnDevice|TestPlanReplayOnDevice|TestZeroTileJumping' \
  > $OUT/a/tcu-test.log 2>&1
 echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/a/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/a/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $OUT/a/tcu-test.log | head | tee -a $OUT/steps.txt

e2e f2 QGTC=build/f3/qgtc-f2 PYG=0 MODELS=gin VARIANTS='^gpu resident$'
e2e new QGTC=$B/qgtc PYG_REPS=5 MODELS=gin VARIANTS='^gpu resident$' KERNELS=1 SYNTH_PART=/tmp/synth2m.part
cp $R/new/pyg-synth2m.json $R/new/table.md $R/new/kernels-*.json $OUT/a/ 2>/dev/null; cp $R/f2/table.md $OUT/a/table-f2.md 2>/dev/null

left=$((585 - $(el)))
if ((left > 30)); then
  timeout $left env OUT=$OUT/a/train-bench STEPS=bench MODELS=gcn EPOCHS=20 CPU_EPOCHS=2 bash bench/train/run.sh > $OUT/a/train-bench.txt 2>&1
  echo "train bench rc=$? at $(el)s" | tee -a $OUT/steps.txt
fi
cp $OUT/steps.txt $OUT/a/
tar czf $OUT/f3.tgz -C $OUT a raw 2>/dev/null; rm -rf $OUT/a $R
echo "done $(el)s"
