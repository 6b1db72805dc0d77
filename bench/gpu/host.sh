# Sourced by the GPU-host scripts (run.sh, tune.sh, bitreg.sh, tail.sh) before their
# steps: logs go to $OUT (default ./out); a kernel cache from an earlier run
# (build/kcache.tgz, carried) is unpacked into $QGTC_CACHE_DIR, which saves
# the NVRTC compiles; the GPU's clocks go to $OUT/env.txt; T is the test
# binary that `make gpu-test` built. host_done writes this run's cache to
# $OUT/kcache.tgz when KCACHE is set; sanitize runs the sanitizers.
OUT=${OUT:-out}
mkdir -p "$OUT"
export QGTC_CACHE_DIR=${QGTC_CACHE_DIR:-/tmp/qgtc-kernels} PYTHONUNBUFFERED=1
mkdir -p "$QGTC_CACHE_DIR"
if [ -f build/kcache.tgz ]; then tar xzf build/kcache.tgz -C "$QGTC_CACHE_DIR"; fi
T=./build/gpu/tcu.test
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$OUT/env.txt" 2>&1

host_done() {
  if [ -n "${KCACHE:-}" ]; then tar czf "$OUT/kcache.tgz" -C "$QGTC_CACHE_DIR" . 2>/dev/null; fi
}

# sanitize PATTERN...: compute-sanitizer memcheck and racecheck on the test
# binary, one process per -test.run pattern and tool, all at once, -short,
# each cut at $SANTIME seconds (default 150); prints each log's summary and
# appends the logs to $OUT/san.log.
sanitize() {
  rm -f /tmp/san-*.log
  local i=0 R tool f
  for R in "$@"; do
    i=$((i + 1))
    for tool in memcheck racecheck; do
      timeout ${SANTIME:-150} compute-sanitizer --tool $tool --error-exitcode 3 $T -test.v -test.run "$R" -test.short -test.timeout 400s >/tmp/san-$tool-$i.log 2>&1 &
    done
  done
  wait
  for f in /tmp/san-*.log; do
    echo "$f: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^ok|^FAIL|^PASS' $f | tail -3 | tr '\n' ' ')"
    cat $f >>"$OUT/san.log"
  done
}
