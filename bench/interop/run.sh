#!/usr/bin/env bash
# PyG interop on the GPU host (python3 with torch, torch_geometric and
# safetensors), carrying build/interop (make interop):
#   1. PyG trains GCN, GIN and GraphSAGE (BasicGNN, the plain recipe) on each
#      dataset as bench/interop/export wrote it, and saves the state dicts
#      with safetensors.torch.save_file; qgtc infer --weights runs each at
#      each of BITS as a user would (PTQ then the recipe's QAT at 4 bits and
#      less, PTQ alone above) and, at 4 bits and less, PTQ alone
#      (--qat-epochs 0), on the CPU.
#   2. qgtc train --out writes fp32 GCN, GIN and SAGE; PyG loads them with
#      load_state_dict (strict) and its logits are compared with qgtc's.
# Logs, JSON and table.md go to $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
B=${B:-build/interop}
DATASETS=${DATASETS:-cora citeseer}
MODELS=${MODELS:-gcn gin sage}
BITS=${BITS:-32 8 4 2 1}
QEPOCHS=${QEPOCHS:-100} # qgtc train epochs of the models PyG loads
PY=bench/interop/pyg_interop.py
export QGTC_CACHE=/tmp/qgtc-interop PYTHONUNBUFFERED=1
mkdir -p "$OUT"
python3 $PY check || exit 3
for f in qgtc export; do
  [[ -x $B/$f ]] || { echo "run.sh: $B/$f missing: run make interop first"; exit 2; }
done
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores" | tee "$OUT/env.txt"
comma() { echo "$*" | tr ' ' ,; }
for ds in $DATASETS; do
  W=$OUT/$ds
  mkdir -p "$W"
  t0=$SECONDS
  $B/export --dataset "$ds" --out "$W/data" || { echo "$ds: export failed"; continue; }
  python3 $PY train "$W/data" --out "$W" --models "$(comma $MODELS)" >"$W/pyg-train.json" 2>"$W/pyg-train.log" \
    || { echo "$ds: PyG training failed:"; tail -5 "$W/pyg-train.log"; continue; }
  for m in $MODELS; do
    for b in $BITS; do
      $B/qgtc infer --dataset "$ds" --weights "$W/pyg-$m.safetensors" --bits "$b" --parts 1 --json --quiet \
        >"$W/infer-$m-$b.json" 2>"$W/infer-$m-$b.log" || { echo "$ds $m $b bits:"; tail -2 "$W/infer-$m-$b.log"; }
      ((b > 4)) && continue
      $B/qgtc infer --dataset "$ds" --weights "$W/pyg-$m.safetensors" --bits "$b" --qat-epochs 0 --parts 1 --json --quiet \
        >"$W/infer-$m-$b-ptq.json" 2>"$W/infer-$m-$b-ptq.log" || { echo "$ds $m $b bits PTQ:"; tail -2 "$W/infer-$m-$b-ptq.log"; }
    done
  done
  specs=()
  for m in $MODELS; do
    $B/qgtc train --dataset "$ds" --model "$m" --normalize row --epochs "$QEPOCHS" --out "$W/qgtc-$m.safetensors" --json --quiet \
      >"$W/qgtc-train-$m.json" 2>"$W/qgtc-train-$m.log" && specs+=("$m=$W/qgtc-$m.safetensors") \
      || { echo "$ds qgtc train $m:"; tail -2 "$W/qgtc-train-$m.log"; }
  done
  if ((${#specs[@]})); then
    $B/export --dataset "$ds" --out "$W/data" $(printf -- '--logits %s ' "${specs[@]}") \
      && python3 $PY logits "$W/data" --models "$(comma "${specs[@]}")" >"$W/logits.json" 2>"$W/logits.log" \
      || { echo "$ds logits:"; tail -3 "$W/logits.log"; }
  fi
  echo "$ds done in $((SECONDS - t0)) s"
done
python3 $PY table "$OUT" | tee "$OUT/table.md"
