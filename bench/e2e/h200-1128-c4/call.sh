#!/usr/bin/env bash
# call 4 (one GPU): #16 heavy-row aggregation before/after with PyG in the same run; #20 templates bench
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-560}
R=$OUT/raw; mkdir -p $R
unxz() { python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' "$1" "$2" && chmod +x "$2"; }
mkdir -p build/templates; unxz build/c4/tcu.test.xz build/e2e/tcu.test; unxz build/c4/qgtc-old.xz build/e2e/qgtc-old; unxz build/c4/export.xz build/e2e/export; unxz build/c4/fpbench.xz build/templates/fpbench
cp build/e2e/tcu.test build/templates/tcu.test
export QGTC_CACHE_DIR=/tmp/qgtc-kernels
SP='coauthor_physics:18 amazon_computers:7'
# 1. the new aggregation's device tests (long rows), the suite, whole plans; sanitizers on the aggregations
OUT=$R/check STEPS=check CHECK_CLI=0 TESTS='TestBackendAgg|TestBackendChain|TestBackendSuite|TestPlanOnDevice|TestPlanReplayOnDevice|TestAggKernelsListed|TestKernelProfileOnDevice' \
  SANITIZE='TestBackendAgg|TestBackendSuite/aggregations|TestPlanOnDevice/gcn/bits=4/agg=sparse' timeout 150 bash bench/e2e/run.sh > $R/check.txt 2>&1
echo "check rc=$? $(el)s"; head -12 $R/check.txt
# 2. before (5e60beb) and after, resident and cold, GCN/GIN/SAGE at 4 bits; after with the CPU, kernels and PyG
OUT=$R/before STEPS=speed DATA=build/c4data SPEED="$SP" CURVE=4 PYG=0 QGTC=build/e2e/qgtc-old VARIANTS='^gpu (resident|cold)$' \
  timeout 110 bash bench/e2e/run.sh > $R/before.txt 2>&1
echo "before rc=$? $(el)s"; cat $R/before.txt
OUT=$R/after STEPS=speed DATA=build/c4data SPEED="$SP" CURVE=4 KERNELS=1 VARIANTS='^(gpu resident|gpu cold|cpu)$' PYG_REPS=20 \
  timeout $(( LIMIT - 90 - $(el) )) bash bench/e2e/run.sh > $R/after.txt 2>&1
echo "after rc=$? $(el)s"; cat $R/after.txt
python3 bench/e2e/table.py $R/after > $OUT/table-after.md 2>$R/table.err; python3 bench/e2e/table.py $R/before > $OUT/table-before.md 2>>$R/table.err
# 3. templates against cuSPARSE/PyG, with what is left
left=$(( LIMIT - $(el) ))
if (( left > 50 )); then
  OUT=$R/tmpl STEPS=bench BUDGET=0.3 timeout $left bash bench/templates/run.sh > $R/tmpl.txt 2>&1
  echo "templates rc=$? $(el)s"; tail -30 $R/tmpl.txt; cp $R/tmpl/table.md $OUT/table-templates.md 2>/dev/null
fi
tar czf $OUT/logs-c4.tgz -C $R . && rm -rf $R
echo "done $(el)s"
