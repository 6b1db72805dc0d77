#!/usr/bin/env bash
# GIN from the defaults (the recipe's mean aggregation) on this VM, two runs at a time, one core
# each, a private model cache: every width on Cora, CiteSeer and the two Coauthor Physics seeds
# call y1 cut, and CiteSeer fp32 on seeds 5-9. build/s17/qgtc is a build of 7c6e542.
cd "$(dirname "$0")/../../.."
D=bench/accuracy/results-18l
export QGTC_DATA=$PWD/testdata QGTC_CACHE=/tmp/cache18l-final GOMAXPROCS=1
one() {
  ds=$1 s=$2 bits=$3; shift 3
  dir=$D/$ds-gin-s$s${1:+-fp32}; mkdir -p $dir
  echo "qgtc sweep --dataset $ds --model gin --bits $bits --seed $s --seeds 1 $*" > $dir/cmd.txt
  t=$SECONDS
  build/s17/qgtc sweep --dataset $ds --model gin --bits $bits --seed $s --seeds 1 "$@" --out $dir --quiet > $dir/table.txt 2> $dir/err.txt
  echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt
}
export -f one; export D
grep -v '^#' $D/jobs.txt | xargs -P 2 -L 1 bash -c 'one "$@"' _
echo done > $D/done.txt
