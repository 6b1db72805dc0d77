#!/usr/bin/env bash
# call 5 (4 GPUs, 64 cores): #19 partition old/new at 1 and 16 cores; #21 the 100M graph, new and old binaries, 1/2/4 GPUs, CPU profiles
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/scale/steps.sh # el, unxz, run
LIMIT=${LIMIT:-540}
L=$OUT/logs; mkdir -p $L
W=/tmp/c5; mkdir -p $W
NEW=${NEW:-build/c5/qgtc} OLD=${OLD:-build/scale/qgtc} M=build/scale/model-a4w4.safetensors
N1=${N1:-1000000} N100=${N100:-100000000} P100=${P100:-2000} N2=${N2:-2000000} G1=${G1:-gpu} G2=${G2:-gpu:0,1} G4=${G4:-gpu:all}
export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
# the device tests of this tree on the last GPU and the last cores, while the partitions run on cores 0-15
last=$(( $(nvidia-smi -L | grep -c '^GPU') - 1 ))
( cd tcu && CUDA_VISIBLE_DEVICES=$last QGTC_CACHE_DIR=$W/kt timeout 130 taskset -c $(( $(nproc) / 2 ))-$(( $(nproc) - 1 )) ../build/c5/tcu.test -test.v -test.short \
    -test.run 'TestBackendSuite|TestBackendProducts|TestBackendAgg|TestBackendChain|TestBackendWide|TestPlanOnDevice|TestPlanReplayOnDevice|TestUploadRing' > $OUT/tcu-test.txt 2>&1
  echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' $OUT/tcu-test.txt) passed $(grep -cE '^\s*--- FAIL' $OUT/tcu-test.txt) failed" >> $OUT/tcu-test.txt ) &
TESTS=$!
echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
# --- #19: the 1M partition, 16 cores (taskset 0-15) and 1 core, new then old, twice
run p1m-synth 30 $NEW data synth --quiet --model planted --nodes $N1 --communities $((N1/2000)) --avg-degree 10 --mixing 0.1 --seed 1 --features 512 --feature-nnz 16 --classes 10 -o $W/p1m.npz
for r in 1 2; do for b in new old; do
  bin=$NEW; [ $b = old ] && bin=$OLD
  run part-$b-16-$r 40 env GOMAXPROCS=16 taskset -c 0-15 $bin partition --dataset $W/p1m.npz --parts 500 --json --quiet
  run part-$b-1-$r 40 env GOMAXPROCS=1 taskset -c 0 $bin partition --dataset $W/p1m.npz --parts 500 --json --quiet
done; done
wait $TESTS; tail -1 $OUT/tcu-test.txt | tee -a $OUT/steps.txt; grep -E '^\s*--- FAIL' $OUT/tcu-test.txt | head; gzip $OUT/tcu-test.txt
# --- #21: the 100M graph, written by the new build
big=$W/big.qgpb
run gen100 180 $NEW data synth --model planted --nodes $N100 --communities $((N100/1000)) --avg-degree 16 --features 128 \
  --feature-nnz 16 --classes 10 --seed 1 --pack-out $big --parts $P100 --quiet
ls -l $big >> $OUT/steps.txt
b=(infer --packed $big --weights $M --other-data --agg sparse --passes 3 --json --quiet)
run big1-new 90 $NEW "${b[@]}" --device $G1
run big4-new 60 $NEW "${b[@]}" --device $G4
run big2-new 60 $NEW "${b[@]}" --device $G2
run big4-old 60 $OLD "${b[@]}" --device $G4
run big1-old 90 $OLD "${b[@]}" --device $G1
QGTC_CPUPROFILE=$OUT/big4-new.pprof run big4-new-prof 60 $NEW "${b[@]}" --device $G4
QGTC_CPUPROFILE=$OUT/big1-new.pprof run big1-new-prof 90 $NEW "${b[@]}" --device $G1
GOGC=400 run big4-new-gogc400 60 $NEW "${b[@]}" --device $G4
# the 2M graph in memory, cold and resident, one GPU: the in-memory rates beside the streamed one
run s2m-synth 30 $NEW data synth --model planted --nodes $N2 --avg-degree 40 --features 128 --feature-nnz 32 --communities 400 --classes 10 --seed 1 --out $W/s2m.npz --quiet
run s2m-part 40 $NEW partition --dataset $W/s2m.npz --parts 40 --out $W/s2m.part --quiet
run mem2m-cold 60 $NEW infer --dataset $W/s2m.npz --partition $W/s2m.part --weights $M --device $G1 --passes 3 --json --quiet
run mem2m-resident 60 $NEW infer --dataset $W/s2m.npz --partition $W/s2m.part --weights $M --device $G1 --resident --passes 5 --json --quiet
python3 - $L > $OUT/table.md <<'PY'
import json, os, sys, glob
L = sys.argv[1]
def j(n):
    try: return json.load(open(os.path.join(L, n + ".json")))
    except Exception: return None
print("| run | pass ms (median) | first pass ms | nodes/s | read/prepare/run ms summed | devices (batches, run ms, wait ms) | preds |")
print("|---|---|---|---|---|---|---|")
for n in ["big1-new","big2-new","big4-new","big1-old","big4-old","big4-new-prof","big1-new-prof","big4-new-gogc400","mem2m-cold","mem2m-resident"]:
    r = j(n)
    if not r: print(f"| {n} | failed | | | | | |"); continue
    med = r.get("pass_median_ms") or r.get("pass_ms") or 0
    first = r["pass_ms"] if "mode" in r else r.get("pack_ms", 0) + r.get("compute_ms", 0)
    nodes = r.get("batch_nodes", r.get("nodes", 0))
    devs = "; ".join("%s %d %.0f %.0f" % (d["device"], d["batches"], d.get("run_ms", 0), d.get("wait_ms", 0)) for d in r.get("devices") or [])
    print(f"| {n} | {med:.1f} | {first:.1f} | {nodes/med*1e3:,.0f} | {r.get('read_ms',0):.0f}/{r.get('pack_ms',0):.0f}/{r.get('compute_ms',0):.0f} | {devs} | {r['predictions_sha256'][:12]} |")
print()
print("| partition | seconds | edge cut |")
print("|---|---|---|")
for f in sorted(glob.glob(os.path.join(L, "part-*.json"))):
    try:
        r = json.load(open(f)); print(f"| {os.path.basename(f)[:-5]} | {r.get('seconds')} | {r.get('edge_cut')} |")
    except Exception as e: print(f"| {os.path.basename(f)} | failed | |")
PY
cat $OUT/table.md
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
echo "done $(el)s"
