package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/subgraph"
)

func TestShardRange(t *testing.T) {
	for _, nb := range []int{0, 1, 2, 7, 8, 18, 100} {
		for _, n := range []int{1, 2, 3, 7, 8, 19} {
			next := 0
			for i := range n {
				lo, hi := ShardRange(i, n, nb)
				require.Equal(t, next, lo, "nb=%d n=%d i=%d: contiguous", nb, n, i)
				size := hi - lo
				assert.True(t, size == nb/n || size == nb/n+1, "nb=%d n=%d i=%d: size %d", nb, n, i, size)
				next = hi
			}
			assert.Equal(t, nb, next, "nb=%d n=%d: every batch", nb, n)
		}
	}
}

func TestParseShard(t *testing.T) {
	s, err := ParseShard("2/7")
	require.NoError(t, err)
	assert.Equal(t, Shard{2, 7}, s)
	assert.Equal(t, "2/7", s.String())
	for _, bad := range []string{"", "2", "7/7", "-1/3", "1/0", "a/3", "1/3/4", "1/b"} {
		_, err := ParseShard(bad)
		assert.ErrorIs(t, err, ErrShard, bad)
	}
}

// shardRun runs shard i/n of j (whole when n is 0) into out; the model
// comes from j's cache.
func shardRun(t *testing.T, j *Job, i, n int, out string) *Report {
	t.Helper()
	c := *j
	c.Out = out
	if n > 0 {
		c.Shard = Shard{i, n}
	}
	return infer(t, &c)
}

// shardFiles runs every shard of n into dir and returns their files.
func shardFiles(t *testing.T, j *Job, n int, dir string) []string {
	var files []string
	for i := range n {
		f := filepath.Join(dir, fmt.Sprintf("preds-%d-of-%d", i, n))
		r := shardRun(t, j, i, n, f)
		assert.Equal(t, fmt.Sprintf("%d/%d", i, n), r.Shard)
		assert.Len(t, r.ModelFingerprint, 32)
		files = append(files, f)
	}
	return files
}

// TestShardMerge: n shards merged are the unsharded run's predictions file
// byte for byte (n = 1, 2, 7, and 10 > the 8 batches, whose last shards
// hold none), and that file reads back to the report's hash.
func TestShardMerge(t *testing.T) {
	dir := t.TempDir()
	j, _ := fastJob("cora", filepath.Join(dir, "cache"))
	j.Parts = 8
	whole := filepath.Join(dir, "whole.npy")
	r := shardRun(t, j, 0, 0, whole)
	assert.Equal(t, whole, r.Out)
	want, err := os.ReadFile(whole)
	require.NoError(t, err)
	pred, err := ReadPredictions(whole)
	require.NoError(t, err)
	require.Len(t, pred, 2708)
	assert.Equal(t, r.PredictionsSHA256, predictionsHash(pred))
	for _, n := range []int{1, 2, 7, 10} {
		files := shardFiles(t, j, n, dir)
		out := filepath.Join(dir, fmt.Sprintf("merged-%d.npy", n))
		require.NoError(t, Merge(out, files))
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, want, got, "n=%d: merged = unsharded, byte for byte", n)
	}
}

// TestMergeErrors: a missing, repeated, corrupt, truncated or foreign
// shard fails the merge with the shard file (or the missing shard) named,
// and writes nothing.
func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	j, _ := fastJob("cora", filepath.Join(dir, "cache"))
	j.Parts = 4
	files := shardFiles(t, j, 3, dir)
	other := *j
	other.Seed = 7 // another model, trained now
	foreign := filepath.Join(dir, "foreign-1")
	shardRun(t, &other, 1, 3, foreign)
	otherPlan := *j
	otherPlan.Parts = 5 // the same model's cache key differs: another model too
	plan2 := filepath.Join(dir, "plan-2")
	shardRun(t, &otherPlan, 2, 3, plan2)

	mutate := func(name string, f func([]byte) []byte) string {
		b, err := os.ReadFile(files[1])
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, f(b), 0o644))
		return p
	}
	corrupt := mutate("corrupt-1", func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
	truncated := mutate("truncated-1", func(b []byte) []byte { return b[:len(b)-4] })
	header := mutate("header-1", func(b []byte) []byte { b[20] ^= 1; return b })
	for _, c := range []struct {
		name  string
		files []string
		want  []string
	}{
		{"missing", []string{files[0], files[2]}, []string{"shard 1/3 (batches 1-1) is missing"}},
		{"repeated", []string{files[0], files[1], files[2], files[1]}, []string{"shard file " + files[1] + " repeats shard 1/3, already in shard file " + files[1]}},
		{"corrupt", []string{files[0], corrupt, files[2]}, []string{"shard file " + corrupt + ": checksum mismatch"}},
		{"header", []string{files[0], header, files[2]}, []string{"shard file " + header + ": "}},
		{"truncated", []string{files[0], truncated, files[2]}, []string{"shard file " + truncated + ": truncated"}},
		{"other model", []string{files[0], foreign, files[2]}, []string{"shard file " + foreign + " is from another run: its model is"}},
		{"other plan", []string{files[0], files[1], plan2}, []string{"shard file " + plan2 + " is from another run"}},
		{"not a shard", []string{files[0], filepath.Join(dir, "cache"), files[2]}, []string{"shard file " + filepath.Join(dir, "cache")}},
		{"none", nil, []string{"no shard files"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+c.name)
			err := Merge(out, c.files)
			require.ErrorIs(t, err, ErrShard)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			_, serr := os.Stat(out)
			assert.ErrorIs(t, serr, os.ErrNotExist, "nothing written")
		})
	}
	require.NoError(t, Merge(filepath.Join(dir, "ok"), files), "the sound set merges")
}

// FuzzReadShard: any bytes are a shard file or one error, never a panic
// or an allocation past the file's size.
func FuzzReadShard(f *testing.F) {
	h := ShardHeader{Model: "m", Partition: "p", Data: "d", Settings: "s", Shard: Shard{0, 1}, Batches: 1, First: 0, Last: 0, Nodes: 3}
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed")
	body := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	h.Pairs = 1
	require.NoError(f, os.WriteFile(seed, append([]byte(h.text()+"sha256 00\n\n"), body...), 0o644))
	b, _ := os.ReadFile(seed)
	f.Add(b)
	f.Add([]byte(shardMagic + "\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "s")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		s, err := readShard(p)
		if err == nil {
			assert.Equal(t, 8*s.h.Pairs, len(s.pairs))
		}
	})
}

// FuzzReadPredictions: the same for predictions files.
func FuzzReadPredictions(f *testing.F) {
	f.Add(append(npy.Header("<i4", 2), 1, 0, 0, 0, 255, 255, 255, 255))
	f.Add(npy.Header("<i4", 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "p.npy")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		pred, err := ReadPredictions(p)
		if err == nil {
			assert.Equal(t, len(b), len(npy.Header("<i4", len(pred)))+4*len(pred))
		}
	})
}

// TestShardMergeComponent: with only Cora's largest component kept, the
// predictions file still has a class per node of the loaded graph, −1
// exactly for the nodes outside the component, and shards merge to it
// byte for byte.
func TestShardMergeComponent(t *testing.T) {
	dir := t.TempDir()
	j, _ := fastJob("cora", filepath.Join(dir, "cache"))
	j.Parts, j.LCC = 4, LCCOn
	whole := filepath.Join(dir, "whole.npy")
	r := shardRun(t, j, 0, 0, whole)
	assert.Equal(t, 2485, r.Nodes) // Shchur et al.'s Table 1
	assert.Equal(t, 2708, r.ComponentOf)
	pred, err := ReadPredictions(whole)
	require.NoError(t, err)
	require.Len(t, pred, 2708)
	ds, err := subgraph.Load("cora")
	require.NoError(t, err)
	comp := ds.Graph.LargestComponent()
	in := make([]bool, len(pred))
	var kept []int32
	for _, v := range comp {
		in[v] = true
		kept = append(kept, pred[v])
	}
	for v, p := range pred {
		assert.Equal(t, !in[v], p == -1, "node %d: %d", v, p)
	}
	assert.Equal(t, r.PredictionsSHA256, predictionsHash(kept), "the component's predictions in its order")
	want, err := os.ReadFile(whole)
	require.NoError(t, err)
	for _, n := range []int{1, 3} {
		out := filepath.Join(dir, fmt.Sprintf("merged-%d.npy", n))
		require.NoError(t, Merge(out, shardFiles(t, j, n, dir)))
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, want, got, "n=%d: merged = unsharded, byte for byte", n)
	}
}
