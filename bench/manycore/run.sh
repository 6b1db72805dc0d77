#!/usr/bin/env bash
# Issue 19 on a many-core host with no Go toolchain: the 4-bit GCN pass at
# GOMAXPROCS 1..16, warm (layers BenchmarkQGCNSpeed) and one-shot (`qgtc
# infer --json --passes P`: the first pass's compute_ms against the median
# of the later passes of the same process), PyTorch fp32 at as many threads
# over the whole graph (torch_cpu.py: torch_geometric GCNConv and
# torch.sparse.mm), and the multilevel partition at every core count with
# its edge cut, on Coauthor Physics (testdata), a 1M-node planted graph (512
# features) and a 2M-node one (avg degree 20: 40M stored edges; 128
# features) that the built qgtc generates here with fixed seeds. Built by
# `make manycore` (static binaries in build/manycore, ~35 MB; old binaries,
# main before issue 19's work, are optional and measured last); run from the
# repository root:
#   bash bench/manycore/run.sh          # table.md, results.tsv and log.txt in $OUT
# Every step is bounded by what is left of BUDGET seconds (default 450) and
# steps are taken in order of need, so the table holds whatever finished.
# Knobs: SCALE (node counts × SCALE, 1; a dry run on 2 cores: 0.02),
# CORES ("1 2 4 8 16", cut to nproc), WARM (passes per warm figure, 5),
# PASSES (passes of each one-shot process, 5), REPS (one-shot processes per
# core count, 1), TORCH_CPUS (threads torch runs with, the largest of
# CORES), OLDNEW_DATA (built-in graphs of the old/new warm comparison,
# "coauthor_physics planted-1m"), STEPS (the measurements to take, "all"
# or some of: warm torch oneshot variants partition old; the graphs, the
# partition files and, for oneshot and variants, the models are always
# made), e.g. STEPS="partition oneshot" for the partition at every core
# count and the one-shot runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=${BIN:-build/manycore}
OUT=${OUT:-$BIN/out}
BUDGET=${BUDGET:-450}
SCALE=${SCALE:-1}
WARM=${WARM:-5}
REPS=${REPS:-1}
PASSES=${PASSES:-5}
OLDNEW_DATA=${OLDNEW_DATA:-coauthor_physics planted-1m}
STEPS=${STEPS:-all}
want() { [ "$STEPS" = all ] || [[ " $STEPS " == *" $1 "* ]]; }
W=${WORK:-${TMPDIR:-/tmp}/qgtc-manycore}
mkdir -p "$OUT" "$W"
LOG=$OUT/log.txt
RES=$OUT/results.tsv
: > "$LOG"
: > "$RES"
export QGTC_DATA=$ROOT/testdata QGTC_CACHE=$W/cache
T0=$(date +%s)
NPROC=$(nproc)
CORES=${CORES:-1 2 4 8 16}
cores=()
for c in $CORES; do ((c <= NPROC)) && cores+=("$c"); done
MAXC=${cores[-1]}
CSV=$(IFS=,; echo "${cores[*]}")
TORCH_CPUS=${TORCH_CPUS:-$MAXC}
NEW=$BIN/qgtc
OLD=$BIN/old/qgtc
for f in "$NEW" "$BIN/layers.test" "$BIN/export"; do
  [ -x "$f" ] || { echo "missing $f: build it first (make manycore)" >&2; exit 2; }
done
HAVE_OLD=1
{ [ -x "$OLD" ] && [ -x "$BIN/old/layers.test" ]; } || { HAVE_OLD=0; echo "no $BIN/old binaries: new only" >> "$LOG"; }

left() { echo $((BUDGET - ($(date +%s) - T0))); }
log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG" >&2; }
# run EST CMD...: CMD, bounded by the time left, when at least EST seconds
# are; its output to stdout, its stderr to the log.
run() {
  local est=$1 l
  shift
  l=$(left)
  if ((l < est)); then
    log "skipped (${l}s left, ~${est}s needed): $*"
    return 99
  fi
  log "$*"
  timeout -k 5 "$l" "$@" 2>> "$LOG"
  local rc=$?
  ((rc == 0)) || log "exit $rc: $*"
  return $rc
}
res() { printf '%s\n' "$(IFS=$'\t'; echo "$*")" >> "$RES"; }
jget() { python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
print("\t".join(str(r.get(k, "-")) for k in sys.argv[2:]))' "$@"; }

log "host: $NPROC cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), cores ${cores[*]}, SCALE $SCALE, budget ${BUDGET}s"
"$NEW" info >> "$LOG" 2>&1

# 1. The graphs: Physics from testdata; the planted ones drawn here.
N1=$(python3 -c "print(max(4000, int(1000000*$SCALE)))")
N2=$(python3 -c "print(max(8000, int(2000000*$SCALE)))")
K1=$((N1 / 2000))
K2=$((N2 / 2000))
run 60 "$NEW" data synth --quiet --model planted --nodes "$N1" --communities "$K1" --avg-degree 10 --mixing 0.1 --seed 1 \
  --features 512 --feature-nnz 16 --classes 10 -o "$W/planted1m.npz" > /dev/null || exit 1
run 90 "$NEW" data synth --quiet --model planted --nodes "$N2" --communities "$K2" --avg-degree 20 --mixing 0.1 --seed 2 \
  --features 128 --feature-nnz 16 --classes 10 -o "$W/synth2m.npz" > /dev/null || exit 1
GRAPHS="physics planted1m synth2m"
declare -A DS PARTS
DS[physics]=coauthor_physics PARTS[physics]=18
DS[planted1m]=$W/planted1m.npz PARTS[planted1m]=$K1
DS[synth2m]=$W/synth2m.npz PARTS[synth2m]=$K2

# part BINARY LABEL GRAPH CORES [OUT]: one timed partition and its edge cut.
part() {
  local bin=$1 label=$2 g=$3 c=$4 out=${5:-}
  run 60 env GOMAXPROCS="$c" "$bin" partition --dataset "${DS[$g]}" --parts "${PARTS[$g]}" --json --quiet \
    ${out:+--out "$out"} > "$W/part.json" &&
    res partition "$g" "$label" "$c" "$(jget "$W/part.json" seconds edge_cut nodes edges)"
}

# 2. Partitions: the files every later step batches by (new, all cores:
# also the all-cores timing), then 1 core on the large graphs.
for g in $GRAPHS; do
  part "$NEW" new "$g" "$MAXC" "$W/$g.part" || exit 1
done
if want partition; then
  for g in planted1m synth2m; do
    [ "$MAXC" = 1 ] || part "$NEW" new "$g" 1
  done
fi

# 3. Models: a 4-bit GCN (hidden 64) calibrated on untrained weights per
# graph (--epochs 0: speed does not need accuracy), read by every one-shot
# run; and each graph exported for torch.
declare -A MODEL
for g in $GRAPHS; do
  { want oneshot || want variants || want old; } || break
  run 60 env GOMAXPROCS="$MAXC" "$NEW" infer --dataset "${DS[$g]}" --partition "$W/$g.part" --bits 4 --epochs 0 --qat-epochs 0 \
    --json --quiet > "$W/train.json" || exit 1
  MODEL[$g]=$(ls "$QGTC_CACHE"/models/"$(basename "${DS[$g]}" .npz)"-gcn-*-a4w4.safetensors | head -1)
  log "$g model ${MODEL[$g]}"
done

# warm BINARY LABEL SPEC NAMES EST [IMPLS]: BenchmarkQGCNSpeed's 4-bit pass (as the
# plan picks: batches of up to 2^18 rows merged into one pass; and
# batchwise, never merged: lanes of whole batches) at every core count, for
# the graphs NAMES (QGTC_SPEED_DATA SPEC, or built-in names with SPEC empty).
warm() {
  local bin=$1 label=$2 spec=$3 names=$4 est=$5 impls=${6:-qgtc|qgtc-batchwise}
  run "$est" env QGTC_SPEED_DATA="$spec" "$bin" -test.run '^$' \
    -test.bench "QGCNSpeed/data=($names)\$/impl=($impls)\$/bits=4\$" -test.cpu "$CSV" \
    -test.benchtime "${WARM}x" -test.timeout 0 > "$W/warm.txt"
  cat "$W/warm.txt" >> "$LOG"
  awk -v label="$label" '/^BenchmarkQGCNSpeed/ {
      n = split($1, p, "/"); data = p[2]; sub(/^data=/, "", data)
      impl = ($1 ~ /torch-fp32/) ? "torch-batches" : ($1 ~ /qgtc-batchwise/) ? label "-batchwise" : label
      c = 1; if (match($1, /-[0-9]+$/)) c = substr($1, RSTART + 1)
      ms = ""; for (i = 2; i < NF; i++) if ($(i+1) == "ms/pass") ms = $i
      if (ms != "") printf "warm\t%s\t%s\t%s\t%s\n", data, impl, c, ms }' "$W/warm.txt" >> "$RES"
}
# oneshot BINARY LABEL GRAPH CORES [ENV...] [-- FLAGS...]: qgtc infer in a
# fresh process, PASSES passes: the first pass's compute_ms and the median
# of the later passes (pack + compute each) of the same process.
oneshot() {
  local bin=$1 label=$2 g=$3 c=$4
  shift 4
  local envs=() flags=()
  while (($#)) && [ "$1" != -- ]; do envs+=("$1"); shift; done
  (($#)) && shift
  flags=("$@")
  local passes=$PASSES
  [ "$label" = old ] && passes= # the old binary knows no --passes
  run 30 env GOMAXPROCS="$c" "${envs[@]}" "$bin" infer --dataset "${DS[$g]}" --partition "$W/$g.part" --weights "${MODEL[$g]}" \
    --json --quiet ${passes:+--passes "$passes"} "${flags[@]}" > "$W/os.json" &&
    res oneshot "$g" "$label" "$c" "$(jget "$W/os.json" compute_ms pack_ms total_ms predictions_sha256 pass_median_ms merged setup_ms)"
}
# torchrun GRAPH: PyTorch fp32 over the whole graph at TORCH_CPUS threads.
torchrun() {
  local g=$1
  [ -d "$W/$g.torch" ] || run 60 "$BIN/export" --dataset "${DS[$g]}" --partition "$W/$g.part" --out "$W/$g.torch" >> "$LOG" || return
  run 90 python3 bench/manycore/torch_cpu.py "$W/$g.torch" --threads "$TORCH_CPUS" --reps "$WARM" > "$W/torch.json" &&
    res torch "$g" "$TORCH_CPUS" "$(jget "$W/torch.json" ms_per_pass sparse_ms pyg_ms threads torch)"
}

# 4. Warm passes, new, on the files the CLI reads (same batches), and
# torch at TORCH_CPUS threads on the same graphs.
SPEC="physics=coauthor_physics,$W/physics.part;planted1m=$W/planted1m.npz,$W/planted1m.part;synth2m=$W/synth2m.npz,$W/synth2m.part"
for g in $GRAPHS; do
  want warm && warm "$BIN/layers.test" new "$SPEC" "$g" 40
  want torch && torchrun "$g"
done
# 5. One-shot runs, new, at every core count.
want oneshot && for g in $GRAPHS; do
  for c in "${cores[@]}"; do
    for _ in $(seq "$REPS"); do oneshot "$NEW" new "$g" "$c"; done
  done
done
# 6. Where a cold pass loses, on Physics at all cores: the same run with
# the collector off (GOGC=off), never merged, and with the runtime's GC
# trace in the log.
if want variants; then
  oneshot "$NEW" new-gcoff physics "$MAXC" GOGC=off
  oneshot "$NEW" new-unmerged physics "$MAXC" -- --merge off
  oneshot "$NEW" new-gctrace physics "$MAXC" GODEBUG=gctrace=1
fi
# 7. The partition at the other core counts.
want partition && for g in planted1m synth2m; do
  for c in "${cores[@]}"; do
    [ "$c" = 1 ] || [ "$c" = "$MAXC" ] || part "$NEW" new "$g" "$c"
  done
done
# 8. Old binaries, when built: partition, one-shot and warm at 1 and all cores.
if ((HAVE_OLD)) && want old; then
  for c in 1 "$MAXC"; do part "$OLD" old planted1m "$c"; done
  for g in $GRAPHS; do
    for c in 1 "$MAXC"; do oneshot "$OLD" old "$g" "$c"; done
  done
  for d in $OLDNEW_DATA; do
    warm "$BIN/old/layers.test" old "" "$d" 60 qgtc
    warm "$BIN/layers.test" new "" "$d" 60 "qgtc|qgtc-batchwise"
  done
fi

python3 bench/manycore/table.py "$RES" > "$OUT/table.md" 2>> "$LOG"
cat "$OUT/table.md"
log "done in $(($(date +%s) - T0))s"
