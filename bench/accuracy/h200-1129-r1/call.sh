#!/usr/bin/env bash
# call r1 (1 x H200 host, its 16 CPU cores; no GPU work): issue 18, qgtc sweeps from the defaults on
# Amazon Computers and Photo, which now keep the largest connected component (--lcc auto), at
# 8, 4, 2 and 1 bits, seeds 0-4, one process per seed; then Photo SAGE fp32 at weight decay 1e-3
# and 2e-3. Carries build/acc (qgtc, and cache.tgz from an earlier call to resume from).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-200 >> $OUT/steps.txt
hostsweep bench/accuracy/h200-1129-r1/jobs.txt 550
tar czf $OUT/r1.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
