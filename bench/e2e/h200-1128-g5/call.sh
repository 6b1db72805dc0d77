#!/usr/bin/env bash
# call g5 (1 x H200, 16 cores), tree of this commit (qgtc and export, carried xz-compressed in
# build/g5x): #20's training epochs of GCN and GAT on the GPU against PyG, on the final tree (the
# device thread's hand-over changed after call g1 measured them).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/fpgpu
call_head
mkdir -p $B
for f in build/g5x/*.xz; do n=$(basename $f .xz)
  python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' $f $B/$n && chmod +x $B/$n; done
timeout 150 env OUT=$OUT/train-bench STEPS=bench MODELS="gcn gat" EPOCHS=20 DEVICES=gpu bash bench/train/run.sh > $OUT/train-bench.txt 2>&1
echo "train bench rc=$? at $(el)s" | tee -a $OUT/steps.txt; cat $OUT/train-bench/table.md >> $OUT/steps.txt 2>/dev/null
cp $OUT/train-bench/logs/runs.tsv $OUT/ 2>/dev/null; rm -rf $OUT/train-bench/logs
echo "done $(el)s"
