#!/usr/bin/env bash
# call y1 (1 x H200 host, its CPU cores; no GPU work): issue 18. GIN with the recipe's mean
# aggregation at every width (8, 4, 2, 1 bits) from the defaults, seeds 0-4, on the Amazon and
# Coauthor graphs (jobs.txt): 20 runs at once on the 16 cores, one core each. Carries build/s17
# (qgtc, a build of 7c6e542; copied into build/acc, where hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s17/qgtc build/acc/
P=20 GMP=1 hostsweep bench/accuracy/h200-1129-y1/jobs.txt 570
rm -f $OUT/cache.tgz
tar czf $OUT/y1.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
