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

	"github.com/qgtc/qgtc/internal/safetensors"
)

// TestInferFloatWeights: a state dict in PyG's names (here one qgtc train
// --out wrote, whose GCN and SAGE are PyG's BasicGNN layouts) goes into
// infer --weights at any width: the fp32 accuracy infer reports equals the
// one train measured with its own, independent fp32 models (the same math
// in another order), and the quantized run is calibrated from it.
func TestInferFloatWeights(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	defer func(w io.Writer) { trainStderr = w }(trainStderr)
	trainStderr = io.Discard
	stderr := qCapture(t)
	for _, model := range []string{"gcn", "sage"} {
		t.Run(model, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), model+".safetensors")
			var out, errb bytes.Buffer
			require.Equal(t, 0, run([]string{"train", "--dataset", "cora", "--model", model, "--hidden", "16", "--epochs", "15",
				"--normalize", "row", "--out", file, "--json", "--quiet"}, &out, &errb), errb.String())
			var tr trainReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &tr))

			stderr.Reset()
			r := qInferJSON(t, "--dataset", "cora", "--weights", file, "--bits", "8", "--quiet")
			assert.InDelta(t, tr.TestAccuracy, r["fp32_accuracy"], 0.0015, "at most one of 1000 test nodes flips on float rounding")
			assert.InDelta(t, tr.TestAccuracy, r["accuracy"], 0.03)
			assert.EqualValues(t, 8, r["bits"])
			assert.Equal(t, model, r["model"])
			assert.True(t, qTrained(r), "calibrated now")
			assert.NotContains(t, r, "cached_in", "a model made from a file is not cached")
			assert.Contains(t, stderr.String(), "post-training quantization at 8/8 bits, features scaled by --feature-scale rows")
		})
	}
}

// TestInferFloatWeightsFlags: with float weights --bits and --qat-epochs
// apply, and without --qat-epochs widths of 4 bits and less get the
// recipe's QAT; --epochs and flags that disagree with the file are one
// usage line.
func TestInferFloatWeightsFlags(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	stderr := qCapture(t)
	// A PyG GCN(1433, 8, 2, 7) state dict, every weight 0.01: predictions
	// are all one class, which is enough to check the flags.
	ts := map[string]*safetensors.Tensor{}
	fill := func(name string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = 0.01
		}
		ts[name] = safetensors.F32(v, shape...)
	}
	fill("convs.0.lin.weight", 8, 1433)
	fill("convs.0.bias", 8)
	fill("convs.1.lin.weight", 7, 8)
	fill("convs.1.bias", 7)
	file := filepath.Join(t.TempDir(), "pyg.safetensors")
	var buf bytes.Buffer
	require.NoError(t, safetensors.Write(&buf, ts, nil))
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))

	r := qInferJSON(t, "--dataset", "cora", "--weights", file, "--bits", "4", "--qat-epochs", "1", "--feature-scale", "none", "--quiet")
	assert.EqualValues(t, 4, r["bits"])
	assert.Contains(t, stderr.String(), "post-training quantization and 1 QAT epochs at 4/4 bits, features scaled by --feature-scale none")
	stderr.Reset()
	qInferJSON(t, "--dataset", "cora", "--weights", file, "--bits", "2", "--qat-patience", "1", "--quiet")
	assert.Contains(t, stderr.String(), "post-training quantization and 40 QAT epochs at 2/2 bits")
	stderr.Reset()
	qInferJSON(t, "--dataset", "cora", "--weights", file, "--abits", "8", "--wbits", "4", "--qat-patience", "1", "--quiet")
	assert.Contains(t, stderr.String(), "post-training quantization and 40 QAT epochs at 8/4 bits", "the narrower width decides")
	stderr.Reset()
	qInferJSON(t, "--dataset", "cora", "--weights", file, "--bits", "8", "--quiet")
	assert.Contains(t, stderr.String(), "post-training quantization at 8/8 bits")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"epochs", []string{"--epochs", "3"}, "--epochs trains fp32 weights"},
		{"model", []string{"--model", "sage"}, "--model sage conflicts with --weights"},
		{"hidden", []string{"--hidden", "64"}, "a model of hidden width 8"},
		{"gin-aggr", []string{"--gin-aggr", "mean"}, "--gin-aggr mean conflicts with --weights"},
		{"wrong dataset", []string{"--dataset", "citeseer"}, "model takes 1433 features and 7 classes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"infer", "--dataset", "cora", "--weights", file, "--quiet"}, tc.args...)
			assert.NotEqual(t, 0, run(args, &out, &errb))
			assert.Contains(t, errb.String(), tc.want)
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
		})
	}
}
