#!/usr/bin/env bash
# call d3 (one-GPU host, 16 cores): issue 19's two open cells on Coauthor Physics, tree of this
# commit: the warm 4-bit pass (BenchmarkQGCNSpeed, 200 passes a figure, 5 figures) at 8 and 16
# cores against torch fp32 at 16 threads; the one-shot first pass against the later passes at 16
# cores (8 processes), with the collector off, never merged, and one with an execution trace.
# On a host with more cores, run it under taskset -c 0-15.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/scale/steps.sh # el, unxz, run
LIMIT=${LIMIT:-300}
L=$OUT/logs; mkdir -p $L; W=/tmp/d3; mkdir -p $W
export QGTC_CACHE=$W/cache
B=build/d3
for f in qgtc layers.test export; do unxz $B/$f.xz $B/$f; done
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" | tee $OUT/steps.txt
run part 30 env GOMAXPROCS=16 $B/qgtc partition --dataset coauthor_physics --parts 18 --out $W/phys.part --json --quiet
run model 60 env GOMAXPROCS=16 $B/qgtc infer --dataset coauthor_physics --partition $W/phys.part --bits 4 --epochs 0 --qat-epochs 0 --json --quiet
M=$(ls $QGTC_CACHE/models/*a4w4*.safetensors | head -1)
run warm 120 env QGTC_SPEED_DATA="physics=coauthor_physics,$W/phys.part" $B/layers.test -test.run '^$' \
  -test.bench 'QGCNSpeed/data=(physics)$/impl=(qgtc|qgtc-batchwise)$/bits=4$' -test.cpu 16,8 -test.benchtime 200x -test.count 5 -test.timeout 0
run export 30 $B/export --dataset coauthor_physics --partition $W/phys.part --out $W/phys.torch
run torch 90 python3 bench/manycore/torch_cpu.py $W/phys.torch --threads 16 --reps 20
os=(infer --dataset coauthor_physics --partition $W/phys.part --weights $M --json --quiet --passes 8 --device cpu)
for i in 1 2 3 4 5 6 7 8; do run os16-$i 20 env GOMAXPROCS=16 $B/qgtc "${os[@]}"; done
for i in 1 2 3; do run os8-$i 20 env GOMAXPROCS=8 $B/qgtc "${os[@]}"; done
for i in 1 2 3; do run os16-gcoff-$i 20 env GOMAXPROCS=16 GOGC=off $B/qgtc "${os[@]}"; done
for i in 1 2 3; do run os16-unmerged-$i 20 env GOMAXPROCS=16 $B/qgtc "${os[@]}" --merge off; done
run os16-trace 20 env GOMAXPROCS=16 QGTC_TRACE=$OUT/os16.trace $B/qgtc "${os[@]}"
python3 - $L <<'PY' | tee $OUT/table.md
import json, os, re, statistics, sys
L = sys.argv[1]
print("| run | first pass compute ms | later passes median ms | first/later | setup ms | merged |")
print("|---|---|---|---|---|---|")
for n in sorted(f[:-5] for f in os.listdir(L) if f.startswith("os") and f.endswith(".json")):
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: continue
    c, m = r.get("compute_ms", 0), r.get("pass_median_ms", 0)
    print(f"| {n} | {c:.3f} | {m:.3f} | {c/m if m else 0:.2f} | {r.get('setup_ms', 0):.1f} | {r.get('merged')} |")
w = {}
for line in open(os.path.join(L, "warm.json")):
    m = re.match(r"BenchmarkQGCNSpeed/data=physics/impl=(\S+)/bits=4-(\d+)\s.*?([\d.]+) ms/pass", line)
    if m: w.setdefault((m[1], m[2]), []).append(float(m[3]))
for k, v in sorted(w.items()):
    print(f"- warm {k[0]} at {k[1]} cores: ms/pass {', '.join('%.3f' % x for x in v)} (median {statistics.median(v):.3f})")
try:
    t = json.load(open(os.path.join(L, "torch.json")))
    print(f"- torch 16 threads: {t}")
except Exception as e: print("- torch:", e)
PY
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
echo "done $(el)s"
