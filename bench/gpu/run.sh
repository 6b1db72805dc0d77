#!/usr/bin/env bash
# Runs on the GPU host (device tool), from the repository root, after
# `make gpu-test` built build/gpu here. Writes logs to $OUT (default ./out).
#   STEPS="nvcc test bench base sanitize" bash bench/gpu/run.sh
# nvcc:     compile each kernel variant with nvcc too (ptxas register/spill report)
# test:     ./tcu.test (conformance against the CPU, bit for bit, every path)
# bench:    go benchmarks (BENCH regexp, default all)
# base:     cuBLAS/cuSPARSE baselines, merged with the bench log into one table
# sanitize: compute-sanitizer memcheck and racecheck on a conformance run
set -uo pipefail
. "$(dirname "$0")/host.sh"
STEPS=${STEPS:-"nvcc test bench base"}
BENCH=${BENCH:-.}
TESTRUN=${TESTRUN:-.}
ls /usr/local/cuda/lib64/libnvrtc* >>"$OUT/env.txt" 2>&1
for step in $STEPS; do
  t0=$(date +%s)
  case $step in
  nvcc)
    K=tcu/kernels
    {
      nvcc --version | tail -1
      nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -o /tmp/mma.cubin -Xptxas -v --fmad=false \
        -DABITS=1 -DBBITS=4 -DBM=64 -DBN=64 -DWM=32 -DWN=32 -DSTAGES=3 -I$K $K/bmm_mma.cu 2>&1
      nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -o /tmp/wg.cubin -Xptxas -v --fmad=false \
        -DABITS=1 -DBBITS=4 -DBN=64 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DWS=1 -DDESC_LBO=128 -DDESC_SBO=256 -I$K $K/bmm_wgmma.cu 2>&1
      cuobjdump -sass /tmp/wg.cubin | grep -c -E "BGMMA|HGMMA" || true
      cuobjdump -sass /tmp/mma.cubin | grep -c BMMA || true
    } >"$OUT/nvcc.log" 2>&1
    tail -20 "$OUT/nvcc.log"
    ;;
  test)
    # The conformance suite per kernel path, in parallel processes (NVRTC
    # compiles of the variants are CPU-bound; the on-disk cache is shared),
    # with a benchmark pass in the background that only fills the cache.
    $T -test.v -test.run 'TestConformance/auto' -test.timeout 200s >/tmp/t-auto.log 2>&1 &
    $T -test.v -test.run 'TestConformance/mma' -test.timeout 200s >/tmp/t-mma.log 2>&1 &
    $T -test.v -test.run 'TestConformance/(ws1|out32)' -test.timeout 200s >/tmp/t-ws.log 2>&1 &
    # From the package directory: TestSymbolsResolved reads the sources.
    (cd tcu && ../$T -test.v -test.run '^Test([^C]|C[^o]|Co[^n]|Con[^f])' -test.timeout 200s >/tmp/t-other.log 2>&1) &
    [ -n "${WARM:-1}" ] && $T -test.run '^$' -test.bench "$BENCH" -test.benchtime 1x -test.timeout 200s >/dev/null 2>&1 &
    wait
    cat /tmp/t-auto.log /tmp/t-mma.log /tmp/t-ws.log /tmp/t-other.log >"$OUT/test.log"
    grep -E "^(--- |ok|FAIL|PASS|panic)|^    --- |tcu:" "$OUT/test.log" | tail -40
    ;;
  bench)
    timeout ${BENCHTIME:-200} ./build/gpu/tcu.test -test.run '^$' -test.bench "$BENCH" -test.benchtime 1x -test.v >"$OUT/bench.log" 2>&1
    grep -E "^Benchmark|config|FAIL|panic" "$OUT/bench.log" | tail -5
    ;;
  base)
    timeout 60 python3 bench/gpu/baselines.py --json "$OUT/base.json" --qgtc "$OUT/bench.log" >"$OUT/table.md" 2>&1
    tail -5 "$OUT/table.md"
    ;;
  sanitize)
    for tool in memcheck racecheck; do
      timeout ${SANTIME:-60} compute-sanitizer --tool $tool --error-exitcode 3 ./build/gpu/tcu.test -test.run "${SANRUN:-TestLargeVsGeneric|TestBatch|TestZeroTileJumping}" -test.short >/tmp/san-$tool.log 2>&1
      echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|^ok|FAIL|^PASS' /tmp/san-$tool.log | tail -3 | tr '\n' ' ')"
      cat /tmp/san-$tool.log >>"$OUT/san.log"
    done
    ;;
  esac
  echo "== $step took $(($(date +%s) - t0)) s"
done
host_done
