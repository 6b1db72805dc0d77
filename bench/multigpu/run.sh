#!/usr/bin/env bash
# Several GPUs of one host (issue 21 item 2), run on a multi-GPU host
# (device tool, e.g. nvidia-h100-x4), carrying build/multi (make multigpu);
# it builds nothing.
#   STEPS="data" bash bench/multigpu/run.sh    # the synthetic graph, its
#       partition, and both graphs' models trained once (cached in $DATA)
#   STEPS="speed" bash bench/multigpu/run.sh   # the table: qgtc infer on
#       --device gpu:0, gpu:0,1 and gpu:all (and the CPU for the hashes),
#       resident and cold, --passes $PASSES; medians of the passes after the
#       first, speed-up against gpu:0, predictions_sha256 against the CPU's
# STEPS="data speed" does both (a few minutes at the default size). $DATA
# stays on the host between calls while it is held; logs and the table go
# to $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
B=${B:-build/multi}
DATA=${DATA:-/tmp/qgtc-multi}
STEPS=${STEPS:-data speed}
NODES=${NODES:-2000000}   # synthetic graph: planted partition, with features
DEG=${DEG:-40}            # average degree: NODES*DEG/2 undirected edges
FEATS=${FEATS:-128}
FNNZ=${FNNZ:-32}          # non-zero features a node
COMMUNITIES=${COMMUNITIES:-400}
CLASSES=${CLASSES:-10}    # bench/e2e's synth2m: the same graph, file and partition
PARTS=${PARTS:-40}        # 50,000 nodes a part
BATCH=${BATCH:-1}         # parts per batch
PASSES=${PASSES:-20}
DEVICES=${DEVICES:-gpu:0 gpu:0,1 gpu:all}
TRAIN=${TRAIN:---epochs 1 --qat-epochs 0}   # the timings need a model, not a good one
mkdir -p "$OUT" "$DATA/synth"
export QGTC_CACHE=$DATA/cache QGTC_CACHE_DIR=$DATA/kernels
field() { python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
f=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
print(" ".join(f(r.get(k, 0)) for k in sys.argv[2:]))' "$@"; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs), $(nproc) cores" | tee "$OUT/env.txt"
$B/qgtc info >"$OUT/info.txt" 2>&1

syn=$DATA/synth/synth.npz
# graph:partition file:parts per batch (Physics as bench/e2e runs it: 18 batches)
graphs="$syn:$DATA/synth.part:$BATCH coauthor_physics:$DATA/physics.part:1"
[ "${SYNTH_ONLY:-0}" = 1 ] && graphs="$syn:$DATA/synth.part:$BATCH"

if [[ " $STEPS " == *" data "* ]]; then
  t0=$(date +%s)
  [ -f "$syn" ] || $B/qgtc data synth --model planted --nodes "$NODES" --avg-degree "$DEG" --features "$FEATS" --feature-nnz "$FNNZ" \
    --communities "$COMMUNITIES" --classes "$CLASSES" --seed 1 --out "$syn" --quiet | tee "$OUT/synth.log"
  t1=$(date +%s)
  [ -f "$DATA/synth.part" ] || $B/qgtc partition --dataset "$syn" --parts "$PARTS" --out "$DATA/synth.part" --quiet >"$OUT/partition.log" 2>&1
  [ "${SYNTH_ONLY:-0}" = 1 ] || [ -f "$DATA/physics.part" ] || $B/qgtc partition --dataset coauthor_physics --parts 18 --out "$DATA/physics.part" --quiet >>"$OUT/partition.log" 2>&1
  t2=$(date +%s)
  for g in $graphs; do # train and cache each model once, on the CPU
    IFS=: read -r ds part batch <<<"$g"
    $B/qgtc infer --dataset "$ds" --partition "$part" --batch "$batch" $TRAIN --device cpu --json --quiet \
      >"$OUT/train-$(basename "$ds" .npz).json" 2>"$OUT/train.err" || { echo "training on $ds failed: $(tail -1 "$OUT/train.err")"; exit 1; }
  done
  echo "data: synth $((t1 - t0)) s, partitions $((t2 - t1)) s, training and a CPU pass $(($(date +%s) - t2)) s"
fi

if [[ " $STEPS " == *" speed "* ]]; then
  table=$OUT/table.md
  {
    echo "| graph | devices | inputs | pass median ms | speed-up vs gpu:0 | first pass ms | nodes/s (median pass) | batches per device | same predictions as CPU |"
    echo "|---|---|---|---|---|---|---|---|---|"
  } >"$table"
  for g in $graphs; do
    IFS=: read -r ds part batch <<<"$g"
    name=$(basename "$ds" .npz)
    a=(infer --dataset "$ds" --partition "$part" --batch "$batch" $TRAIN --passes "$PASSES" --json --quiet)
    $B/qgtc "${a[@]}" --device cpu --passes 1 >"$OUT/$name-cpu.json" 2>"$OUT/$name-cpu.err" || { echo "$name cpu failed: $(tail -1 "$OUT/$name-cpu.err")"; continue; }
    want=$(field "$OUT/$name-cpu.json" predictions_sha256)
    nodes=$(field "$OUT/$name-cpu.json" nodes)
    for mode in resident cold; do
      flag=""; [ $mode = resident ] && flag=--resident
      base=""
      for dev in $DEVICES; do
        r=$OUT/$name-$mode-${dev//[:,]/_}.json
        if ! $B/qgtc "${a[@]}" --device "$dev" $flag >"$r" 2>"$r.err"; then
          echo "| $name | $dev | $mode | failed: $(tail -1 "$r.err") |" >>"$table"; continue
        fi
        med=$(field "$r" pass_median_ms)
        [ -z "$base" ] && base=$med
        per=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(" ".join("%s:%d" % (d["device"], d["batches"]) for d in r.get("devices") or []) or "one device")' "$r")
        same=no; [ "$(field "$r" predictions_sha256)" = "$want" ] && same=yes
        python3 -c 'import sys; b,m,n=map(float,sys.argv[1:4]); print(f"| {sys.argv[4]} | {sys.argv[5]} | {sys.argv[6]} | {m:.3f} | {b/m:.2f}x | {sys.argv[7]} | {n/m*1e3:,.0f} | {sys.argv[8]} | {sys.argv[9]} |")' \
          "$base" "$med" "$nodes" "$name" "$dev" "$mode" "$(field "$r" compute_ms)" "$per" "$same" >>"$table"
      done
    done
  done
  cat "$table"
fi
