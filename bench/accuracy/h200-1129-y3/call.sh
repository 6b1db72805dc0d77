#!/usr/bin/env bash
# call y3 (1 x H200 host, its CPU cores; no GPU work): issue 18. Amazon Photo's GCN and SAGE over
# a small grid of flags on top of the recipe, fp32 (and PTQ at 8 bits), seeds 0-4; and GIN (the
# recipe's mean) fp32 on seeds 5-9 (jobs.txt). 16 runs at once, one core each, cut at 560 s.
# Carries build/s17y3 (qgtc, a build of c3b7140; copied into build/acc, where hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s17y3/qgtc build/acc/
P=16 GMP=1 hostsweep bench/accuracy/h200-1129-y3/jobs.txt 560
rm -f $OUT/cache.tgz
tar czf $OUT/y3.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
