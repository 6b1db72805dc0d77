#!/usr/bin/env bash
# call p6 (1 x H200): tcu's fp GPU tests (TestFP*: the SpMM conformance through spmmWidth, the
# partitioned SpMM, SDDMM, sampled, dense, GAT) and gpufp's GPU tests on the session's final tcu.
# Carries build/q1 (tcu.test, gpufp.test).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/q1
call_head
(cd tcu && QGTC_CACHE_DIR=/tmp/kt timeout 150 ../$B/tcu.test -test.run '^TestFP' -test.v -test.count=1 -test.timeout 140s > $OUT/test-tcu.log 2>&1
 echo "tcu.test -run TestFP rc=$? $(grep -cE '^\s*--- PASS' $OUT/test-tcu.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/test-tcu.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
(cd gpufp && QGTC_CACHE_DIR=/tmp/kt timeout 60 ../$B/gpufp.test -test.v -test.count=1 -test.timeout 50s > $OUT/test-gpufp.log 2>&1
 echo "gpufp.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/test-gpufp.log) passed, $(grep -cE '^\s*--- FAIL' $OUT/test-gpufp.log) failed, at $(el)s" | tee -a $OUT/steps.txt)
grep -hE '^\s*--- FAIL' $OUT/test-*.log | head | tee -a $OUT/steps.txt
xz -T4 $OUT/test-*.log
echo "done $(el)s"
