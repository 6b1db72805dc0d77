package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var proteinsDir = filepath.Join("..", "..", "testdata", "proteins")

// TestGraphClassificationCLI runs infer, sweep and train on PROTEINS folds
// with few epochs of a small model: graph classification is chosen from
// the dataset, and the report names the folds and the widths.
func TestGraphClassificationCLI(t *testing.T) {
	small := []string{"--dataset", proteinsDir, "--hidden", "8", "--layers", "2", "--epochs", "2", "--quiet"}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append([]string{"infer", "--bits", "4", "--qat-epochs", "1", "--fold", "2", "--json"}, small...), &out, &errb), errb.String())
	var r struct {
		Model  string
		Graphs int
		Folds  []int
		FP32   struct {
			PerFold []float64 `json:"per_fold"`
		} `json:"fp32_accuracy"`
		Widths []struct {
			ABits    int
			Accuracy struct{ Mean float64 }
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, "gin", r.Model)
	assert.Equal(t, 1113, r.Graphs)
	assert.Equal(t, []int{2}, r.Folds)
	require.Len(t, r.FP32.PerFold, 1)
	require.Len(t, r.Widths, 1)
	assert.Equal(t, 4, r.Widths[0].ABits)
	assert.Greater(t, r.Widths[0].Accuracy.Mean, 0.3)

	dir := filepath.Join(t.TempDir(), "new") // made when the sweep writes
	out.Reset()
	require.Equal(t, 0, run(append([]string{"sweep", "--bits", "2,8", "--qat-epochs", "0", "--fold", "3", "--out", dir}, small...), &out, &errb), errb.String())
	assert.Regexp(t, `(?m)^ +fp32 +[0-9.]+ +0\.00 +`, out.String())
	assert.Regexp(t, `(?m)^ +2 +[0-9.]+ +0\.00 +[-+][0-9.]+ `, out.String())
	assert.Regexp(t, `(?m)^ +8 +[0-9.]+ `, out.String())
	st, err := os.Stat(filepath.Join(dir, "sweep.json"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())

	out.Reset()
	require.Equal(t, 0, run([]string{"train", "--dataset", proteinsDir, "--hidden", "8", "--layers", "2", "--epochs", "1", "--fold", "1", "--quiet"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "graph classification, gin on proteins (1113 graphs)")
	assert.NotRegexp(t, `(?m)^ +[0-9]+ +[0-9.]+ `, out.String(), "train reports fp32 only")
}

// TestGraphClassificationUsage: settings graph classification cannot
// honour are one clear line, before any training.
func TestGraphClassificationUsage(t *testing.T) {
	for _, args := range [][]string{
		{"infer", "--dataset", proteinsDir, "--fold", "11", "--epochs", "1"},
		{"infer", "--dataset", proteinsDir, "--fold", "-1"},
		{"infer", "--dataset", proteinsDir, "--parts", "4"},
		{"infer", "--dataset", proteinsDir, "--model", "gcn"},
		{"sweep", "--dataset", proteinsDir, "--seeds", "3"},
		{"train", "--dataset", proteinsDir, "--lr", "0.1"},
	} {
		var out, errb bytes.Buffer
		assert.NotEqual(t, 0, run(args, &out, &errb), "%v", args)
		assert.Regexp(t, `^qgtc [a-z]+: [^\n]+\n$`, errb.String(), "%v: one line", args)
	}
}
