#!/usr/bin/env bash
# Issue 21 on a host of two H200s, in ONE call of the device tool (make
# scale, carrying build/scale; it builds nothing). Steps, in priority order,
# each run only when the time it needs is left of BUDGET seconds and killed
# when the budget runs out:
#   synth2m    the 2M-node graph of bench/multigpu (deg 40, 128 features, 32 a node,
#              400 communities, 10 classes) as .npz, partition into 40 parts
#   model2m    a 4-bit GCN (hidden 64) calibrated ($TRAIN) on it, only when
#              $MODEL (default $B/model-a4w4.safetensors, which make scale builds
#              from a 200k-node graph of the same generator: bench/scale/model.sh)
#              is missing; it fits both graphs (128 features, the same quantizer,
#              10 classes)
#   mem2m      in-memory pass rate on $DEV, resident (--passes $PASSES), then cold
#              ($CPASSES): the fair in-memory figure beside a streamed pass
#   gen100     the big graph (100M nodes, deg 16, 16 features a node) written
#              straight into a packed batch file in $WORK (local disk): time, peak RSS
#   big1       infer --packed on $DEV, --passes $BPASSES: first vs later passes
#   big2       the same on $MULTI2 (two GPUs): the multi-GPU ratio
#   big4       the same on all GPUs, on a host of more than two
#   multi2m    the 2M graph in memory on $MULTI, resident and cold
#   big1-lanes2 the big graph on $DEV with two backends (streams) on the GPU
#   packed2m   the 2M graph's batches as a packed file, on $DEV and $MULTI: the same
#              predictions as in memory, and the streamed rate beside it
# Everything goes to $OUT: table.md, steps.txt and logs.tgz (the JSON, stderr,
# nvidia-smi samples). Knobs: BUDGET (s), SCALE (fraction of both graphs'
# nodes; 0.01 to try it on a small machine), DEV/MULTI (cpu to try it without
# a GPU), WORK, B, MODEL, AGG100, TRAIN, PASSES, CPASSES, BPASSES.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
B=${B:-build/scale}
BUDGET=${BUDGET:-510}   # seconds: the call's 9 minutes less the archive and the tool's own start
RESERVE=${RESERVE:-15}  # kept for the table and the archive
SCALE=${SCALE:-1}
DEV=${DEV:-gpu}
MULTI=${MULTI:-gpu:all}
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
MULTI2=${MULTI2:-$([ "${NGPU:-0}" -gt 2 ] && echo gpu:0,1 || echo "$MULTI")}
STEPMAX=${STEPMAX:-200} # no one step may take the whole call (a hang)
WORK=${WORK:-${TMPDIR:-/tmp}/qgtc-scale}
PASSES=${PASSES:-5}
BPASSES=${BPASSES:-3}
TRAIN=${TRAIN:---epochs 0 --qat-epochs 0} # calibrated, untrained: the timings need a model, not a good one
MODEL=${MODEL:-$B/model-a4w4.safetensors} # prebuilt (make scale): calibrating on the 2M graph here costs most of a call (bench/scale/RESULTS.md)
CPASSES=${CPASSES:-3}    # cold passes re-upload everything (their time: bench/multigpu/RESULTS.md)
AGG100=${AGG100:-sparse} # edge lists: a 50,000-node batch's 1-bit adjacency is 312 MB
CLASSES100=${CLASSES100:-10} # the 2M graph's, so its model fits
T0=$SECONDS
LOG=$OUT/logs
mkdir -p "$LOG" "$WORK"
export QGTC_CACHE=$WORK/cache QGTC_CACHE_DIR=$WORK/kernels
scaled() { python3 -c 'import sys; print(max(int(sys.argv[2]), int(float(sys.argv[1]) * float(sys.argv[3]))))' "$SCALE" "$@"; }
N2=$(scaled 4000 2000000)
N100=$(scaled 20000 100000000)
K100=$((N100 / 1000))              # communities of ~1,000 nodes
P100=$((N100 / 50000 > 2 ? N100 / 50000 : 2)) # parts of ~50,000 nodes, as the 2M graph's
left() { echo $((BUDGET - (SECONDS - T0))); }
note() { echo "$*" | tee -a "$OUT/steps.txt"; }
# step NAME NEED CMD...: runs CMD when NEED seconds are left, under a
# timeout of what is left; stdout to logs/NAME.json, stderr to NAME.err,
# the peak RSS of CMD and its children into NAME.rss (KiB).
step() {
  local name=$1 need=$2
  shift 2
  local l=$(($(left) - RESERVE))
  if ((l < need)); then
    note "$name: skipped, $l s left, needs about $need"
    return 99
  fi
  ((l > STEPMAX)) && l=$STEPMAX
  local t=$SECONDS
  python3 - "$LOG/$name.rss" timeout -k 5 "$l" "$@" >"$LOG/$name.json" 2>"$LOG/$name.err" <<'EOF'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
EOF
  local rc=$?
  echo "$((SECONDS - t))" >"$LOG/$name.wall"
  local why=""
  [ $rc != 0 ] && why=": $(tail -1 "$LOG/$name.err")"
  note "$name: exit $rc, $((SECONDS - t)) s, peak RSS $(($(cat "$LOG/$name.rss" 2>/dev/null || echo 0) / 1024)) MiB, $(left) s left$why"
  return $rc
}
field() { python3 -c 'import json,sys
try: r=json.load(open(sys.argv[1]))
except Exception: r={}
print(" ".join(str(r.get(k, "-")) for k in sys.argv[2:]))' "$@"; }

{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs), $(nproc) cores, $(free -g 2>/dev/null | awk '/Mem:/ {print $2 " GiB"}') RAM"
  echo "# SCALE=$SCALE DEV=$DEV MULTI2=$MULTI2 MULTI=$MULTI BUDGET=$BUDGET WORK=$WORK ($(df -h "$WORK" 2>/dev/null | awk 'NR==2 {print $4 " free"}'))"
  echo "# 2M graph: $N2 nodes; big graph: $N100 nodes, $K100 communities, $P100 parts"
} | tee "$OUT/steps.txt"
$B/qgtc info >"$LOG/info.txt" 2>&1
if command -v nvidia-smi >/dev/null; then # device memory every 0.5 s, context included
  nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv -lms 500 >"$LOG/nvidia-smi.csv" 2>/dev/null &
  SMI=$!
fi

syn=$WORK/synth2m.npz part=$WORK/synth2m.part big=$WORK/big.qgpb
step synth2m 30 $B/qgtc data synth --model planted --nodes "$N2" --avg-degree 40 --features 128 --feature-nnz 32 \
  --communities 400 --classes 10 --seed 1 --out "$syn" --quiet &&
  step part2m 20 $B/qgtc partition --dataset "$syn" --parts 40 --out "$part" --quiet
model=""
if [ -f "$MODEL" ]; then
  model=$MODEL
  note "model: $model (prebuilt)"
elif [ -f "$part" ] && step model2m 40 $B/qgtc infer --dataset "$syn" --partition "$part" $TRAIN --device cpu --json --quiet; then
  model=$(ls "$QGTC_CACHE"/models/*-a4w4.safetensors 2>/dev/null | head -1)
  note "model: $model"
fi
mem() { # NAME DEVICE PASSES [--resident]
  step "$1" 20 $B/qgtc infer --dataset "$syn" --partition "$part" --weights "$model" --device "$2" ${4:-} --passes "$3" --json --quiet
}
if [ -n "$model" ]; then
  mem mem2m-resident "$DEV" "$PASSES" --resident
  mem mem2m-cold "$DEV" "$CPASSES"
  # the 100M graph's time is in bench/scale/RESULTS.md; a minute is left for the passes.
  step gen100 $(scaled 20 150) $B/qgtc data synth --model planted --nodes "$N100" --communities "$K100" --avg-degree 16 --features 128 \
    --feature-nnz 16 --classes "$CLASSES100" --seed 1 --pack-out "$big" --parts "$P100" --quiet &&
    ls -l "$big" >>"$OUT/steps.txt"
  if [ -f "$big" ]; then
    b=(infer --packed "$big" --weights "$model" --other-data --agg "$AGG100" --passes "$BPASSES" --json --quiet)
    step big1 30 $B/qgtc "${b[@]}" --device "$DEV"
    step big2 30 $B/qgtc "${b[@]}" --device "$MULTI2"
    [ "$MULTI2" != "$MULTI" ] && step big4 30 $B/qgtc "${b[@]}" --device "$MULTI"
  fi
  mem multi2m-resident "$MULTI" "$PASSES" --resident
  mem multi2m-cold "$MULTI" "$CPASSES"
  # Two backends (streams) a GPU: one's uploads under the other's kernels.
  [ -f "$big" ] && [ "$DEV" != cpu ] && step big1-lanes2 30 $B/qgtc "${b[@]}" --device "$DEV" --gpu-lanes 2
  if step pack2m 20 $B/qgtc partition --dataset "$syn" --parts 40 --cache "$part" --batch 1 --feature-bits 4 --pack-out "$WORK/synth2m.qgpb" --quiet; then
    p=(infer --packed "$WORK/synth2m.qgpb" --weights "$model" --other-data --passes "$PASSES" --json --quiet) # the prebuilt model is from other data
    step packed2m-1 15 $B/qgtc "${p[@]}" --device "$DEV"
    step packed2m-2 15 $B/qgtc "${p[@]}" --device "$MULTI"
    step packed2m-1-sparse 15 $B/qgtc "${p[@]}" --device "$DEV" --agg sparse
  fi
fi
[ -n "${SMI:-}" ] && kill "$SMI" 2>/dev/null

# The table: one row a run, then the ratios the issue asks for.
python3 - "$LOG" "$N2" >"$OUT/table.md" <<'EOF'
import json, os, sys
log, n2 = sys.argv[1], int(sys.argv[2])
def load(name):
    try:
        return json.load(open(os.path.join(log, name + ".json")))
    except Exception:
        return None
def rss(name):
    try:
        return int(open(os.path.join(log, name + ".rss")).read()) / 2**20
    except Exception:
        return float("nan")
gib = lambda b: "%.2f" % (b / 2**30) if b else "-"
print("| run | device | nodes | first pass ms | later passes' median ms | nodes/s (median) | start-up ms | peak host GiB | peak device GiB | predictions |")
print("|---|---|---|---|---|---|---|---|---|---|")
rate = {}
for name in ["mem2m-resident", "mem2m-cold", "multi2m-resident", "multi2m-cold", "packed2m-1", "packed2m-2", "packed2m-1-sparse", "big1", "big2", "big4", "big1-lanes2"]:
    r = load(name)
    if r is None:
        print(f"| {name} | - | - | not run or failed | | | | | | |")
        continue
    if "mode" in r:  # infer --packed
        nodes, first, med = r["batch_nodes"], r["pass_ms"], r.get("pass_median_ms") or r["pass_ms"]
        start = "open %.0f + compile %.0f + warm-up %.0f" % (r.get("open_ms", 0), r.get("compile_ms", 0), r.get("warmup_ms", 0))
        dev = r["kernel"] + " " + " ".join("%s:%d" % (d["device"], d["batches"]) for d in r.get("devices") or [])
    else:
        nodes, first = r["nodes"], r["pack_ms"] + r["compute_ms"]
        med = r.get("pass_median_ms") or first
        start = "-"
        dev = r.get("kernel", "") + " " + " ".join("%s:%d" % (d["device"], d["batches"]) for d in r.get("devices") or [])
    rate[name] = nodes / med * 1e3 if med else 0
    print(f"| {name} | {dev} | {nodes:,} | {first:.1f} | {med:.1f} | {rate[name]:,.0f} | {start} | {gib(r.get('peak_bytes', 0))} | {gib(r.get('device_peak_bytes', 0))} | {r['predictions_sha256'][:12]} |")
g = load("gen100")
print()
for name in ["synth2m", "part2m", "model2m", "gen100", "pack2m"]:
    try:
        wall = open(os.path.join(log, name + ".wall")).read().strip()
        print(f"- {name}: {wall} s wall, peak RSS {rss(name):.2f} GiB")
    except Exception:
        print(f"- {name}: not run")
def ratio(a, b, what):
    if rate.get(a) and rate.get(b):
        print(f"- {what}: {rate[a] / rate[b]:.2f}x")
print()
ratio("big1", "mem2m-resident", "big graph streamed on one GPU against the 2M graph in memory, resident (nodes/s)")
ratio("big1", "mem2m-cold", "big graph streamed on one GPU against the 2M graph in memory, cold (nodes/s)")
ratio("big2", "big1", "big graph, 2 GPUs against 1")
ratio("big4", "big1", "big graph, all GPUs (big4) against 1")
ratio("big1-lanes2", "big1", "big graph, one GPU, 2 streams against 1")
ratio("multi2m-resident", "mem2m-resident", "2M graph resident, all GPUs against 1")
ratio("multi2m-cold", "mem2m-cold", "2M graph cold, all GPUs against 1")
ratio("packed2m-2", "packed2m-1", "2M graph streamed, all GPUs against 1")
m, p = load("mem2m-resident"), load("packed2m-1")
if m and p:
    print(f"- 2M graph packed = in memory, bit for bit: {m['predictions_sha256'] == p['predictions_sha256']}")
for name in ["big1", "big2", "big4", "big1-lanes2", "packed2m-1", "packed2m-2"]:
    r = load(name)
    if r:
        print(f"- {name}: same predictions every pass {r.get('same_as_first')}; first pass read {r['read_ms']:.0f} / prepare {r['pack_ms']:.0f} / run {r['compute_ms']:.0f} ms summed; " +
              "; ".join("%s waited %.0f ms, ran %.0f ms" % (d["device"], d["wait_ms"], d["run_ms"]) for d in r.get("devices") or []))
EOF
cat "$OUT/table.md"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOG"
note "done in $((SECONDS - T0)) s"
