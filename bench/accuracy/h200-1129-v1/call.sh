#!/usr/bin/env bash
# call v1 (1 x H200 host, its CPU cores; no GPU work): issue 18. Amazon Computers SAGE at every
# width from the defaults, seeds 5-9 (jobs.txt), three cores a run. Carries build/s16 (qgtc, a build
# of 00ced5b; copied into build/acc, where hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s16/qgtc build/acc/
P=5 GMP=3 hostsweep bench/accuracy/h200-1129-v1/jobs.txt 540
rm -f $OUT/cache.tgz
tar czf $OUT/v1.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
