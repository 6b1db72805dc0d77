#!/usr/bin/env bash
# call r2 (1 x H200 host, its 16 CPU cores; no GPU work): issue 18 item 2, qgtc's fp32 GCN and SAGE
# from the defaults on Amazon Computers and Photo, which now keep the largest connected component
# (--lcc auto), seeds 0-4, one process per seed (call r1 ran out of time on the widths: its
# workers' deadline was wrong); then Photo SAGE fp32 at weight decay 2e-3 and 1e-3.
# Carries build/acc (qgtc).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket' | cut -c1-200 >> $OUT/steps.txt
hostsweep bench/accuracy/h200-1129-r2/jobs.txt 540
tar czf $OUT/r2.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
