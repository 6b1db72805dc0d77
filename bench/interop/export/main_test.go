package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/pipeline"
)

// TestSplitIsInfers: on data that ships no split (Amazon Photo) export
// writes the split qgtc infer draws at the same seed; before, it refused
// the dataset, and run.sh's amazon_photo row was missing.
func TestSplitIsInfers(t *testing.T) {
	for _, seed := range []uint64{0, 3} {
		dir := t.TempDir()
		require.NoError(t, run("amazon_photo", dir, nil, seed, pipeline.LCCAuto))
		c := pipeline.DefaultConfig("amazon_photo")
		c.Seed = seed
		j := &pipeline.Job{Config: c}
		d, err := j.Load()
		require.NoError(t, err)
		ds := d.Dataset
		for name, want := range map[string][]int32{"train": ds.Train, "val": ds.Val, "test": ds.Test} {
			var b bytes.Buffer
			require.NoError(t, npy.Write(&b, want, len(want)))
			got, err := os.ReadFile(filepath.Join(dir, name+".npy"))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(b.Bytes(), got), "seed %d: %s.npy is not infer's split", seed, name)
		}
		var meta map[string]any
		raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &meta))
		assert.Contains(t, meta["split"], "random")
	}
}
