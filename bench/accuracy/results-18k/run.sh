#!/usr/bin/env bash
# GIN fp32 on Coauthor CS and Physics, seeds 0-4, from the defaults; a private model cache.
cd "$(dirname "$0")/../../.."
D=bench/accuracy/results-18k
export QGTC_DATA=$PWD/testdata QGTC_CACHE=/tmp/cache18k GOMAXPROCS=1
one() {
  ds=$1 s=$2
  dir=$D/$ds-gin-s$s; mkdir -p $dir
  echo "qgtc sweep --dataset $ds --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1" > $dir/cmd.txt
  t=$SECONDS
  build/s16/qgtc sweep --dataset $ds --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1 --out $dir --quiet > $dir/table.txt 2> $dir/err.txt
  echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt
}
export -f one; export D
printf '%s\n' "coauthor_cs 0" "coauthor_physics 0" "coauthor_cs 1" "coauthor_physics 1" "coauthor_cs 2" "coauthor_physics 2" "coauthor_cs 3" "coauthor_physics 3" "coauthor_cs 4" "coauthor_physics 4" | xargs -P 2 -L 1 bash -c 'one "$@"' _
echo done > $D/done.txt
