#!/usr/bin/env bash
# call r3 (1 x H200 host, its 16 CPU cores; no GPU work): issue 18, qgtc's fp32 SAGE on Amazon
# Computers and Photo (largest component, --lcc auto), seeds 0-4, over one batch (--parts 1) or at
# learning rate 0.005: over the defaults' 7 batches at 0.01, seeds 1 and 4 of Computers stalled
# (call r2). Carries build/acc (qgtc).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
hostsweep bench/accuracy/h200-1129-r3/jobs.txt 530
rm -f $OUT/cache.tgz
tar czf $OUT/r3.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
