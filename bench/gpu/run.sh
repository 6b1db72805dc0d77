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
OUT=${OUT:-out}
mkdir -p "$OUT"
STEPS=${STEPS:-"nvcc test bench base"}
BENCH=${BENCH:-.}
TESTRUN=${TESTRUN:-.}
export QGTC_CACHE_DIR=${QGTC_CACHE_DIR:-/tmp/qgtc-kernels}
export PYTHONUNBUFFERED=1
# A kernel cache from an earlier run (kept in build/, carried) saves the compiles.
mkdir -p "$QGTC_CACHE_DIR"
[ -f build/kcache.tgz ] && tar xzf build/kcache.tgz -C "$QGTC_CACHE_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$OUT/env.txt" 2>&1
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
        -DABITS=1 -DBBITS=4 -DBN=64 -DNP=256 -DWGS=2 -DSTAGES=4 -DDESC_LBO=128 -DDESC_SBO=256 -I$K $K/bmm_wgmma.cu 2>&1
      cuobjdump -sass /tmp/wg.cubin | grep -c -E "BGMMA|HGMMA" || true
      cuobjdump -sass /tmp/mma.cubin | grep -c BMMA || true
    } >"$OUT/nvcc.log" 2>&1
    tail -20 "$OUT/nvcc.log"
    ;;
  test)
    ./build/gpu/tcu.test -test.v -test.run "$TESTRUN" -test.timeout 400s >"$OUT/test.log" 2>&1
    grep -E "^(=== RUN|---|ok|FAIL|PASS|panic)|tcu:|Error" "$OUT/test.log" | grep -v "=== RUN" | grep -vE "^    --- PASS" | tail -40
    ;;
  bench)
    ./build/gpu/tcu.test -test.run '^$' -test.bench "$BENCH" -test.benchtime 1x -test.v -test.timeout 500s >"$OUT/bench.log" 2>&1
    grep -E "^Benchmark|config|FAIL|panic" "$OUT/bench.log" | tail -5
    ;;
  base)
    python3 bench/gpu/baselines.py --json "$OUT/base.json" --qgtc "$OUT/bench.log" >"$OUT/table.md" 2>&1
    tail -5 "$OUT/table.md"
    ;;
  sanitize)
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 3 ./build/gpu/tcu.test -test.run "${SANRUN:-TestLargeVsGeneric|TestBatch|TestConformance/auto/(bitpairs|mulbit)}" -test.short >"$OUT/san-$tool.log" 2>&1
      echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|^ok|FAIL' "$OUT/san-$tool.log" | tail -3 | tr '\n' ' ')"
    done
    ;;
  esac
  echo "== $step took $(($(date +%s) - t0)) s"
done
tar czf "$OUT/kcache.tgz" -C "$QGTC_CACHE_DIR" . 2>/dev/null
