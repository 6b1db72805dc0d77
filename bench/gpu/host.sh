# Sourced by the GPU-host scripts (run.sh, tune.sh, bitreg.sh) before their
# steps: logs go to $OUT (default ./out); a kernel cache from an earlier run
# (build/kcache.tgz, carried) is unpacked into $QGTC_CACHE_DIR, which saves
# the NVRTC compiles; the GPU's clocks go to $OUT/env.txt; T is the test
# binary that `make gpu-test` built. host_done writes this run's cache to
# $OUT/kcache.tgz when KCACHE is set.
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
