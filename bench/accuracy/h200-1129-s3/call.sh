#!/usr/bin/env bash
# call s3 (1 x H200 host, its 16 CPU cores; no GPU work): issue 18. Amazon Photo GCN at every width
# from the recipe's new weight decay (1e-4), seeds 0-9, and GIN on Photo (fp32) at 1e-4 and 5e-4
# (jobs.txt). Carries build/s15 (qgtc, a build of the recipe change; copied into build/acc, where
# hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s15/qgtc build/acc/
hostsweep bench/accuracy/h200-1129-s3/jobs.txt 540
rm -f $OUT/cache.tgz
tar czf $OUT/s3.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
