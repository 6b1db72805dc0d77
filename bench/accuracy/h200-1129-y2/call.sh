#!/usr/bin/env bash
# call y2 (1 x H200): issue 18, GIN's mean aggregation on the GPU. The device plan tests with the
# averaging GIN (TestPlanOnDevice, TestPlanReplayOnDevice: bit-for-bit against the generic
# backend), then `qgtc infer` of Coauthor CS's 4-bit GIN, summing and averaging, on the CPU (16
# cores) and the GPU, 5 passes each, from models trained on the VM (build/s17g/cache). Carries
# build/s17g: tcu.test and qgtc, builds of 0c1bf47. Logs in y2.tgz; infer.md is the table.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
call_head
export QGTC_DATA=$PWD/testdata QGTC_CACHE_DIR=/tmp/kt QGTC_CACHE=$PWD/build/s17g/cache
(cd tcu && timeout 300 ../build/s17g/tcu.test -test.run '^(TestPlanOnDevice|TestPlanReplayOnDevice)$' -test.v -test.count=1 \
  -test.timeout 290s > $R/test.log 2>&1
 echo "tests rc=$? $(grep -cE '^\s*--- PASS' $R/test.log) passed ($(grep -cE '^\s*--- PASS.*gin-mean' $R/test.log) gin-mean), $(grep -cE '^\s*--- FAIL' $R/test.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -E '^\s*--- FAIL' $R/test.log | head | tee -a $OUT/steps.txt
for a in sum mean; do
  for dev in cpu gpu; do
    timeout 120 build/s17g/qgtc infer --dataset coauthor_cs --model gin --gin-aggr $a --bits 4 --device $dev --passes 5 --json --quiet \
      > $R/cs-$a-$dev.json 2> $R/cs-$a-$dev.err
    echo "infer $a $dev rc=$? at $(el)s" | tee -a $OUT/steps.txt
  done
done
python3 - $R > $OUT/infer.md <<'PY'
import json, sys
print("| aggregation | device | accuracy | train ms | first pass ms | median of 4 more ms | predictions sha256 |")
print("|---|---|---|---|---|---|---|")
for a in ("sum", "mean"):
    for dev in ("cpu", "gpu"):
        try:
            r = json.load(open(f"{sys.argv[1]}/cs-{a}-{dev}.json"))
        except Exception as e:
            print(f"| {a} | {dev} | failed: {e} |"); continue
        print(f"| {r.get('gin_aggr')} | {dev} | {100*r['accuracy']:.2f} | {r['train_ms']:.0f} | {r['compute_ms']:.2f} | {r.get('pass_median_ms', 0):.2f} | {r['predictions_sha256'][:16]} |")
PY
cat $OUT/infer.md
tar czf $OUT/y2.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
