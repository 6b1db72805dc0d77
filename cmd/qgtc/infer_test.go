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

	"github.com/qgtc/qgtc/pipeline"
)

// TestInferJSON runs the default job briefly (few epochs) and checks the
// report, then runs it again to load the cached model.
func TestInferJSON(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	args := []string{"infer", "--dataset", "cora", "--bits", "4", "--epochs", "20", "--qat-epochs", "2", "--json", "--quiet"}
	for i, wantTrain := range []bool{true, false} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(args, &out, &errb), "run %d: %s", i, errb.String())
		var r map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		for _, k := range []string{"dataset", "model", "bits", "accuracy", "nodes", "total_ms", "compute_ms"} {
			assert.Contains(t, r, k)
		}
		assert.Equal(t, "cora", r["dataset"])
		assert.EqualValues(t, 2708, r["nodes"])
		assert.Greater(t, r["accuracy"].(float64), 0.5)
		assert.Equal(t, wantTrain, r["train_ms"].(float64) > 0, "run %d trains only when nothing is cached", i)
		// The CPU backend's operands are host memory: nothing moves, the
		// ops are counted.
		for _, k := range []string{"h2d_bytes", "d2h_bytes", "weight_upload_bytes"} {
			assert.EqualValues(t, 0, r[k], k)
		}
		assert.Positive(t, r["ops"].(float64))
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args[:len(args)-2], &out, &errb), errb.String())
	assert.Regexp(t, `transfers +0 B to the backend, 0 B back, [1-9][0-9]* ops in the pass; weights 0 B uploaded once`, out.String())
}

func TestInferWeightsAndSweep(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("QGTC_CACHE", dir)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"sweep", "--dataset", "cora", "--model", "gin", "--bits", "2,8", "--epochs", "10", "--qat-epochs", "1", "--out", filepath.Join(dir, "sw"), "--quiet"}, &out, &errb), errb.String())
	for _, f := range []string{"sweep.csv", "sweep.json", "sweep.svg", "sweep.png"} {
		st, err := os.Stat(filepath.Join(dir, "sw", f))
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}
	assert.Contains(t, out.String(), "fp32")
	models, err := filepath.Glob(filepath.Join(dir, "models", "cora-gin-*-a8w8.safetensors"))
	require.NoError(t, err)
	require.Len(t, models, 1)
	out.Reset()
	require.Equal(t, 0, run([]string{"infer", "--dataset", "cora", "--model", "gin", "--weights", models[0], "--json"}, &out, &errb), errb.String())
	var r map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.EqualValues(t, 8, r["abits"])
	assert.Equal(t, "mean", r["gin_aggr"])

	// The file says it is a GIN: --gin-aggr is checked against it, with or
	// without --model.
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"infer", "--dataset", "cora", "--weights", models[0], "--gin-aggr", "mean", "--quiet"}, &out, &errb), errb.String())
	errb.Reset()
	require.Equal(t, 2, run([]string{"infer", "--dataset", "cora", "--weights", models[0], "--gin-aggr", "sum", "--quiet"}, &out, &errb))
	assert.Contains(t, errb.String(), "--gin-aggr sum conflicts with --weights")
	assert.Contains(t, errb.String(), "a gin model whose aggregation is mean")
	assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
}

func TestInferErrors(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"no dataset", []string{"infer"}, 2},
		{"bad model", []string{"infer", "--dataset", "cora", "--model", "gat"}, 2},
		{"bad bits", []string{"infer", "--dataset", "cora", "--bits", "33"}, 2},
		{"bad device", []string{"infer", "--dataset", "cora", "--device", "tpu"}, 2},
		{"unknown dataset", []string{"infer", "--dataset", "no-such-data"}, 1},
		{"missing weights", []string{"infer", "--dataset", "cora", "--weights", "/nonexistent.safetensors"}, 1},
		{"sweep bad bits", []string{"sweep", "--dataset", "cora", "--bits", "4,x"}, 2},
		{"sweep negative epochs", []string{"sweep", "--dataset", "cora", "--epochs", "-1"}, 2},
		{"bad norm", []string{"infer", "--dataset", "cora", "--norm", "layer"}, 2},
		{"gpu", []string{"infer", "--dataset", "cora", "--device", "gpu"}, 1}, // no GPU here
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.code, run(tc.args, &out, &errb))
			assert.NotEmpty(t, errb.String())
			assert.NotContains(t, errb.String(), "panic")
		})
	}
}

// TestInferBadSizes: a negative or zero size, or an unknown feature scale,
// is one usage line naming the flag (the old code ran --parts -5 as
// automatic and called --feature-scale foo a bad quantized model).
func TestInferBadSizes(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"infer", "--parts", "-5"}, "--parts -5"},
		{[]string{"infer", "--batch", "0"}, "--batch 0"},
		{[]string{"infer", "--hidden", "-1"}, "--hidden -1"},
		{[]string{"infer", "--layers", "0"}, "--layers 0"},
		{[]string{"infer", "--epochs", "-2"}, "--epochs -2"},
		{[]string{"infer", "--feature-scale", "foo"}, `--feature-scale "foo" (want sqrt, mean, rows or none)`},
		{[]string{"infer", "--merge", "maybe"}, `--merge "maybe" (want auto, on or off)`},
		{[]string{"infer", "--passes", "0"}, "--passes 0 must be at least 1"},
		{[]string{"sweep", "--parts", "-1", "--bits", "4"}, "--parts -1"},
		{[]string{"sweep", "--feature-scale", "foo", "--bits", "4"}, "--feature-scale"},
		{[]string{"infer", "--lcc=on"}, `--lcc "on" (want true, false or auto)`},
		{[]string{"sweep", "--lcc", "false", "--bits", "4"}, `unexpected argument "false": --lcc takes its value after '=' (--lcc=false)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append(tc.args, "--dataset", "cora", "--epochs", "1", "--qat-epochs", "0", "--quiet")
			if tc.args[1] == "--epochs" {
				args = append(tc.args, "--dataset", "cora", "--quiet")
			}
			assert.Equal(t, 2, run(args, &out, &errb))
			assert.Contains(t, errb.String(), tc.want)
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
		})
	}
}

// TestDatasetWarnings: what a loader lets through but a user should see
// (here a Planetoid folder without allx, declared partial by its name) is
// one "qgtc: warning:" line on stderr from infer, train and data info,
// which still run.
func TestDatasetWarnings(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	dir := filepath.Join(t.TempDir(), "cora_partial")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, ext := range []string{"x", "y", "tx", "ty", "ally", "graph", "test.index"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "cora", "ind.cora."+ext))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ind.cora."+ext), b, 0o644))
	}
	var stderr bytes.Buffer
	defer func(q, tr, d io.Writer) { qStderr, trainStderr, dataStderr = q, tr, d }(qStderr, trainStderr, dataStderr)
	qStderr, trainStderr, dataStderr = &stderr, &stderr, &stderr
	for _, args := range [][]string{
		{"infer", "--dataset", dir, "--epochs", "1", "--qat-epochs", "0", "--quiet"},
		{"train", "--dataset", dir, "--epochs", "1", "--quiet"},
		{"data", "info", dir, "--quiet"},
	} {
		t.Run(args[0], func(t *testing.T) {
			stderr.Reset()
			var out, errb bytes.Buffer
			require.Equal(t, 0, run(args, &out, &errb), errb.String())
			assert.NotEmpty(t, out.String())
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			require.Len(t, lines, 1, stderr.String())
			assert.Regexp(t, `^qgtc: warning: .*cora_partial: partial dataset: .*1568 of 2708 nodes have all-zero features`, lines[0])
		})
	}
}

// TestInferPartitionFile: `partition --out` writes the file `infer
// --partition` batches by: the same predictions (their hash, accuracy,
// parts, kept edges) as infer partitioning through its cache; a file made
// for another graph is an error naming both graphs.
func TestInferPartitionFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cora-k3.part")
	code, _, errs := runCLI("partition", "--quiet", "--dataset", "cora", "--parts", "3", "--out", file)
	require.Equal(t, 0, code, errs)
	infer := func(cache string, args ...string) map[string]any {
		t.Setenv("QGTC_CACHE", cache)
		code, out, errs := runCLI(append([]string{"infer", "--dataset", "cora", "--epochs", "5", "--qat-epochs", "1", "--json", "--quiet"}, args...)...)
		require.Equal(t, 0, code, errs)
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		return r
	}
	want := infer(filepath.Join(dir, "a"), "--parts", "3")
	got := infer(filepath.Join(dir, "b"), "--partition", file)
	assert.Equal(t, true, got["partition_cached"])
	for _, k := range []string{"parts", "batches", "kept_edges", "accuracy", "predictions_sha256"} {
		assert.Equal(t, want[k], got[k], k)
	}
	code, _, errs = runCLI("infer", "--dataset", "cora", "--partition", file, "--parts", "4", "--quiet")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "--parts 4 disagrees with the 3 parts of partition file")
	code, _, errs = runCLI("infer", "--dataset", "citeseer", "--partition", file, "--quiet")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "does not match: made for a graph of 2708 nodes")
	assert.Contains(t, errs, "dataset citeseer: ")
	assert.Contains(t, errs, "this graph has 3327 nodes")
}

// TestInferPasses: --passes runs more passes after the first and reports
// their median and traffic; merged or not, resident or not, the same
// predictions (a later pass that differs would be an error).
func TestInferPasses(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	var hashes []string
	var ops []int64
	for _, args := range [][]string{
		{"--merge", "off"},
		{"--merge", "on", "--passes", "3"},
		{"--merge", "on", "--passes", "3", "--resident"},
	} {
		var out, errb bytes.Buffer
		all := append([]string{"infer", "--dataset", "cora", "--parts", "3", "--epochs", "2", "--qat-epochs", "0", "--agg", "sparse", "--json", "--quiet"}, args...)
		require.Equal(t, 0, run(all, &out, &errb), errb.String())
		var r pipeline.Report
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		merged := args[1] == "on"
		assert.Equal(t, merged, r.Merged, "%v", args)
		if merged {
			assert.Equal(t, 2, r.MorePasses)
			assert.Len(t, r.PassMS, 2)
			assert.Positive(t, r.PassMedianMS)
			assert.Equal(t, r.Ops, r.PassOps, "every pass runs the same ops")
		}
		hashes, ops = append(hashes, r.PredictionsSHA256), append(ops, r.Ops)
	}
	assert.Equal(t, hashes[0], hashes[1])
	assert.Equal(t, hashes[0], hashes[2])
	assert.Equal(t, ops[0], 3*ops[1], "merged, the 3 batches' ops run once")
}
