#!/usr/bin/env bash
# The whole job on a GPU host (device tool), carrying build/e2e (make e2e):
#   STEPS="check" bash bench/e2e/run.sh   # correctness: the resident backend's
#       conformance and whole plans against the generic backend (tcu.test),
#       then CPU and GPU predictions (SHA-256) and the GPU pass's traffic for
#       GCN, GIN and SAGE on every bundled node-classification dataset
#   STEPS="speed" bash bench/e2e/run.sh   # pass times over SPEED's graphs
#       (name:parts; synth2m is generated there), MODELS and the widths of
#       CURVE: qgtc on the GPU (resident with its pass replayed, op by op,
#       cold; dense and edge-list aggregations) and on the host's cores,
#       with each pass's breakdown; PyG (bench/e2e/pyg.py: batched and full
#       graph, fp32 and fp16, resident and cold) on the same partition
#   QGTC=build/e2e/qgtc-old    # speed: time another qgtc (make e2e E2E_OLD=<commit>)
#   PYG=0                      # speed: leave PyG out (it is the same for both)
#   VARIANTS='^gpu (resident|cold)$'  # speed: only the variants whose label matches
#   INFER_ARGS='--sparse-input off'  # speed: more flags for every qgtc infer on the real graphs
#   KERNELS=1                  # speed: also one op-by-op resident run per model at
#       4 bits with --profile-kernels: each kernel's median, kernels-<graph>-<model>.json
# Logs and tables go to $OUT (default ./out). The timeouts inside run --foreground, in
# this script's process group, so that a caller's timeout stops their commands too.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out}
mkdir -p "$OUT"
B=${B:-build/e2e}
QGTC=${QGTC:-$B/qgtc}
STEPS=${STEPS:-check speed}
DATASETS=${DATASETS:-cora citeseer pubmed_partial amazon_photo amazon_computers coauthor_cs coauthor_physics}
SPEED=${SPEED:-coauthor_physics:18 amazon_computers:7}
MODELS=${MODELS:-gcn gin sage}
PASSES=${PASSES:-20}
TRAIN=${TRAIN:---epochs 10 --qat-epochs 2}
export QGTC_CACHE=/tmp/qgtc-e2e QGTC_CACHE_DIR=/tmp/qgtc-kernels PYTHONUNBUFFERED=1
field() { python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
f=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
print(" ".join(f(r.get(k, 0)) for k in sys.argv[2:]))' "$@"; }
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores" | tee "$OUT/env.txt"

if [[ " $STEPS " == *" check "* ]]; then
  timeout --foreground 300 $B/tcu.test -test.v -test.run "${TESTS:-TestBackendSuite|TestPlanOnDevice|TestPlanReplayOnDevice|TestPlanReplayUncoveredOnDevice|TestKernelProfileOnDevice|TestUploadRing|TestAggKernelsListed|TestPreferEdgesLaunches}" -test.short \
    >"$OUT/tcu-test.log" 2>&1
  echo "tcu.test rc=$? $(grep -cE '^\s*--- PASS' "$OUT/tcu-test.log") passed, $(grep -cE '^\s*--- FAIL' "$OUT/tcu-test.log") failed; $(grep -m1 'wgmma on' "$OUT/tcu-test.log")"
  grep -E '^\s*--- FAIL' "$OUT/tcu-test.log" | head -20
  # The sanitizers on the resident backend's ops and a whole SAGE plan.
  for tool in memcheck racecheck; do
    timeout --foreground 200 compute-sanitizer --tool $tool --error-exitcode 3 $B/tcu.test -test.run \
      "${SANITIZE:-TestBackendSuite/(adds|aggregations|chains|requant|argmaxto)|TestPlanOnDevice/sage/bits=4/agg=(dense|sparse)|TestPlanReplayOnDevice/(gcn|sage)/bits=4}" -test.short \
      >"$OUT/san-$tool.log" 2>&1 &
  done
  wait
  for tool in memcheck racecheck; do
    echo "compute-sanitizer $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^ok|^FAIL|^PASS' "$OUT/san-$tool.log" | tail -3 | tr '\n' ' ')"
  done
  [ "${CHECK_CLI:-1}" = 1 ] && echo "# CPU and GPU predictions, 4 bits ($TRAIN); the GPU pass's traffic, ops and time"
  [ "${CHECK_CLI:-1}" = 1 ] && printf '%-18s %-5s %-9s %-9s %12s %10s %6s %-6s %s\n' dataset model cpu_ms gpu_ms h2d_bytes d2h_bytes ops merged same
  for ds in $( [ "${CHECK_CLI:-1}" = 1 ] && echo $DATASETS); do
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
  # Each run appends one JSON line (qgtc infer --json plus the run's labels)
  # to $OUT/runs.jsonl; table.py turns them and PyG's into RESULTS tables.
  # DATA holds partitions and models trained on the build machine
  # (build/e2e-data/pretrain.sh), so no device time goes to training.
  DATA=${DATA:-build/e2e-data}
  [ -d "$DATA/cache" ] && { mkdir -p "$QGTC_CACHE"; cp -r "$DATA/cache/." "$QGTC_CACHE/"; }
  CURVE=${CURVE:-1 2 3 4 5 6 7 8}
  for spec in $SPEED; do
    ds=${spec%%:*} k=${spec##*:} data=$ds weights=""
    part=$DATA/$ds.part
    if [ "$ds" = synth2m ]; then
      # bench/multigpu/run.sh's data step writes the same graph (SYNTH_NPZ, SYNTH_PART)
      data=${SYNTH_NPZ:-/tmp/synth2m.npz}
      [ -n "${SYNTH_PART:-}" ] && part=$SYNTH_PART
      t0=$(date +%s.%N)
      [ -f $data ] || $B/qgtc data synth --model planted --nodes 2000000 --avg-degree 40 --features 128 --feature-nnz 32 \
        --communities 400 --classes 10 --seed 1 -o $data --quiet || { echo "synth2m: synth failed"; continue; }
      echo "synth2m: generated in $(python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),1))" $t0) s"
    fi
    if [ ! -f "$part" ]; then
      part=/tmp/$ds.part
      $B/qgtc partition --dataset "$data" --parts "$k" --out "$part" --json --quiet >"$OUT/partition-$ds.json" ||
        { echo "$ds: partition failed"; continue; }
      echo "$ds: partitioned in $(field "$OUT/partition-$ds.json" seconds) s"
    fi
    for m in $MODELS; do
      for bits in $CURVE; do
        [[ "$bits" != 4 && " ${CURVE_MODELS:-gcn sage} " != *" $m "* ]] && continue
        a=(infer --dataset "$data" --model "$m" --bits "$bits" $TRAIN --partition "$part" --passes "$PASSES" --json --quiet ${INFER_ARGS:-})
        if [ "$ds" = synth2m ]; then
          w=$DATA/synth-$m-$bits.safetensors
          [ -f "$w" ] || { echo "$ds $m $bits: no $w"; continue; }
          a=(infer --dataset "$data" --weights "$w" --partition "$part" --passes "$PASSES" --json --quiet)
        fi
        vs=("gpu resident:--device gpu --resident" "gpu cold:--device gpu")
        if [[ $ds == synth2m && $bits == 4 ]]; then
          vs+=("cpu:--device cpu" "cpu batch by batch:--device cpu --merge off")
        elif [[ $bits == 4 && $ds != synth2m ]]; then
          vs+=("gpu resident op by op:--device gpu --resident --replay=false" "cpu:--device cpu" "cpu batch by batch:--device cpu --merge off")
          vs+=("gpu resident dense:--device gpu --resident --agg dense --merge off" "gpu resident edge lists merged:--device gpu --resident --agg sparse --merge on")
        fi
        line="$ds $m $bits:"
        for v in "${vs[@]}"; do
          [[ -n ${VARIANTS:-} && ! ${v%%:*} =~ $VARIANTS ]] && continue
          # CPU figures on CPU_PROCS cores (default all): a many-core GPU host's 16 as on the one-GPU host
          pre=(); [[ ${v#*:} == *"--device cpu"* && -n "${CPU_PROCS:-}" ]] && pre=(env GOMAXPROCS=$CPU_PROCS taskset -c 0-$((CPU_PROCS - 1)))
          if timeout --foreground 300 "${pre[@]}" $QGTC "${a[@]}" ${v#*:} >/tmp/r.json 2>/tmp/r.err; then
            python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.update(graph=sys.argv[2], variant=sys.argv[3]); print(json.dumps(r))' \
              /tmp/r.json "$ds" "${v%%:*}" >>"$OUT/runs.jsonl"
            line="$line | ${v%%:*} $(field /tmp/r.json pass_median_ms) (dev $(field /tmp/r.json pass_device_ms), $(field /tmp/r.json pass_launches) launches)"
          else
            line="$line | ${v%%:*} failed: $(tail -1 /tmp/r.err)"
          fi
        done
        echo "$line"
        if [[ ${KERNELS:-0} = 1 && $bits == 4 ]]; then
          # Per-kernel medians of the op-by-op resident pass (the timing adds host time: pass times from the runs above).
          if timeout --foreground 300 $QGTC "${a[@]}" --device gpu --resident --replay=false --profile-kernels >"$OUT/kernels-$ds-$m.json" 2>/tmp/r.err; then
            python3 - "$OUT/kernels-$ds-$m.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for g in r.get("kernels", []):
    print(f'{r["dataset"]} {r["model"]} kernels: {len(g["kernels"])} launches, {g["ms"]:.3f} ms ({g["segments"]} segments)')
    for k in g["kernels"]:
        print(f'  {k["ms"]:8.4f} ms  {k["op"]:<9} {k["kernel"]} ({k["grid"]}x{k["block"]})')
PY
          else
            echo "$ds $m kernels failed: $(tail -1 /tmp/r.err)"
          fi
        fi
      done
    done
    if [[ ${PYG:-1} = 1 ]] && python3 -c 'import torch_geometric' 2>/dev/null; then
      $B/export --dataset "$data" --partition "$part" --out "/tmp/$ds.pyg" &&
        timeout --foreground 400 python3 bench/e2e/pyg.py "/tmp/$ds.pyg" --models "$(echo $MODELS | tr ' ' ,)" --reps "${PYG_REPS:-20}" --json "$OUT/pyg-$ds.json" \
          >"$OUT/pyg-$ds.log" 2>&1
      echo "$ds pyg rc=$?"
      python3 - "$OUT/pyg-$ds.json" <<'PY' 2>/dev/null || tail -3 "$OUT/pyg-$ds.log"
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["results"]:
    print(f'{r["dataset"]} {x["model"]}: pyg {x["graph"]} {x["precision"]} {x["inputs"]} {x["ms_median"]} ms')
PY
    fi
  done
  python3 bench/e2e/table.py "$OUT" >"$OUT/table.md" 2>"$OUT/table.err" && cat "$OUT/table.md"
fi
# The device tool returns few files: the logs of this run go into one
# archive; runs.jsonl, PyG's JSON and the tables stay.
keep='^(runs\.jsonl|table\.md|pyg-.*\.json|kernels-.*\.json|logs-.*\.tgz)$'
(cd "$OUT" && ls | grep -vE "$keep" | tar czf "logs-$(date +%s).tgz" -T - 2>/dev/null &&
  ls | grep -vE "$keep" | xargs rm -rf)
