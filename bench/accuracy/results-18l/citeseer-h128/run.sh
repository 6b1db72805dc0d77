#!/usr/bin/env bash
# CiteSeer's GIN from the defaults after the recipe made it 128 wide: every width on seeds 0-4,
# fp32 (and PTQ at 8 bits) on seeds 5-9. This VM, two runs at a time, one core each, a private
# model cache. build/s17/qgtc2 is a build of the recipe's commit.
cd "$(dirname "$0")/../../../.."
D=bench/accuracy/results-18l/citeseer-h128
export QGTC_DATA=$PWD/testdata QGTC_CACHE=/tmp/cache18l-h128 GOMAXPROCS=1
one() {
  s=$1 bits=$2; shift 2
  dir=$D/citeseer-gin-s$s${1:+-fp32}; mkdir -p $dir
  echo "qgtc sweep --dataset citeseer --model gin --bits $bits --seed $s --seeds 1 $*" > $dir/cmd.txt
  t=$SECONDS
  build/s17/qgtc2 sweep --dataset citeseer --model gin --bits $bits --seed $s --seeds 1 "$@" --out $dir --quiet > $dir/table.txt 2> $dir/err.txt
  echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt
}
export -f one; export D
(for s in 0 1 2 3 4; do echo "$s 8,4,2,1"; done; for s in 5 6 7 8 9; do echo "$s 8 --qat-epochs 0"; done) | xargs -P 2 -L 1 bash -c 'one "$@"' _
