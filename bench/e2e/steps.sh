# Sourced by the device calls' scripts bench/e2e/h200-1128-*/call.sh, from the
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
#   tcu_run SECS PATTERN LOG [VAR=...]
#                      B's tcu.test -test.run PATTERN on the GPU (with the VARs
#                      set) into LOG; the count and the failures into steps.txt
#   sanitize SECS PATTERN
#                      compute-sanitizer memcheck and racecheck side by side (a
#                      kernel cache each) on tcu.test -test.run PATTERN, logs in $A
#   small NAME END VAR=...
#                      run.sh's speed step on Physics and Computers (build/g1data),
#                      GCN, GIN and SAGE at 4 bits, with the VARs set, cut at END
#                      seconds; its runs, PyG, kernels and table into $A
#   synth NAME END VAR=...
#                      the same on synth2m (build/c10data, 40 parts, 5 passes, no PyG)
#   kept NAME END VAR=...
#                      small, with the step's op-by-op kernels and printed lines
#                      kept in $A/k-NAME (small's copies share names across steps)
# Calls h1-h4 ran with tcu_run, sanitize, small and synth written out in each
# script (h1's sanitizers shared one kernel cache); they moved here afterwards.
# Calls m1-m5 defined kept in each script (m5's without the kernels' move: it
# asked for none); it moved here afterwards.
# Calls e1-e3 ran with these steps written out in each script (e1 also copied
# each run's table.md); they moved here unchanged afterwards.
call_head() {
  T0=$SECONDS
  R=$OUT/raw; mkdir -p $R
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
}
el() { echo $((SECONDS - T0)); }
tcu_tests() { tcu_run $1 'TestBackend|TestPlan|TestStagedUploads|TestUploadRing|TestAggKernelsListed' $OUT/tcu-test.log; }
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
tcu_run() {
  local secs=$1 pat=$2 log=$3; shift 3
  (cd tcu && env QGTC_CACHE_DIR=/tmp/kt "$@" timeout $secs ../$B/tcu.test -test.v -test.short -test.run "$pat" > $log 2>&1
   echo "tcu.test${*:+ $*} rc=$? $(grep -cE '^\s*--- PASS' $log) passed, $(grep -cE '^\s*--- FAIL' $log) failed, at $(el)s" | tee -a $OUT/steps.txt)
  grep -E '^\s*--- FAIL' $log | head | tee -a $OUT/steps.txt
}
sanitize() {
  for tool in memcheck racecheck; do
    (cd tcu && QGTC_CACHE_DIR=/tmp/kt2-$tool timeout $1 compute-sanitizer --tool $tool --error-exitcode 3 ../$B/tcu.test -test.run "$2" -test.short > $A/san-$tool.log 2>&1
     echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $A/san-$tool.log | tail -1) at $(el)s" | tee -a $OUT/steps.txt) &
  done
  wait
}
speed() {
  local name=$1 end=$2 pat=$3; shift 3
  env OUT=$R/$name STEPS=speed B=$B CURVE=4 MODELS='gcn gin sage' "$@" \
    timeout $((end - $(el))) bash bench/e2e/run.sh > $R/$name.txt 2>&1
  echo "$name rc=$? at $(el)s" | tee -a $OUT/steps.txt; grep -E "$pat" $R/$name.txt | cut -c1-300 | tee -a $OUT/steps.txt
  cp $R/$name/runs.jsonl $A/runs-$name.jsonl 2>/dev/null; cp $R/$name/pyg-*.json $R/$name/kernels-*.json $A/ 2>/dev/null
  cp $R/$name/table.md $A/table-$name.md 2>/dev/null
}
small() { local name=$1 end=$2; shift 2; speed $name $end '^(coauthor|amazon)' DATA=build/g1data "$@"; }
synth() { local name=$1 end=$2; shift 2; speed $name $end '^synth2m' DATA=build/c10data SPEED=synth2m:40 PASSES=5 PYG=0 "$@"; }
kept() { small "$@"; mkdir -p $A/k-$1; mv $A/kernels-*.json $A/k-$1/ 2>/dev/null; cp $R/$1.txt $A/k-$1/; }
