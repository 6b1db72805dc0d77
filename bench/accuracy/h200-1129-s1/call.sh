#!/usr/bin/env bash
# call s1 (1 x H200 host; 15 CPU cores for qgtc, the GPU for PyG): issue 18 item 2, Amazon Photo GCN
# on its largest component under its target (88.64 against 90.2). qgtc's fp32 over a grid of
# settings (jobs.txt, seeds 0-4; the defaults at seeds 5-9), and PyG's own grid (pyg_grid.py) on the
# same component and splits, seeds 0-9: are these splits harder, or is qgtc's recipe short?
# Carries build/s15 (qgtc, export; copied into build/acc, where hostsweep.sh looks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
. bench/accuracy/hostsweep.sh
call_head
mkdir -p build/acc && cp build/s15/qgtc build/s15/export build/acc/
build/acc/export --dataset amazon_photo --split-seeds 10 --out /tmp/pyg/amazon_photo > /dev/null 2> $R/export.err || echo "export failed" | tee -a $OUT/steps.txt
timeout $((520 - $(el))) python3 -u bench/accuracy/pyg_grid.py --seeds 10 --out $R/pyg /tmp/pyg/amazon_photo > $R/pyg-grid.txt 2>&1 &
pyg=$!
P=15 hostsweep bench/accuracy/h200-1129-s1/jobs.txt 525
wait $pyg; echo "pyg_grid rc=$? at $(el)s" | tee -a $OUT/steps.txt
rm -f $OUT/cache.tgz
tar czf $OUT/s1.tgz -C $R . && rm -rf $R
echo "done $(el)s" | tee -a $OUT/steps.txt
