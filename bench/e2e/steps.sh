# Sourced by the device calls' scripts bench/e2e/h200-1128-e*/call.sh, from the
# repository root, with OUT set and B the carried build folder:
#   call_head          T0 and el (seconds since the script began), $R (raw, under
#                      $OUT), the host's line in $OUT/steps.txt
#   tcu_tests MAXS     the tcu tests of B's tcu.test on the GPU (backend, plans,
#                      uploads) into $OUT/tcu-test.log; the count into steps.txt
#   carried DIR        the binaries carried xz-compressed in DIR into $B, the models
#                      of build/g1dx (if carried) into build/g1data, and $A (under $OUT)
#   e2e NAME VAR=...   bench/e2e/run.sh's speed step on synth2m (40 parts), GCN,
#                      GIN and SAGE at 4 bits, 5 passes, with the VARs set, cut
#                      at E2E_END seconds (default 570); runs-NAME.jsonl in $OUT
# Calls e1-e3 ran with these steps written out in each script (e1 also copied
# each run's table.md); they moved here unchanged afterwards.
call_head() {
  T0=$SECONDS
  R=$OUT/raw; mkdir -p $R
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
}
el() { echo $((SECONDS - T0)); }
tcu_tests() {
  (cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout $1 ../$B/tcu.test -test.v -test.short \
    -test.run 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed' > $OUT/tcu-test.log 2>&1
   echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
  grep -E '^\s*--- FAIL' $OUT/tcu-test.log | head
}
e2e() {
  local name=$1; shift
  env OUT=$R/$name STEPS=speed B=$B DATA=build/c10data SPEED='synth2m:40' CURVE=4 MODELS='gcn gin sage' PASSES=5 "$@" \
    timeout $((${E2E_END:-570} - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep "^synth2m" $R/$name.txt | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $OUT/runs-$name.jsonl 2>/dev/null
}
carried() {
  mkdir -p $B
  for f in $1/*.xz; do local n=$(basename $f .xz)
    python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' $f $B/$n && chmod +x $B/$n; done
  [ -f build/g1dx/g1data.tar.xz ] && python3 -c 'import tarfile; tarfile.open("build/g1dx/g1data.tar.xz").extractall("build")'
  A=$OUT/a; mkdir -p $A
}
