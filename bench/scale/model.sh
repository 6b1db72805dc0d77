#!/usr/bin/env bash
# Builds, on the build machine (make scale), the 4-bit GCN that h200.sh
# times, so that the GPU host spends no time or memory calibrating it:
# calibrated ($TRAIN) on a planted graph of $NODES nodes made with the 2M
# graph's generator settings (128 features, 32 a node, 10 classes), whose
# quantizer and classes the 2M and the big graph share. Writes $OUTM.
# ARCH (gcn, gin, sage) and BITS (1..8) pick another model for the same
# graphs (bench/e2e's synth2m runs).
#   B=build/scale OUTM=build/scale/model-a4w4.safetensors bash bench/scale/model.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build/scale}
OUTM=${OUTM:-$B/model-a4w4.safetensors}
NODES=${NODES:-200000}
TRAIN=${TRAIN:---epochs 0 --qat-epochs 0} # h200.sh's: calibrated, untrained
ARCH=${ARCH:-gcn}
BITS=${BITS:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export QGTC_CACHE=$tmp/cache
$B/qgtc data synth --model planted --nodes "$NODES" --avg-degree 40 --features 128 --feature-nnz 32 \
  --communities 40 --classes 10 --seed 1 --out "$tmp/small.npz" --quiet
$B/qgtc partition --dataset "$tmp/small.npz" --parts 8 --out "$tmp/small.part" --quiet
$B/qgtc infer --dataset "$tmp/small.npz" --partition "$tmp/small.part" --model "$ARCH" --bits "$BITS" $TRAIN --device cpu --json --quiet >"$tmp/calib.json"
cp "$(ls "$QGTC_CACHE"/models/*-a"$BITS"w"$BITS".safetensors | head -1)" "$OUTM"
echo "model: $OUTM ($(du -h "$OUTM" | cut -f1)), $ARCH at $BITS bits, calibrated on $NODES nodes"
