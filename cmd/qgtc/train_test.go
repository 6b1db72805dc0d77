package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/tcu"
)

func TestTrainJSON(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.safetensors")
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--dataset", "cora", "--model", "gcn", "--epochs", "3", "--seeds", "2", "--json", "--quiet", "--out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep trainReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Equal(t, "gcn", rep.Model)
	assert.Equal(t, "cora", rep.Dataset)
	assert.Equal(t, 3, rep.Epochs)
	assert.Len(t, rep.Runs, 2)
	assert.Greater(t, rep.TestAccuracy, 0.0)
	assert.Greater(t, rep.Seconds, 0.0)

	// Evaluating the written weights reproduces the best seed's accuracy.
	stdout.Reset()
	code = run([]string{"train", "--dataset", "cora", "--epochs", "0", "--init", out, "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var ev trainReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &ev))
	best := rep.Runs[0]
	if rep.Runs[1].ValAccuracy > best.ValAccuracy {
		best = rep.Runs[1]
	}
	assert.Equal(t, best.TestAccuracy, ev.TestAccuracy)
}

func TestTrainBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	require.NoError(t, os.WriteFile(bad, []byte("not a safetensors file"), 0o600))
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"no dataset", []string{"train"}, 2},
		{"unknown model", []string{"train", "--dataset", "cora", "--model", "mlp"}, 2},
		{"bad split", []string{"train", "--dataset", "cora", "--split", "x"}, 2},
		{"zero seeds", []string{"train", "--dataset", "cora", "--seeds", "0"}, 2},
		{"missing dataset", []string{"train", "--dataset", "no_such_dataset"}, 1},
		{"bad init", []string{"train", "--dataset", "cora", "--epochs", "0", "--init", bad}, 1},
		{"no features", []string{"train", "--dataset", "blogcatalog", "--quiet"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, c.code, run(c.args, &stdout, &stderr), stderr.String())
			assert.NotEmpty(t, stderr.String())
		})
	}
}

// TestTrainBadFlags: every out-of-range or misplaced flag is one usage line
// (exit 2) before any data is loaded.
// TestTrainES: --es-limits reports each seed's test accuracy with the
// sampled propagation; a limit past every row's degree is the exact model.
func TestTrainES(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--dataset", "cora", "--epochs", "5", "--seeds", "2", "--es-limits", "2,400", "--json", "--quiet"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep trainReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Len(t, rep.Runs, 2)
	for _, r := range rep.Runs {
		require.Len(t, r.ES, 2)
		assert.Equal(t, 2, r.ES[0].Limit)
		assert.Equal(t, 102400, r.ES[0].Window)
		assert.Equal(t, r.TestAccuracy, r.ES[1].TestAccuracy, "Cora's rows are all shorter than 400")
	}
	stdout.Reset()
	code = run([]string{"train", "--dataset", "cora", "--epochs", "5", "--es-limits", "2", "--quiet"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "ES-SpMM sampled propagation, at most 2 edges a row (window 102400 rows): test accuracy")
}

func TestTrainBadFlags(t *testing.T) {
	defer func(w io.Writer) { trainStderr = w }(trainStderr)
	var progressOut bytes.Buffer
	trainStderr = &progressOut
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--lcc", "maybe"}, `unexpected argument "maybe": --lcc takes its value after '='`},
		{[]string{"--lcc=maybe"}, `--lcc "maybe": want true, false, auto`},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--dataset", "proteins", "extra"}, `unexpected argument "extra"`},
		{[]string{"--dropout", "-0.5"}, "--dropout -0.5: want a probability in [0, 1)"},
		{[]string{"--dropout", "1"}, "--dropout 1: want a probability in [0, 1)"},
		{[]string{"--model", "gat", "--attn-dropout", "NaN"}, "--attn-dropout NaN"},
		{[]string{"--heads", "0"}, "--heads applies to --model gat only, not gcn"},
		{[]string{"--model", "gat", "--heads", "0"}, "--heads 0: want at least 1"},
		{[]string{"--model", "gat", "--out-heads", "-1"}, "--out-heads -1: want at least 1"},
		{[]string{"--model", "gat", "--heads", "3"}, "--hidden 64 is not divisible into --heads 3"},
		{[]string{"--clusters", "-1"}, "--clusters -1: want at least 0"},
		{[]string{"--clusters-per-batch", "0"}, "--clusters-per-batch 0: want at least 1"},
		{[]string{"--clusters-per-batch", "2"}, "--clusters-per-batch applies to Cluster-GCN training only"},
		{[]string{"--clusters", "4", "--clusters-per-batch", "5"}, "--clusters-per-batch 5 is more than --clusters 4"},
		{[]string{"--norm", "batch"}, "--norm applies to --model gin only, not gcn"},
		{[]string{"--model", "gin", "--norm", "layer"}, `--norm "layer": want none, batch`},
		{[]string{"--aggr", "max"}, "--aggr applies to --model sage only, not gcn"},
		{[]string{"--model", "sage", "--aggr", "sum"}, `--aggr "sum": want mean, max`},
		{[]string{"--model", "mlp"}, `--model "mlp": want gcn, gin, sage or gat`},
		{[]string{"--hidden", "0"}, "--hidden 0: want at least 1"},
		{[]string{"--layers", "0"}, "--layers 0: want at least 1"},
		{[]string{"--epochs", "-5"}, "--epochs -5: want at least 0"},
		{[]string{"--lr", "0"}, "--lr 0: want a positive rate"},
		{[]string{"--lr", "-0.01"}, "--lr -0.01: want a positive rate"},
		{[]string{"--weight-decay", "-1"}, "--weight-decay -1: want a value of at least 0"},
		{[]string{"--patience", "-1"}, "--patience -1: want at least 0"},
		{[]string{"--seeds", "0"}, "--seeds 0: want at least 1"},
		{[]string{"--train-per-class", "0"}, "--train-per-class 0: want at least 1"},
		{[]string{"--val-per-class", "-2"}, "--val-per-class -2: want at least 1"},
		{[]string{"--split", "public", "--train-per-class", "5"}, "--train-per-class applies to random splits"},
		{[]string{"--normalize", "l2"}, `--normalize "l2": want auto, row, none`},
		{[]string{"--split", "x"}, `--split "x": want auto, public, random`},
		{[]string{"--model", "sage", "--es-limits", "16"}, "--es-limits [16] (window 102400): limits of at least 1, a window of at least 1 row, for --model gcn"},
		{[]string{"--es-limits", "16,0"}, "--es-limits [16 0]"},
		{[]string{"--es-limits", "16", "--es-window", "-3"}, "window -3"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			progressOut.Reset()
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"train", "--dataset", "cora"}, tt.args...), &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), tt.msg)
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			assert.Empty(t, progressOut.String(), "refused before loading")
		})
	}
}

// TestTrainOutChecked: an --out that cannot be written fails before the
// dataset is loaded or a model trained.
func TestTrainOutChecked(t *testing.T) {
	defer func(w io.Writer) { trainStderr = w }(trainStderr)
	var progressOut bytes.Buffer
	trainStderr = &progressOut
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "missing", "m.safetensors"), dir} {
		t.Run(out, func(t *testing.T) {
			progressOut.Reset()
			var stdout, stderr bytes.Buffer
			code := run([]string{"train", "--dataset", "cora", "--epochs", "300", "--out", out}, &stdout, &stderr)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr.String(), "--out: cannot write "+out)
			assert.Empty(t, progressOut.String(), "nothing loaded or trained")
			assert.Empty(t, stdout.String())
		})
	}
	assert.Empty(t, entries(t, dir))
}

// TestTrainProgress: on a writer that is not a terminal, train prints plain
// lines (no carriage returns) for loading and each seed; --quiet none.
func TestTrainProgress(t *testing.T) {
	defer func(w io.Writer) { trainStderr = w }(trainStderr)
	var progressOut bytes.Buffer
	trainStderr = &progressOut
	out := filepath.Join(t.TempDir(), "m.safetensors")
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--dataset", "cora", "--epochs", "3", "--seeds", "2", "--out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	got := progressOut.String()
	assert.NotContains(t, got, "\r")
	assert.Contains(t, got, "train: loading cora\n")
	assert.Contains(t, got, "train: seed 1/2, epoch 1/3, loss ")
	assert.Contains(t, got, "train: seed 2/2, epoch 1/3, loss ")
	assert.Contains(t, stdout.String(), "model written to "+out)
	assert.Equal(t, []string{"m.safetensors"}, entries(t, filepath.Dir(out)), "no temporary file left")

	progressOut.Reset()
	code = run([]string{"train", "--dataset", "cora", "--epochs", "2", "--quiet"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Empty(t, progressOut.String())
}

// TestTrainUnusableDataset: the reason a dataset cannot be trained on is
// said in the user's terms, without Go package or type names. (PROTEINS,
// with its folds, trains a graph classifier: TestGraphClassificationCLI.)
func TestTrainUnusableDataset(t *testing.T) {
	for ds, msg := range map[string]string{
		"blogcatalog": `dataset "blogcatalog" has no node features`,
	} {
		t.Run(ds, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 1, run([]string{"train", "--dataset", ds, "--quiet"}, &stdout, &stderr))
			assert.Contains(t, stderr.String(), msg)
			assert.NotContains(t, stderr.String(), "layers:")
		})
	}
}

// TestTrainDeviceErrors: --device gpu says in one line why it cannot run:
// a model not on the GPU (whether or not there is one), no GPU here.
func TestTrainDeviceErrors(t *testing.T) {
	oneLine := func(args []string, want string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		assert.Equal(t, 1, code, stderr.String())
		assert.Empty(t, stdout.String())
		msg := strings.TrimSpace(stderr.String())
		assert.NotContains(t, msg, "\n", "one line")
		assert.Contains(t, msg, want)
	}
	oneLine([]string{"train", "--dataset", "cora", "--model", "gin", "--norm", "batch", "--device", "gpu", "--quiet"}, "--device gpu: not on the GPU yet: gin with batch norm")
	oneLine([]string{"train", "--dataset", "cora", "--model", "sage", "--aggr", "max", "--device", "gpu", "--quiet"}, "sage with max")
	oneLine([]string{"train", "--dataset", "cora", "--clusters", "4", "--device", "gpu", "--quiet"}, "Cluster-GCN")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"train", "--dataset", "cora", "--device", "tpu"}, &stdout, &stderr))
	if _, err := tcu.Devices(); err == nil {
		t.Log("a GPU is present: the no-GPU case is TestTrainDeviceGPU's host's to miss")
		return
	}
	oneLine([]string{"train", "--dataset", "cora", "--device", "gpu", "--quiet"}, "--device gpu: GPU path unavailable")
	// auto carries on on the CPU.
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, run([]string{"train", "--dataset", "cora", "--device", "auto", "--epochs", "2", "--quiet"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "test accuracy")
}

// TestTrainDeviceGPU trains on the GPU and on the CPU with the same seeds:
// the accuracies agree within seed noise (the masks are the same; sums
// run in another order), and the GPU-trained model evaluates alike on
// both. Skipped without a GPU.
func TestTrainDeviceGPU(t *testing.T) {
	if _, err := tcu.Devices(); err != nil {
		t.Skipf("no GPU: %v", err)
	}
	for _, model := range []string{"gcn", "sage", "gin", "gat"} {
		t.Run(model, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.safetensors")
			train := func(device string, extra ...string) trainReport {
				var stdout, stderr bytes.Buffer
				args := append([]string{"train", "--dataset", "cora", "--model", model, "--device", device, "--json", "--quiet"}, extra...)
				require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
				var rep trainReport
				require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
				return rep
			}
			cpu, gpu := train("cpu"), train("gpu", "--out", out)
			t.Logf("%s: cpu %.4f (%.2f ms/epoch), gpu %.4f (%.2f ms/epoch)", model, cpu.TestAccuracy, 1000*cpu.EpochSeconds, gpu.TestAccuracy, 1000*gpu.EpochSeconds)
			assert.InDelta(t, cpu.TestAccuracy, gpu.TestAccuracy, 0.02)
			assert.Greater(t, gpu.TestAccuracy, 0.7)
			onGPU := train("gpu", "--epochs", "0", "--init", out)
			onCPU := train("cpu", "--epochs", "0", "--init", out)
			assert.Equal(t, gpu.TestAccuracy, onGPU.TestAccuracy)
			assert.Equal(t, onCPU.TestAccuracy, onGPU.TestAccuracy)
		})
	}
}
