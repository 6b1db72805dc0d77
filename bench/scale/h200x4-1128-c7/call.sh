#!/usr/bin/env bash
# call 7 (4 GPUs): #21 the final tree (8f161a7) on 1/2/4 GPUs, a CPU profile of 2 GPUs and traces of 1 and 2 GPUs on a 10M file
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$SECONDS; LIMIT=${LIMIT:-540}
el() { echo $((SECONDS - T0)); }
R=$OUT/raw; mkdir -p $R; L=$OUT/logs; mkdir -p $L; W=/tmp/c7; mkdir -p $W
export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
run() {
  local name=$1 max=$2; shift 2
  local left=$((LIMIT - $(el)))
  if ((left < 10)); then echo "$name: skipped at $(el)s" | tee -a $OUT/steps.txt; return 99; fi
  ((max > left)) && max=$left
  local t=$SECONDS
  python3 - "$L/$name.rss" timeout -k 5 $max "$@" > $L/$name.json 2> $L/$name.err <<'PY'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
PY
  local rc=$?
  echo "$name: rc $rc, $((SECONDS - t)) s, peak RSS $(( $(tail -1 $L/$name.rss 2>/dev/null || echo 0) / 1024 )) MiB, at $(el)s" | tee -a $OUT/steps.txt
  return $rc
}
echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
nvidia-smi topo -m > $L/topo.txt 2>&1; lscpu > $L/lscpu.txt 2>&1
Q=build/c7/qgtc M=build/scale/model-a4w4.safetensors
big=$W/big.qgpb mid=$W/mid.qgpb
run gen100 150 $Q data synth --model planted --nodes 100000000 --communities 100000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $big --parts 2000 --quiet
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 3 --json --quiet)
run big1 60 $Q "${b[@]}" --device gpu
run big2 45 $Q "${b[@]}" --device gpu:0,1
run big4 45 $Q "${b[@]}" --device gpu:all
run big2b 45 $Q "${b[@]}" --device gpu:0,2
QGTC_CPUPROFILE=$OUT/big2.pprof run big2-prof 45 $Q "${b[@]}" --device gpu:0,1
QGTC_CPUPROFILE=$OUT/big1.pprof run big1-prof 60 $Q "${b[@]}" --device gpu
rm -f $big
run gen10 40 $Q data synth --model planted --nodes 10000000 --communities 10000 --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $mid --parts 200 --quiet
m=(infer --packed $mid --weights $M --other-data --agg sparse --passes 2 --json --quiet)
QGTC_TRACE=$W/mid1.trace run mid1-trace 30 $Q "${m[@]}" --device gpu
QGTC_TRACE=$W/mid2.trace run mid2-trace 30 $Q "${m[@]}" --device gpu:0,1
run mid1 30 $Q "${m[@]}" --device gpu
run mid2 30 $Q "${m[@]}" --device gpu:0,1
python3 -c 'import lzma,sys
for n in sys.argv[2:]: open(sys.argv[1]+"/"+n+".xz","wb").write(lzma.compress(open("/tmp/c7/"+n,"rb").read(), preset=6))' $OUT mid1.trace mid2.trace
python3 - $L > $OUT/table.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | passes ms | median ms | nodes/s | read/prepare/run ms summed | devices (batches, run ms, wait ms) | preds |")
print("|---|---|---|---|---|---|---|")
for n in ["big1","big2","big4","big2b","big2-prof","big1-prof","mid1","mid2","mid1-trace","mid2-trace"]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | | | | |"); continue
    med = r.get("pass_median_ms") or r.get("pass_ms") or 0
    nodes = r.get("batch_nodes", r.get("nodes", 0))
    devs = "; ".join("%s %d %.0f %.0f" % (d["device"], d["batches"], d.get("run_ms", 0), d.get("wait_ms", 0)) for d in r.get("devices") or [])
    ps = ", ".join("%.0f" % p for p in [r.get("pass_ms",0)] + (r.get("more_pass_ms") or []))
    print(f"| {n} | {ps} | {med:.1f} | {nodes/med*1e3:,.0f} | {r.get('read_ms',0):.0f}/{r.get('pack_ms',0):.0f}/{r.get('compute_ms',0):.0f} | {devs} | {r['predictions_sha256'][:12]} |")
PY
cat $OUT/table.md
tar czf $OUT/logs.tgz -C $OUT logs raw && rm -rf $L $R
echo "done $(el)s"
