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
