#!/usr/bin/env bash
# PROTEINS graph classification (issue 18 item 4b): the GIN graph
# classifier over the 10 shipped folds, fp32 against the widths in BITS,
# one `qgtc sweep --fold k` process per fold, JOBS at a time (each fold trains
# its own fp32 model, then calibrates and fine-tunes a copy per width).
#
#   bench/accuracy/proteins.sh                    # into bench/accuracy/results/proteins
#   OUT=/some/dir Q=/path/to/qgtc BITS=2,4 FLAGS="--epochs 100" bench/accuracy/proteins.sh
#
# Q is a qgtc binary (built here with go when unset); FLAGS go to every
# sweep; JOBS folds run at once (default 2, at nice 10: a shared 2-core
# machine). Writes fold-<k>.json and fold-<k>.err per fold, then
# summary.txt and summary.json: mean ± std (population, as Xu et al.) over
# the folds of the last epoch's models, and beside it Xu et al.'s protocol
# (optimistic: the fp32 epoch whose test accuracy averaged over the folds
# is best, chosen on the test folds).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/accuracy/results/proteins}
BITS=${BITS:-2,4,8}
FLAGS=${FLAGS:-}
FOLDS=${FOLDS:-"1 2 3 4 5 6 7 8 9 10"}
JOBS=${JOBS:-2}
DEVICE=${DEVICE:-cpu} # gpu: every fold's quantized inference on the GPU (tcu)
mkdir -p "$OUT"
if [ -z "${Q:-}" ]; then
  Q=$(mktemp -d /tmp/qgtc-proteins.XXXXXX)/qgtc
  CGO_ENABLED=0 go build -o "$Q" ./cmd/qgtc
fi
# One core per fold: the folds are the parallelism, not the ops.
threads=1
echo "$Q sweep --dataset testdata/proteins --bits $BITS --fold K --device $DEVICE --out '' --json --quiet $FLAGS" >"$OUT/cmd.txt"
start=$(date +%s)
fail=0
for k in $FOLDS; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || fail=1; done
  # shellcheck disable=SC2086
  GOMAXPROCS=$threads nice -n 10 "$Q" sweep --dataset testdata/proteins --bits "$BITS" --fold "$k" --device "$DEVICE" --out '' --json --quiet $FLAGS \
    >"$OUT/fold-$k.json" 2>"$OUT/fold-$k.err" &
done
for job in $(jobs -p); do wait "$job" || fail=1; done
echo "wall seconds: $(($(date +%s) - start))" >>"$OUT/cmd.txt"
[ "$fail" = 0 ] || { echo "a fold failed: see $OUT/fold-*.err" >&2; exit 1; }
python3 - "$OUT" $FOLDS <<'PY'
import json, math, sys
out, folds = sys.argv[1], sys.argv[2:]
rows = {}
train = []
curves = []
for k in folds:
    r = json.load(open(f"{out}/fold-{k}.json"))
    curves.extend(r["fp32_test_curve"])
    rows.setdefault("fp32", []).extend(r["fp32_accuracy"]["per_fold"])
    train.append(r["fp32_train_seconds_per_fold"])
    for w in r["widths"]:
        rows.setdefault(str(w["abits"]), []).extend(w["accuracy"]["per_fold"])
        rows.setdefault("qat_s_" + str(w["abits"]), []).append(w["qat_seconds_per_fold"])
def ms(v):
    m = sum(v) / len(v)
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / len(v))
summary = {"folds": len(folds), "fp32_train_seconds_per_fold": ms(train)[0]}
lines = [f"PROTEINS, {len(folds)} folds, fp32 training {ms(train)[0]:.1f} s per fold (one core each)"]
fm = ms(rows["fp32"])[0]
for name, v in rows.items():
    if name.startswith("qat_s_"):
        continue
    m, s = ms(v)
    summary[name] = {"mean": m, "std": s, "per_fold": v}
    d = "" if name == "fp32" else f"  ({100 * (m - fm):+.2f} vs fp32, calibration + QAT {ms(rows['qat_s_' + name])[0]:.1f} s per fold)"
    label = name if name == "fp32" else name + " bits"
    lines.append(f"{label:>7}: {100 * m:.2f} ± {100 * s:.2f}%{d}")
epochs = min(len(c) for c in curves)
means = [sum(c[e] for c in curves) / len(curves) for e in range(epochs)]
best = max(range(epochs), key=lambda e: (means[e], -e))
xm, xs = ms([c[best] for c in curves])
summary["xu_protocol"] = {"epoch": best + 1, "mean": xm, "std": xs, "per_fold": [c[best] for c in curves]}
lines.append(f"Xu et al.'s protocol (optimistic: fp32 epoch chosen on the test folds): epoch {best + 1} of {epochs}, {100 * xm:.2f} ± {100 * xs:.2f}%")
open(f"{out}/summary.json", "w").write(json.dumps(summary, indent=2) + "\n")
open(f"{out}/summary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
