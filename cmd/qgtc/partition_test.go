package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartitionCommand(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cora.part")
	code, out, errs := runCLI("partition", "--dataset", "cora", "--parts", "20", "--seed", "3", "--cache", cache, "--batch", "4", "--json")
	require.Equal(t, 0, code, errs)
	var rep partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 20, rep.Parts)
	assert.Equal(t, "computed", rep.Source)
	assert.Equal(t, int64(5278), rep.Edges)
	assert.InDelta(t, float64(rep.Edges-rep.EdgeCut)/float64(rep.Edges), rep.KeptFraction, 1e-12)
	assert.LessOrEqual(t, rep.Imbalance, 1.03+20.0/2708)
	require.NotNil(t, rep.Batching)
	assert.Equal(t, 5, rep.Batching.Batches)
	assert.Equal(t, 5, rep.Batching.AdjacencyChecks)

	// The cache is reused; another K is a clear error.
	code, out, errs = runCLI("partition", "--dataset", "cora", "--parts", "20", "--seed", "3", "--cache", cache, "--json")
	require.Equal(t, 0, code, errs)
	var again partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &again))
	assert.Equal(t, "cache", again.Source)
	assert.Equal(t, rep.EdgeCut, again.EdgeCut)
	code, _, errs = runCLI("partition", "--dataset", "cora", "--parts", "21", "--seed", "3", "--cache", cache)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "does not match")

	// METIS export and evaluation of a partition file.
	graph := filepath.Join(dir, "cora.graph")
	code, _, errs = runCLI("partition", "--dataset", "cora", "--write-metis", graph)
	require.Equal(t, 0, code, errs)
	parts := filepath.Join(dir, "cora.graph.part.2")
	f, err := os.Create(parts)
	require.NoError(t, err)
	for v := 0; v < 2708; v++ {
		fmt.Fprintln(f, v%2)
	}
	require.NoError(t, f.Close())
	code, out, errs = runCLI("partition", "--dataset", graph, "--metis-graph", "--parts", "2", "--eval", parts, "--json")
	require.Equal(t, 0, code, errs)
	var ev partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &ev))
	assert.Equal(t, int64(5278), ev.Edges)
	assert.Equal(t, 1.0, ev.Imbalance)
}

func TestPartitionCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"partition"}, 2},
		{[]string{"partition", "--dataset", "cora"}, 2},
		{[]string{"partition", "--dataset", "cora", "--parts", "0"}, 2},
		{[]string{"partition", "--dataset", "cora", "--parts", "99999"}, 1},
		{[]string{"partition", "--dataset", "cora", "--parts", "4", "--imbalance", "0.5"}, 1},
		{[]string{"partition", "--dataset", "nonexistent-dataset", "--parts", "4"}, 1},
		{[]string{"partition", "--dataset", "cora", "--parts", "4", "--batch", "5"}, 1},
		{[]string{"partition", "--dataset", "cora", "--parts", "4", "--feature-bits", "40"}, 2},
		{[]string{"partition", "--dataset", "cora", "--parts", "4", "--eval", "/nonexistent/file"}, 1},
	} {
		t.Run(fmt.Sprint(tc.args[1:]), func(t *testing.T) {
			code, _, errs := runCLI(tc.args...)
			assert.Equal(t, tc.code, code, errs)
			assert.NotContains(t, errs, "panic")
			assert.NotEmpty(t, errs)
		})
	}
}
