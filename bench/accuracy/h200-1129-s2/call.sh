#!/usr/bin/env bash
# call s2 (1 x H200 host, its 16 CPU cores; no GPU work): issue 18 item 2, less weight decay on the
# Amazon graphs' components after call s1 (Photo GCN +0.9 points at 1e-4): Photo SAGE, Computers GIN
# and Computers GCN, fp32 (jobs.txt). Carries build/s15 (qgtc; copied into build/acc, where
# hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s15/qgtc build/acc/
hostsweep bench/accuracy/h200-1129-s2/jobs.txt 530
rm -f $OUT/cache.tgz
tar czf $OUT/s2.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
