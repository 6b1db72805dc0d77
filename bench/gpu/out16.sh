#!/usr/bin/env bash
# Session 8: uint16 int outputs on the device (kernels/common.cuh OUT16,
# config.out16). Runs on the GPU host from the repository root after
# `make gpu-test`, carrying build/gpu; logs under $OUT. PHASES, in order:
#   quick: the uint16 bound test, TestLargeVsGeneric on the default and
#          int32 (out32) kernels of the large shapes' tile, the tail and the
#          register stores, TestBatch, TestZeroTileJumping and conformance
#          (auto, out32, mma; -short), in parallel processes
#   bench: BenchmarkTune (uint16 against int32 on the device, tails,
#          per-block phase times, summarized by tune.sh's timing step) and
#          BenchmarkLarge (impl=auto against impl=out32), one process at a
#          time
set -uo pipefail
. "$(dirname "$0")/host.sh"
PHASES=${PHASES:-"quick bench"}
for ph in $PHASES; do
  t0=$(date +%s)
  case $ph in
  quick)
    rm -f /tmp/q-*.log
    i=0
    for R in 'TestOut16Bound' 'TestLargeVsGeneric/^(auto|out32)$' 'TestLargeVsGeneric/^(bn256|out32bn256|tail3tebn256|out32tail3tebn256)$' \
      'TestLargeVsGeneric/^(mma|epi0|out32epi0|tail3epi0)$' 'TestBatch|TestZeroTileJumping' 'TestConformance/^(auto|out32)$' 'TestConformance/^mma$'; do
      i=$((i + 1))
      timeout ${QTIME:-240} $T -test.v -test.run "$R" -test.short -test.timeout 400s >/tmp/q-$i.log 2>&1 &
    done
    wait
    cat /tmp/q-*.log >"$OUT/test.log"
    grep -E "^(--- |ok|FAIL|panic)|^    --- FAIL|tcu:|wgmma on" "$OUT/test.log" | sort | uniq -c
    echo "passes: $(grep -c -- '--- PASS' "$OUT/test.log"), fails: $(grep -c -- '--- FAIL' "$OUT/test.log"), skips: $(grep -c -- '--- SKIP' "$OUT/test.log")"
    ;;
  bench)
    STEPS="tune timing" TUNE_WRAP='stdbuf -oL' TUNE_BENCH=${TUNE_BENCH:-'Tune/N=16384/D=256/s=[14]/tune=(default|out32|notail|out32notail|tail2|epi0|timing|timingout32)$'} bash "$(dirname "$0")/tune.sh"
    timeout ${LTIME:-150} $T -test.run '^$' -test.bench "${LARGE:-Large/N=16384/D=256/s=[14]/impl=(auto|out32)$}" -test.benchtime 1x -test.v >"$OUT/large.log" 2>&1
    grep -E "^Benchmark.*us/launch|config:|FAIL|panic" "$OUT/large.log" | awk '/config/ {c=$0; sub(/.*config: /, "", c); next} {print $1, $5, $6, $(NF-3), $(NF-2), "|", c}' | sed 's/-16 / /'
    ;;
  esac
  echo "== $ph took $(($(date +%s) - t0)) s"
done
host_done
