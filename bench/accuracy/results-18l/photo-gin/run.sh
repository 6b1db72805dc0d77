#!/usr/bin/env bash
# Amazon Photo's GIN (the recipe's mean), fp32 and PTQ at 8 bits, seeds 7 and 8: the two call y3's
# deadline cut. This VM, one core each, a private model cache; build/s17/qgtc2 is a build of c3b7140.
cd "$(dirname "$0")/../../../.."
D=bench/accuracy/results-18l/photo-gin
export QGTC_DATA=$PWD/testdata QGTC_CACHE=/tmp/cache18l-photo GOMAXPROCS=1
for s in 7 8; do
  (dir=$D/amazon_photo-gin-s$s; mkdir -p $dir
   echo "qgtc sweep --dataset amazon_photo --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1" > $dir/cmd.txt
   t=$SECONDS
   build/s17/qgtc2 sweep --dataset amazon_photo --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1 --out $dir --quiet > $dir/table.txt 2> $dir/err.txt
   echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt) &
done
wait
