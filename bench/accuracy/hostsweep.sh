#!/usr/bin/env bash
# Runs qgtc sweeps on the GPU host's CPU cores, one seed a process on
# GMP cores (default 1), P at a time: each line of JOBS is "DATASET MODEL
# SEED BITS [FLAGS...]", each run writes $R/<dataset>-<model>-s<seed><tag>/ (the
# sweep's files, cmd.txt, err.txt, secs.txt). The model cache is
# build/acc/cache, unpacked from the carried build/acc/cache.tgz and packed
# into $OUT/cache.tgz at the end, so a later call resumes unfinished sweeps
# from their cached models. Every run is cut at END seconds of the call. P
# runs at once (default: one a core), each with GOMAXPROCS=GMP.
# Usage (from a call script that sourced bench/e2e/steps.sh and ran
# call_head): hostsweep JOBS END
hostsweep() {
  local jobs=$1 end=$2
  # The workers are new shells (their SECONDS start at 0): they see the
  # deadline as a clock time.
  export QGTC_DATA=$PWD/testdata QGTC_CACHE=$PWD/build/acc/cache GOMAXPROCS=${GMP:-1} Q=$PWD/build/acc/qgtc R DEADLINE=$(($(date +%s) + end - $(el)))
  mkdir -p $QGTC_CACHE
  [ -f build/acc/cache.tgz ] && tar xzf build/acc/cache.tgz -C $QGTC_CACHE
  one() {
    local ds=$1 model=$2 seed=$3 bits=$4; shift 4
    local tag=$(echo "$*" | tr -c 'a-z0-9.\n' '_' | sed 's/^_*//')
    local dir=$R/$ds-$model-s$seed${tag:+-$tag}
    mkdir -p $dir
    local left=$((DEADLINE - $(date +%s)))
    [ $left -lt 10 ] && { echo "not started" > $dir/secs.txt; return; }
    echo "qgtc sweep --dataset $ds --model $model --bits $bits --seed $seed --seeds 1 $*" > $dir/cmd.txt
    local t=$SECONDS
    timeout $left $Q sweep --dataset $ds --model $model --bits $bits --seed $seed --seeds 1 --out $dir --quiet "$@" > $dir/table.txt 2> $dir/err.txt
    echo "rc=$? secs=$((SECONDS - t))" > $dir/secs.txt
  }
  export -f one
  # xargs -L joins a line that ends in a blank to the next one.
  grep -v '^#' $jobs | sed 's/[[:space:]]*$//' | grep . | xargs -P ${P:-$(nproc)} -L 1 bash -c 'one "$@"' _
  tar czf $OUT/cache.tgz -C $QGTC_CACHE .
  echo "sweeps done at $(el)s: $(grep -l 'rc=0' $R/*/secs.txt | wc -l) finished, $(grep -L 'rc=0' $R/*/secs.txt | wc -l) not" | tee -a $OUT/steps.txt
}
