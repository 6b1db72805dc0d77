package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

// TestSynthPackOut: data synth --pack-out writes the same file at any
// GOMAXPROCS, whose data fingerprint is that of -o FILE.npz with the same
// flags as qgtc infer loads it, and whose batches cover every node once.
func TestSynthPackOut(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"data", "synth", "--quiet", "--model", "planted", "--nodes", "6000", "--communities", "30", "--avg-degree", "8",
		"--features", "40", "--feature-nnz", "6", "--classes", "5", "--seed", "9"}
	var files [][]byte
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		file := filepath.Join(dir, []string{"a.qgpb", "b.qgpb"}[i])
		code, out, errs := runCLI(append(flags, "--pack-out", file, "--parts", "6", "--batch", "2")...)
		require.Equal(t, 0, code, errs)
		assert.Contains(t, out, "3 packed batches of 2 parts")
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		files = append(files, b)
	}
	assert.True(t, bytes.Equal(files[0], files[1]), "GOMAXPROCS changed the file")

	npz := filepath.Join(dir, "s.npz")
	code, _, errs := runCLI(append(flags, "-o", npz)...)
	require.Equal(t, 0, code, errs)
	d, err := (&pipeline.Job{Config: pipeline.DefaultConfig(npz)}).Load()
	require.NoError(t, err)
	pf, err := subgraph.OpenPackedBatches(filepath.Join(dir, "a.qgpb"))
	require.NoError(t, err)
	defer pf.Close()
	assert.Equal(t, d.Fingerprint[:32], hex.EncodeToString(pf.Info.Data[:]))
	seen := make([]bool, pf.Info.Nodes)
	for i := range pf.Len() {
		_, b, err := pf.Batch(i)
		require.NoError(t, err)
		for _, v := range b.Nodes {
			require.False(t, seen[v], "node %d twice", v)
			seen[v] = true
		}
	}
	assert.NotContains(t, seen, false)

	for _, bad := range [][]string{
		{"--pack-out", filepath.Join(dir, "x.qgpb"), "--parts", "31"},                    // more parts than communities
		{"--pack-out", filepath.Join(dir, "x.qgpb"), "--parts", "6", "--batch", "7"},     // more parts a batch than parts
		{"--pack-out", filepath.Join(dir, "x.qgpb"), "--parts", "6", "-o", npz},          // both outputs
		{"--pack-out", filepath.Join(dir, "x.qgpb"), "--parts", "1", "--nodes", "70000"}, // batches beyond the format's rows
		{"-o", npz, "--parts", "6"}, // --parts without --pack-out
	} {
		code, _, errs := runCLI(append(flags, bad...)...)
		assert.Equal(t, 2, code, "%v", bad)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "%v: %s", bad, errs)
	}
	_, err = os.Stat(filepath.Join(dir, "x.qgpb"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
