#!/usr/bin/env bash
# call q2 (1 x H200): #18 item 2, PyG's GCN and GraphSAGE over a small grid (pyg_grid.py: hidden,
# dropout, weight decay) on qgtc's splits of Amazon Computers and Photo, seeds 0-4, test accuracy
# on every test node and on the largest connected component's. Carries build/q1 (export).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el
B=build/q1
call_head
for ds in amazon_computers amazon_photo; do
  $B/export --dataset $ds --split-seeds 5 --out /tmp/pyg/$ds > /dev/null 2>> $R/export.err || echo "export $ds failed" | tee -a $OUT/steps.txt
done
timeout $((500 - $(el))) python3 -u bench/accuracy/pyg_grid.py --out $OUT /tmp/pyg/amazon_computers /tmp/pyg/amazon_photo > $R/grid.txt 2>&1
echo "pyg_grid rc=$? at $(el)s" | tee -a $OUT/steps.txt
tail -3 $R/grid.txt | tee -a $OUT/steps.txt
tar czf $OUT/q2.tgz -C $R . && rm -rf $R
echo "done $(el)s"
