#!/usr/bin/env bash
# Trains, on the build machine, the models bench/e2e's speed step runs on the
# GPU host, so that no device time goes to training; carry $DATA there
# (run.sh DATA=...). Writes $DATA/<graph>.part, $DATA/cache (QGTC_CACHE) and,
# from a 200k-node planted graph made with synth2m's generator settings,
# $DATA/synth-<model>-<bits>.safetensors for synth2m (same features and
# classes, so the weights fit the 2M-node graph).
#   B=build/e2e DATA=build/e2e-carry bash bench/e2e/pretrain.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build/e2e}
DATA=${DATA:-build/e2e-carry}
TRAIN=${TRAIN:---epochs 10 --qat-epochs 2}   # run.sh's default: the cache keys must match
MODELS=${MODELS:-gcn gin sage}
CURVE=${CURVE:-1 2 3 4 5 6 7 8}               # Physics GCN and SAGE; the others at 4 bits
mkdir -p "$DATA"
export QGTC_CACHE=$(cd "$DATA" && pwd)/cache
for spec in coauthor_physics:18 amazon_computers:7; do
  ds=${spec%%:*} k=${spec##*:}
  [ -f "$DATA/$ds.part" ] || $B/qgtc partition --dataset "$ds" --parts "$k" --out "$DATA/$ds.part" --quiet
done
small=/tmp/synth200k.npz
[ -f $small ] || $B/qgtc data synth --model planted --nodes 200000 --avg-degree 40 --features 128 --feature-nnz 32 \
  --communities 40 --classes 10 --seed 1 -o $small --quiet
[ -f /tmp/synth200k.part ] || $B/qgtc partition --dataset $small --parts 40 --out /tmp/synth200k.part --quiet
train() { # dataset partition model bits
  $B/qgtc infer --dataset "$1" --partition "$2" --model "$3" --bits "$4" $TRAIN --json --quiet >/dev/null ||
    echo "pretrain: $1 $3 $4 bits failed"
}
for m in $MODELS; do
  train amazon_computers "$DATA/amazon_computers.part" "$m" 4
  for b in $CURVE; do
    [[ $b != 4 && $m == gin ]] && continue
    train coauthor_physics "$DATA/coauthor_physics.part" "$m" "$b"
  done
  train $small /tmp/synth200k.part "$m" 4
  cp "$(ls -t "$DATA"/cache/models/synth200k-"$m"-*-a4w4.safetensors | head -1)" "$DATA/synth-$m-4.safetensors"
done
echo "pretrain: $(ls "$DATA"/cache/models | wc -l) models in $DATA/cache"
