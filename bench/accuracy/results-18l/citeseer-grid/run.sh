#!/usr/bin/env bash
# GIN (the recipe's mean) on CiteSeer over a small grid, fp32 (and PTQ at 8 bits), on this VM: one
# run a core, P at a time (default 1), a private model cache. Each line of $1 is "SEED FLAGS...".
# build/s17/qgtc is a build of 0c1bf47.
cd "$(dirname "$0")/../../../.."
D=bench/accuracy/results-18l/citeseer-grid
export QGTC_DATA=$PWD/testdata QGTC_CACHE=/tmp/cache18l-grid GOMAXPROCS=1
one() {
  s=$1; shift
  tag=$(echo "$*" | tr -c 'a-z0-9.\n' '_' | sed 's/^_*//')
  dir=$D/raw/citeseer-gin-s$s${tag:+-$tag}; mkdir -p $dir
  echo "qgtc sweep --dataset citeseer --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1 $*" > $dir/cmd.txt
  t=$SECONDS
  build/s17/qgtc sweep --dataset citeseer --model gin --bits 8 --qat-epochs 0 --seed $s --seeds 1 "$@" --out $dir --quiet > $dir/table.txt 2> $dir/err.txt
  echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt
}
export -f one; export D
grep -v '^#' $1 | sed 's/[[:space:]]*$//' | grep . | xargs -P ${P:-1} -L 1 bash -c 'one "$@"' _
