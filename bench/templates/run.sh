#!/bin/bash
# bench/templates/run.sh: qgtc's full-precision GPU templates on a GPU host
# (no Go there): the GPU conformance tests, then the timings against
# cuSPARSE and PyG. Build first, here: `make templates-gpu` (build/templates),
# then on the host, carrying build/templates:
#
#   BUDGET=1 bash bench/templates/run.sh      # its time: bench/templates/RESULTS.md
#
# BUDGET scales the time per measurement (0.3 is a quick pass). STEPS picks
# "test bench" (both, the default) or one. Writes $OUT/table.md and, as each
# step runs, $OUT/logs (test log, fpbench and baseline logs and TSVs,
# nvidia-smi, run.txt with each step's rc and time), so a run cut off by a
# timeout still returns what it had measured.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/templates-out}
BUDGET=${BUDGET:-1}
STEPS=${STEPS:-"test bench"}
B=build/templates
W=$(mktemp -d)
L=$OUT/logs
mkdir -p "$L"
export QGTC_CACHE_DIR=$W/kernels
nvidia-smi >"$L/nvidia-smi.txt" 2>&1
echo "BUDGET=$BUDGET STEPS=$STEPS $(date -u +%FT%TZ)" >"$L/run.txt"
for s in $STEPS; do
	case $s in
	test)
		# GPU conformance (relative 1e-5 against the CPU templates).
		t0=$(date +%s)
		# -test.timeout below timeout's: a hang ends in Go's dump of every
		# goroutine's stack (in test.log) rather than a silent kill.
		timeout 150 "$B/tcu.test" -test.run '^TestFP(SpMMConformance|PartsSpMM|SDDMMConformance|SampledSpMM|EdgeCases)$' -test.v -test.count=1 -test.timeout 140s >"$L/test.log" 2>&1
		echo "test rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		grep -E '^(--- FAIL|FAIL|ok|PASS)' "$L/test.log" | head -20
		;;
	bench)
		# The graphs first, so that the baselines run even if fpbench stops early.
		"$B/fpbench" --export-only --out "$W/data" 2>"$L/export.log" || echo "export rc=$?" | tee -a "$L/run.txt"
		t0=$(date +%s)
		timeout 200 "$B/fpbench" --out "$W/data" --budget "$BUDGET" >"$L/qgtc.tsv" 2>"$L/fpbench.log"
		echo "fpbench rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		t0=$(date +%s)
		timeout 200 python3 -u bench/templates/baselines.py --data "$W/data" --budget "$BUDGET" >"$L/torch.tsv" 2>"$L/baselines.log"
		echo "baselines rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		python3 bench/templates/table.py "$L/qgtc.tsv" "$L/torch.tsv" >"$OUT/table.md" 2>>"$L/run.txt"
		tail -8 "$OUT/table.md"
		;;
	esac
done
cat "$L/run.txt"
rm -rf "$W"
