#!/bin/bash
# bench/train/run.sh: full-precision training on a GPU host (no Go there):
# the GPU tests of the device path, then one full-batch training epoch
# (forward, backward, Adam) of qgtc on the GPU, qgtc on the CPU and PyG on
# the GPU, on Coauthor Physics and a 2M-node planted-partition graph.
# Build first, here: `make fpgpu-test` (build/fpgpu), then on the host,
# carrying build/fpgpu:
#
#   bash bench/train/run.sh                 # $OUT/table.md, $OUT/logs
#
# STEPS picks "test bench" (both, the default), one of them, or "gatlayer"
# (one GAT layer's forward + backward, qgtc's device kernels against
# PyG's GATConv, with peak memory); MODELS the models (default gcn; gcn
# sage gin gat all run on the device; gat runs 8 heads of 8 with the
# output heads averaged, as PyG's models.GAT), EPOCHS the epochs each GPU
# run times (default 50; the CPU runs CPU_EPOCHS, default 3). runs.tsv
# and the table carry each GPU run's peak memory. DEVICES (default "gpu cpu")
# picks where qgtc trains.
# Logs are written as each step runs, so a run cut off by a timeout
# still returns what it had measured.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/train-out}
STEPS=${STEPS:-"test bench"}
MODELS=${MODELS:-gcn}
EPOCHS=${EPOCHS:-50}
CPU_EPOCHS=${CPU_EPOCHS:-3}
B=$PWD/build/fpgpu
W=$(mktemp -d)
L=$OUT/logs
mkdir -p "$L"
export QGTC_DATA=$PWD/testdata QGTC_CACHE_DIR=$W/kernels
nvidia-smi >"$L/nvidia-smi.txt" 2>&1
echo "STEPS=$STEPS MODELS=$MODELS EPOCHS=$EPOCHS $(date -u +%FT%TZ)" >"$L/run.txt"
for s in $STEPS; do
	case $s in
	test)
		t0=$(date +%s)
		(cd tcu && timeout 200 "$B/tcu.test" -test.run '^TestFPDense' -test.v -test.count=1 -test.timeout 190s) >"$L/test-tcu.log" 2>&1
		echo "test tcu rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		(cd gpufp && timeout 300 "$B/gpufp.test" -test.v -test.count=1 -test.timeout 290s) >"$L/test-gpufp.log" 2>&1
		echo "test gpufp rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		(cd cmd/qgtc && timeout 300 "$B/qgtc.test" -test.run '^TestTrainDevice' -test.v -test.count=1 -test.timeout 290s) >"$L/test-cmd.log" 2>&1
		echo "test cmd rc=$? $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		grep -hE '^(--- FAIL|FAIL|ok|PASS)|cpu .* gpu ' "$L"/test-*.log | head -30
		;;
	bench)
		t0=$(date +%s)
		"$B/qgtc" data synth --model planted --nodes 2000000 --communities 1000 --classes 10 --features 128 --feature-nnz 16 \
			--avg-degree 10 --quiet -o "$W/synth2m.npz" 2>"$L/synth.log" || echo "synth rc=$?" | tee -a "$L/run.txt"
		echo "synth $(($(date +%s) - t0))s" | tee -a "$L/run.txt"
		: >"$L/runs.tsv"
		for ds in coauthor_physics "$W/synth2m.npz"; do
			name=$(basename "$ds" .npz)
			"$B/export" --dataset "$ds" --out "$W/$name" 2>"$L/export-$name.log" || echo "export $name rc=$?" | tee -a "$L/run.txt"
			for m in $MODELS; do
				extra=""
				[ $m = gat ] && extra="--out-heads 8"
				for dev in ${DEVICES:-gpu cpu}; do
					ep=$EPOCHS
					[ $dev = cpu ] && ep=$CPU_EPOCHS
					timeout 600 "$B/qgtc" train --dataset "$ds" --model $m $extra --device $dev --epochs $ep --patience 0 --json --quiet \
						>"$L/qgtc-$dev-$name-$m.json" 2>"$L/qgtc-$dev-$name-$m.log"
					echo "qgtc $dev $name $m rc=$?" | tee -a "$L/run.txt"
					python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); p=r.get("device_peak_bytes"); print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], "%.4f" % (1000*r["epoch_seconds"]), "%.4f" % r["test_accuracy"], "%.1f" % (p/2**20) if p else ""]))' \
						"$L/qgtc-$dev-$name-$m.json" "$name" "$m" "qgtc-$dev" >>"$L/runs.tsv" 2>>"$L/run.txt"
				done
				timeout 600 python3 -u bench/train/pyg_train.py --data "$W/$name" --name "$name" --model $m --epochs "$EPOCHS" \
					>>"$L/runs.tsv" 2>"$L/pyg-$name-$m.log"
				echo "pyg $name $m rc=$?" | tee -a "$L/run.txt"
			done
		done
		python3 bench/train/table.py "$L/runs.tsv" >"$OUT/table.md" 2>>"$L/run.txt"
		cat "$OUT/table.md"
		;;
	gatlayer)
		# One GAT layer, forward + backward: ms per pass and peak MiB.
		(cd tcu && timeout 300 "$B/tcu.test" -test.run '^$' -test.bench '^BenchmarkFPGATLayer$' -test.benchtime 50x -test.count=1) \
			>"$L/gatlayer-qgtc.log" 2>&1
		echo "gatlayer qgtc rc=$?" | tee -a "$L/run.txt"
		timeout 300 python3 -u bench/train/pyg_gat_layer.py 50 >"$L/gatlayer-pyg.tsv" 2>"$L/gatlayer-pyg.log"
		echo "gatlayer pyg rc=$?" | tee -a "$L/run.txt"
		grep -h 'BenchmarkFPGATLayer' "$L/gatlayer-qgtc.log" | tee -a "$L/run.txt"
		tee -a "$L/run.txt" <"$L/gatlayer-pyg.tsv"
		;;
	esac
done
cat "$L/run.txt"
rm -rf "$W"
