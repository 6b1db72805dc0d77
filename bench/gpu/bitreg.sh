#!/usr/bin/env bash
# Session 5b: MulBit packed by rows from the registers (bmm_wgmma.cu BITREG).
# Runs on the GPU host from the repository root after `make gpu-test`,
# carrying build/gpu and build/kcache.tgz; logs under $OUT. PHASES, in order:
#   test:  TestLargeVsGeneric in five processes (every kernel), TestConformance/auto
#          (full), and a first BenchmarkBitReg pass (compiles and checks every variant)
#   san:   compute-sanitizer memcheck and racecheck on the register-path kernels of
#          TestLargeVsGeneric (SANRUN), -short
#   bench: BenchmarkBitReg alone, BENCHN passes (old and new side by side, codes checked)
#   large: BenchmarkLarge's MulBit rows (LARGE regexp)
# KCACHE=1 writes the kernel cache to $OUT/kcache.tgz.
set -uo pipefail
. "$(dirname "$0")/host.sh"
PHASES=${PHASES:-"test bench"}
for ph in $PHASES; do
  t0=$(date +%s)
  case $ph in
  test)
    i=0
    for R in '^(reg|reg0|auto|nows|bn256)$' '^(regws1bn256|regws1p1|ws1bn256|p0|p1|ws1p0)$' '^(regbn64|regbn128|bn16|ws1bn16|epi|epi0|reg2|reg2bn64|reg2bn128)$' \
      '^(ws1|mma|ks1|ks2s3|wg1ks3)$' '^(epiks3s3|epiwg1ks2|ws2|ws2ks3|ws1ks2s3epi)$'; do
      i=$((i + 1))
      timeout ${TTIME:-240} $T -test.v -test.run "TestLargeVsGeneric/$R" -test.timeout 400s >/tmp/lvg$i.log 2>&1 &
    done
    timeout ${TTIME:-240} $T -test.v -test.run 'TestConformance/auto' -test.timeout 400s >/tmp/conf.log 2>&1 &
    timeout ${TTIME:-240} $T -test.run '^$' -test.bench BitReg -test.benchtime 1x -test.v >/tmp/warm.log 2>&1 &
    wait
    cat /tmp/lvg*.log /tmp/conf.log >"$OUT/test.log"
    cat /tmp/warm.log >>"$OUT/bench.log"
    grep -E "^(--- |ok|FAIL|PASS|panic)|^    --- FAIL|tcu:" "$OUT/test.log" | sort | uniq -c | head -40
    echo "conformance/auto passes: $(grep -c -- '--- PASS' /tmp/conf.log), fails: $(grep -c -- '--- FAIL' /tmp/conf.log)"
    grep -E "FAIL|panic|want" /tmp/warm.log | head -5
    ;;
  san)
    # SANRUNS: -test.run patterns (space-separated), one process per pattern and tool.
    sanitize ${SANRUNS:-'TestLargeVsGeneric/^(reg|regws1bn256|regws1p1|regbn64|regbn128)$'}
    ;;
  bench)
    for i in $(seq ${BENCHN:-1}); do
      timeout ${BTIME:-120} $T -test.run '^$' -test.bench BitReg -test.benchtime 1x -test.v >/tmp/b$i.log 2>&1
      echo "== pass $i" >>"$OUT/bench.log"
      cat /tmp/b$i.log >>"$OUT/bench.log"
      grep -E "^BenchmarkBitReg.*us/launch" /tmp/b$i.log | awk '{print $1, $5, $6, $(NF-3), $(NF-2)}'
      grep -E "FAIL|panic" /tmp/b$i.log | head -3
    done
    ;;
  large)
    timeout ${LTIME:-120} $T -test.run '^$' -test.bench "${LARGE:-Large/N=16384/D=256/s=[14]/(impl=auto|out=.*impl=auto)$}" -test.benchtime 1x -test.v >"$OUT/large.log" 2>&1
    grep -E "^BenchmarkLarge.*us/launch|config|FAIL|panic" "$OUT/large.log" | awk '/config/ {sub(/.*config: /, ""); print "   ", $0; next} {print $1, $5, $6, $(NF-3), $(NF-2)}'
    ;;
  esac
  echo "== $ph took $(($(date +%s) - t0)) s"
done
host_done
