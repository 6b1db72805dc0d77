#!/usr/bin/env bash
# Issue 15's checks on a GPU host (device tool, carrying build/): for every
# model file under $MODELS, `qgtc infer --weights` on the CPU backend and on
# the GPU backend gives the same predictions (their SHA-256), and the GPU
# pass's host<->device traffic is its inputs plus its predictions; then the
# whole-pass compute time before (build/old, the tree before the redesign)
# and after on the same GPU, runs alternated.
#   bash bench/redesign/run.sh > $OUT/redesign.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
NEW=${NEW:-build/new/qgtc}
OLD=${OLD:-build/old/qgtc}
MODELS=${MODELS:-build/gpucache/models}
REPS=${REPS:-5}
export QGTC_CACHE=${QGTC_CACHE:-/tmp/qgtc-redesign-cache}
field() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get(sys.argv[2], "-"))' "$@"; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores"
echo "# same predictions on cpu and gpu, and the gpu pass's traffic"
printf '%-34s %-8s %-8s %12s %12s %6s %12s %s\n' model cpu_ms gpu_ms h2d_bytes d2h_bytes ops weights_up same
for f in "$MODELS"/*-a4w4.safetensors; do
  b=$(basename "$f"); ds=${b%%-*}
  $NEW infer --dataset "$ds" --weights "$f" --device cpu --json --quiet > /tmp/c.json 2>/tmp/c.err || { echo "$b cpu failed: $(tail -1 /tmp/c.err)"; continue; }
  $NEW infer --dataset "$ds" --weights "$f" --device gpu --json --quiet > /tmp/g.json 2>/tmp/g.err || { echo "$b gpu failed: $(tail -1 /tmp/g.err)"; continue; }
  same=no; [ "$(field /tmp/c.json predictions_sha256)" = "$(field /tmp/g.json predictions_sha256)" ] && same=yes
  printf '%-34s %-8s %-8s %12s %12s %6s %12s %s (%s nodes, %s batches, kernel %s)\n' "${b%%-nnone*}" \
    "$(field /tmp/c.json compute_ms)" "$(field /tmp/g.json compute_ms)" "$(field /tmp/g.json h2d_bytes)" \
    "$(field /tmp/g.json d2h_bytes)" "$(field /tmp/g.json ops)" "$(field /tmp/g.json weight_upload_bytes)" "$same" \
    "$(field /tmp/g.json nodes)" "$(field /tmp/g.json batches)" "$(field /tmp/g.json kernel)"
done
echo
echo "# whole-pass compute_ms, old (before the redesign) and new, on the same GPU, alternated (first run of each discarded)"
for f in "$MODELS"/coauthor_physics-gcn-*-a4w4.safetensors "$MODELS"/amazon_computers-gcn-*-a4w4.safetensors; do
  [ -e "$f" ] || continue
  b=$(basename "$f"); ds=${b%%-*}
  for bin in "$OLD" "$NEW"; do $bin infer --dataset "$ds" --weights "$f" --device gpu --json --quiet > /dev/null 2>&1; done
  old=""; new=""
  for i in $(seq "$REPS"); do
    $OLD infer --dataset "$ds" --weights "$f" --device gpu --json --quiet > /tmp/o.json 2>/dev/null && old="$old $(field /tmp/o.json compute_ms)"
    $NEW infer --dataset "$ds" --weights "$f" --device gpu --json --quiet > /tmp/n.json 2>/dev/null && new="$new $(field /tmp/n.json compute_ms)"
  done
  echo "$ds gcn 4-bit gpu compute_ms old:$old"
  echo "$ds gcn 4-bit gpu compute_ms new:$new"
  $NEW infer --dataset "$ds" --weights "$f" --device cpu --json --quiet > /tmp/c.json 2>/dev/null && echo "$ds gcn 4-bit cpu ($(nproc) cores) compute_ms new: $(field /tmp/c.json compute_ms)"
done
