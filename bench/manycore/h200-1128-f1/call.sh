#!/usr/bin/env bash
# call f1 (one-GPU host, 16 cores): every target of issue 19 on one tree in one run.
# bench/manycore/run.sh (all steps, new binaries only: warm 1..16 cores as the plan
# picks and batchwise, torch fp32 at 16 threads, one-shot at every core count, the
# Physics variants, the partition at every core count), then five more one-shot
# processes on Physics at 16 cores and two at 1 (the 16-core cell was the one at the
# limit in call d3). Built by `make manycore OLD_REF=`, carried as build/manycore.
set -uo pipefail
cd "$(dirname "$0")/../../.."
W=/tmp/qgtc-manycore
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" | tee $OUT/steps.txt
WORK=$W BUDGET=${BUDGET:-470} bash bench/manycore/run.sh > $OUT/run.txt 2>&1
cp $OUT/table.md $OUT/table-run.md 2>/dev/null
M=$(ls $W/cache/models/coauthor_physics-gcn-*-a4w4.safetensors | head -1)
for i in 1 2 3 4 5; do
  for c in 16; do
    env GOMAXPROCS=$c QGTC_DATA=$PWD/testdata QGTC_CACHE=$W/cache timeout 30 build/manycore/qgtc infer --dataset coauthor_physics \
      --partition $W/physics.part --weights $M --json --quiet --passes 8 --device cpu > $OUT/os$c-$i.json 2>> $OUT/os.err
  done
done
for i in 1 2; do
  env GOMAXPROCS=1 QGTC_DATA=$PWD/testdata QGTC_CACHE=$W/cache timeout 30 build/manycore/qgtc infer --dataset coauthor_physics \
    --partition $W/physics.part --weights $M --json --quiet --passes 8 --device cpu > $OUT/os1-$i.json 2>> $OUT/os.err
done
python3 - $OUT <<'PY' | tee $OUT/oneshot-extra.md
import json, os, sys
d = sys.argv[1]
print("| run | first pass compute ms | later passes median ms | first/later | setup ms | merged |")
print("|---|---|---|---|---|---|")
for n in sorted(f for f in os.listdir(d) if f.startswith("os") and f.endswith(".json")):
    try: r = json.load(open(os.path.join(d, n)))
    except Exception as e: print("|", n, "|", e, "|"); continue
    c, m = r.get("compute_ms", 0), r.get("pass_median_ms", 0)
    print(f"| {n[:-5]} | {c:.3f} | {m:.3f} | {c/m if m else 0:.2f} | {r.get('setup_ms', 0):.1f} | {r.get('merged')} |")
PY
echo "done"
