#!/usr/bin/env bash
# The whole job on a GPU host (device tool), carrying build/e2e (make e2e):
#   STEPS="check" bash bench/e2e/run.sh   # correctness: the resident backend's
#       conformance and whole plans against the generic backend (tcu.test),
#       then CPU and GPU predictions (SHA-256) and the GPU pass's traffic for
#       GCN, GIN and SAGE on every bundled node-classification dataset
#   STEPS="speed" bash bench/e2e/run.sh   # pass times, qgtc (GPU resident and
#       cold, merged and batch by batch, CPU) and PyG (bench/e2e/pyg.py:
#       batched and full graph, fp32 and fp16, resident and cold) on the same
#       partition, and the pre-redesign binary (build/e2e/qgtc-old) on the GPU
# Logs and tables go to $OUT (default ./out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
mkdir -p "$OUT"
B=${B:-build/e2e}
STEPS=${STEPS:-check speed}
DATASETS=${DATASETS:-cora citeseer pubmed_partial amazon_photo amazon_computers coauthor_cs coauthor_physics}
SPEED=${SPEED:-coauthor_physics:18 amazon_computers:7}
MODELS=${MODELS:-gcn gin sage}
PASSES=${PASSES:-20}
TRAIN=${TRAIN:---epochs 30 --qat-epochs 5}
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels PYTHONUNBUFFERED=1
field() { python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
f=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
print(" ".join(f(r.get(k, 0)) for k in sys.argv[2:]))' "$@"; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores" | tee "$OUT/env.txt"

if [[ " $STEPS " == *" check "* ]]; then
  timeout 300 $B/tcu.test -test.v -test.run 'TestBackendSuite|TestPlanOnDevice|TestAggKernelsListed|TestPreferEdgesLaunches' -test.short \
    >"$OUT/tcu-test.log" 2>&1
  echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' "$OUT/tcu-test.log") passed, $(grep -cE '^\s*--- FAIL' "$OUT/tcu-test.log") failed; $(grep -m1 'wgmma on' "$OUT/tcu-test.log")"
  grep -E '^\s*--- FAIL' "$OUT/tcu-test.log" | head -20
  # The sanitizers on the resident backend's ops and a whole SAGE plan.
  for tool in memcheck racecheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 $B/tcu.test -test.run \
      'TestBackendSuite/(adds|aggregations|chains)|TestPlanOnDevice/sage/bits=4/agg=(dense|sparse)' -test.short \
      >"$OUT/san-$tool.log" 2>&1 &
  done
  wait
  for tool in memcheck racecheck; do
    echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^ok|^FAIL|^PASS' "$OUT/san-$tool.log" | tail -3 | tr '\n' ' ')"
  done
  echo "# CPU and GPU predictions, 4 bits ($TRAIN); the GPU pass's traffic, ops and time"
  printf '%-18s %-5s %-9s %-9s %12s %10s %6s %-6s %s\n' dataset model cpu_ms gpu_ms h2d_bytes d2h_bytes ops merged same
  for ds in $DATASETS; do
    for m in $MODELS; do
      a=(infer --dataset "$ds" --model "$m" --bits 4 $TRAIN --json --quiet)
      $B/qgtc "${a[@]}" --device cpu >/tmp/c.json 2>/tmp/c.err || { echo "$ds $m cpu failed: $(tail -1 /tmp/c.err)"; continue; }
      $B/qgtc "${a[@]}" --device gpu >/tmp/g.json 2>/tmp/g.err || { echo "$ds $m gpu failed: $(tail -1 /tmp/g.err)"; continue; }
      same=no; [ "$(field /tmp/c.json predictions_sha256)" = "$(field /tmp/g.json predictions_sha256)" ] && same=yes
      printf '%-18s %-5s %-9s %-9s %12s %10s %6s %-6s %s (acc %s, %s nodes, %s batches)\n' "$ds" "$m" \
        "$(field /tmp/c.json compute_ms)" "$(field /tmp/g.json compute_ms)" "$(field /tmp/g.json h2d_bytes)" \
        "$(field /tmp/g.json d2h_bytes)" "$(field /tmp/g.json ops)" "$(field /tmp/g.json merged)" "$same" \
        "$(field /tmp/g.json accuracy)" "$(field /tmp/g.json nodes)" "$(field /tmp/g.json batches)"
    done
  done
fi

if [[ " $STEPS " == *" speed "* ]]; then
  echo "# ms per pass over the whole graph, 4 bits, hidden 64: qgtc median of $((PASSES - 1)) passes after the first; PyG median of 20"
  for spec in $SPEED; do
    ds=${spec%%:*} k=${spec##*:}
    part=/tmp/$ds.part
    $B/qgtc partition --dataset "$ds" --parts "$k" --out "$part" --quiet >/dev/null || { echo "$ds: partition failed"; continue; }
    for m in $MODELS; do
      a=(infer --dataset "$ds" --model "$m" --bits 4 $TRAIN --partition "$part" --passes "$PASSES" --json --quiet)
      line="$ds $m:"
      for v in "gpu resident:--device gpu --resident" "gpu cold:--device gpu" "gpu batch-by-batch cold:--device gpu --merge off" \
        "cpu:--device cpu" "cpu batch-by-batch:--device cpu --merge off"; do
        if $B/qgtc "${a[@]}" ${v#*:} >/tmp/r.json 2>/tmp/r.err; then
          line="$line | ${v%%:*} $(field /tmp/r.json pass_median_ms) (first $(field /tmp/r.json compute_ms), up $(field /tmp/r.json pass_h2d_bytes) B, $(field /tmp/r.json pass_ops) ops)"
        else
          line="$line | ${v%%:*} failed: $(tail -1 /tmp/r.err)"
        fi
      done
      echo "$line"
    done
    if [ -x $B/qgtc-old ]; then
      old=""
      for i in 1 2 3 4 5 6; do
        $B/qgtc-old infer --dataset "$ds" --bits 4 $TRAIN --parts "$k" --device gpu --json --quiet >/tmp/o.json 2>/tmp/o.err && old="$old $(field /tmp/o.json compute_ms)"
      done
      echo "$ds gcn: pre-redesign binary, gpu, one-shot compute_ms (first run trains):$old"
    fi
    if python3 -c 'import torch_geometric' 2>/dev/null; then
      $B/export --dataset "$ds" --partition "$part" --out "/tmp/$ds.pyg" &&
        timeout 240 python3 bench/e2e/pyg.py "/tmp/$ds.pyg" --models "$(echo $MODELS | tr ' ' ,)" --reps "${PYG_REPS:-20}" --json "$OUT/pyg-$ds.json" \
          >"$OUT/pyg-$ds.log" 2>&1
      echo "$ds pyg rc=$?"
      python3 - "$OUT/pyg-$ds.json" <<'EOF' 2>/dev/null || tail -3 "$OUT/pyg-$ds.log"
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["results"]:
    print(f'{r["dataset"]} {x["model"]}: pyg {x["graph"]} {x["precision"]} {x["inputs"]} {x["ms_median"]} ms')
EOF
    fi
  done
fi
