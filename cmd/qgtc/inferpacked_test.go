package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInferPackedCLI: partition --pack-out, then infer --packed predicts
// what infer --weights predicts over the same partition, bit for bit; a
// damaged file or a flag the file fixes is one line and a non-zero status.
func TestInferPackedCLI(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	qCapture(t)
	qInferJSON(t, append([]string{"--dataset", "cora", "--parts", "6", "--batch", "2"}, qFast...)...)
	model := qModelFile(t, cache, "a4w4")
	want := qInferJSON(t, "--dataset", "cora", "--parts", "6", "--batch", "2", "--weights", model)
	file := filepath.Join(t.TempDir(), "cora.qgpb")
	code, out, errs := runCLI("partition", "--dataset", "cora", "--parts", "6", "--batch", "2", "--feature-bits", "4", "--pack-out", file, "--quiet")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "(3 packed batches)")
	code, out, errs = runCLI("infer", "--packed", file, "--weights", model, "--quiet")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "predictions sha256 "+want["predictions_sha256"].(string))
	code, out, errs = runCLI("infer", "--packed", file, "--weights", model, "--passes", "3", "--json", "--quiet")
	require.Equal(t, 0, code, errs)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, want["predictions_sha256"], rep["predictions_sha256"])
	assert.Len(t, rep["more_pass_ms"], 2)
	assert.Equal(t, true, rep["same_as_first"])
	assert.Contains(t, rep, "compile_ms")

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.qgpb")
	require.NoError(t, os.WriteFile(bad, data[:len(data)-5000], 0o644))
	for _, args := range [][]string{
		{"infer", "--packed", bad, "--weights", model},
		{"infer", "--packed", file, "--weights", model, "--parts", "3"},
		{"infer", "--packed", file},
		{"infer", "--packed", file, "--weights", model, "--passes", "0"},
		{"infer", "--dataset", "cora", "--other-data"},
		{"infer", "--dataset", "cora", "--gpu-lanes", "2"},
		{"infer", "--packed", file, "--weights", model, "--gpu-lanes", "2", "--device", "cpu"},
		{"infer", "--dataset", "cora", "--host-workers", "4"},
		{"infer", "--packed", file, "--weights", model, "--host-workers", "-1", "--device", "gpu"},
		{"infer", "--packed", file, "--weights", model, "--host-workers", "4", "--device", "cpu"},
		{"infer", "--packed", file, "--weights", model, "--resident", "--device", "cpu"},
		{"partition", "--dataset", "cora", "--parts", "6", "--pack-out", file},
	} {
		code, _, errs := runCLI(args...)
		assert.NotEqual(t, 0, code, args)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "%v: %s", args, errs)
	}
}
