#!/usr/bin/env bash
# Session 6: the tail (bmm_wgmma.cu TAIL, TAILEPI) and the evict-first int32
# stores (L2HINT). Runs on the GPU host from the repository root after
# `make gpu-test`, carrying build/gpu; logs under $OUT. PHASES, in order:
#   test:  TestConformance (auto, mma, ws1, out32; full) and the other
#          tests, TestLargeVsGeneric's kernels spread over five processes
#   san:   compute-sanitizer memcheck and racecheck (SANRUNS: one process per
#          pattern and tool), -short
#   large: BenchmarkLarge and BenchmarkBlockDiag (the launches the new
#          defaults reach) with the cuBLAS/cuSPARSE baselines (baselines.py)
set -uo pipefail
. "$(dirname "$0")/host.sh"
PHASES=${PHASES:-"test san large"}
for ph in $PHASES; do
  t0=$(date +%s)
  case $ph in
  test)
    rm -f /tmp/t-*.log
    for c in auto mma ws1 out32; do
      timeout ${TTIME:-300} $T -test.v -test.run "TestConformance/$c" -test.timeout 400s >/tmp/t-c-$c.log 2>&1 &
    done
    # TestLargeVsGeneric's kernels by the residue of their name's length:
    # five processes of about equal share, every kernel in one of them.
    for i in 0 1 2 3 4; do
      timeout ${TTIME:-300} $T -test.v -test.run "TestLargeVsGeneric/^(.{$i}|.{$((i + 5))}|.{$((i + 10))}|.{$((i + 15))}|.{$((i + 20))})\$" -test.timeout 400s >/tmp/t-l-$i.log 2>&1 &
    done
    # (From tcu/, as run.sh: TestSymbolsResolved reads the package's sources.)
    (cd tcu && timeout ${TTIME:-300} ../$T -test.v -test.run '^Test([^CL]|C[^o]|Co[^n]|Con[^f]|L[^a])' -test.timeout 400s >/tmp/t-other.log 2>&1) &
    wait
    cat /tmp/t-*.log >"$OUT/test.log"
    grep -E "^(--- |ok|FAIL|panic)|^    --- FAIL|tcu:" "$OUT/test.log" | sort | uniq -c
    echo "passes: $(grep -c -- '--- PASS' "$OUT/test.log"), fails: $(grep -c -- '--- FAIL' "$OUT/test.log"), skips: $(grep -c -- '--- SKIP' "$OUT/test.log")"
    echo "TestLargeVsGeneric kernels passed: $(grep -c -- '^    --- PASS: TestLargeVsGeneric/' "$OUT/test.log")"
    ;;
  san)
    SANTIME=${SANTIME:-200} sanitize ${SANRUNS:-'TestLargeVsGeneric/^(bn256|ws1bn256|tail3tebn256|tail1|tail2bn256)$' 'TestLargeVsGeneric/^(tail8ks2bn256|tail16ks1|tail3reg0|tail3epi0|notailbn256)$' 'TestLargeVsGeneric/^(out32tail3tebn256|out32epi0|ws1)$' 'TestZeroTileJumping|TestBatch|TestOut16Bound'}
    ;;
  large)
    timeout ${LTIME:-200} $T -test.run '^$' -test.bench "${LARGE:-Large|BlockDiag}" -test.benchtime 1x -test.v >"$OUT/bench.log" 2>&1
    grep -E "^Benchmark.*us/launch|FAIL|panic" "$OUT/bench.log" | awk '{print $1, $5, $6, $(NF-3), $(NF-2)}' | sed 's/-16 / /'
    timeout 120 python3 bench/gpu/baselines.py --json "$OUT/base.json" --qgtc "$OUT/bench.log" >"$OUT/table.md" 2>&1
    tail -3 "$OUT/table.md"
    ;;
  esac
  echo "== $ph took $(($(date +%s) - t0)) s"
done
host_done
