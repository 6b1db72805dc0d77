package subgraph

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartitionFileRoundTrip(t *testing.T) {
	g, p := batchFixture(t)
	opt := PartitionOptions{Seed: 1}
	var buf bytes.Buffer
	require.NoError(t, WritePartitionFile(&buf, g, p, opt))
	assert.Equal(t, partHeader+4*g.N()+4, buf.Len())
	f, err := ReadPartitionFile(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, p.Parts, f.Parts)
	assert.Equal(t, GraphFingerprint(g), f.Graph)
	require.NoError(t, f.Match(g, 12, opt))
	require.NoError(t, f.Match(g, 12, PartitionOptions{Seed: 1, Imbalance: DefaultImbalance}), "0 means the default")

	other, _, err := PlantedPartition(3000, 12, 10, 0.2, 8)
	require.NoError(t, err)
	for name, err := range map[string]error{
		"graph":     f.Match(other, 12, opt),
		"K":         f.Match(g, 13, opt),
		"seed":      f.Match(g, 12, PartitionOptions{Seed: 2}),
		"imbalance": f.Match(g, 12, PartitionOptions{Seed: 1, Imbalance: 1.1}),
	} {
		assert.ErrorIs(t, err, ErrCacheMismatch, name)
		assert.Contains(t, err.Error(), map[string]string{"graph": "graph:", "K": "K:", "seed": "seed:", "imbalance": "imbalance:"}[name])
	}

	// Every single-byte corruption and every truncation is caught.
	good := buf.Bytes()
	for i := 0; i < len(good); i += 1 + i/16 {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x10
		_, err := ReadPartitionFile(bytes.NewReader(bad))
		require.ErrorIs(t, err, ErrCacheCorrupt, "byte %d flipped", i)
	}
	for _, n := range []int{0, 7, partHeader, partHeader + 5, len(good) - 1} {
		_, err := ReadPartitionFile(bytes.NewReader(good[:n]))
		require.ErrorIs(t, err, ErrCacheCorrupt, "truncated to %d", n)
	}
	_, err = ReadPartitionFile(bytes.NewReader(append(append([]byte(nil), good...), 0)))
	assert.ErrorIs(t, err, ErrCacheCorrupt, "trailing byte")
}

// TestLoadPartition: a saved partition loads back for its graph, K, seed
// and imbalance; OpenPartition takes it for its graph whatever K; another
// K, another graph or a flipped byte is an error naming the file.
func TestLoadPartition(t *testing.T) {
	g, _ := batchFixture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "g.part")
	opt := PartitionOptions{Seed: 4}
	p1, err := Partition(g, 6, opt)
	require.NoError(t, err)
	require.NoError(t, SavePartition(path, g, p1, opt))
	p2, err := LoadPartition(path, g, 6, opt)
	require.NoError(t, err)
	assert.Equal(t, p1.Parts, p2.Parts)
	f, err := OpenPartition(path, g)
	require.NoError(t, err)
	assert.Equal(t, 6, f.K)
	assert.Equal(t, uint64(4), f.Seed)
	assert.Equal(t, p1.Parts, f.Parts)

	_, err = LoadPartition(path, g, 7, opt)
	assert.ErrorIs(t, err, ErrCacheMismatch)
	assert.Contains(t, err.Error(), path)
	other, _, err := PlantedPartition(500, 4, 6, 0.2, 1)
	require.NoError(t, err)
	_, err = OpenPartition(path, other)
	assert.ErrorIs(t, err, ErrCacheMismatch)
	assert.ErrorContains(t, err, "made for a graph of 3000 nodes")
	assert.ErrorContains(t, err, "this graph has 500 nodes")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	raw[len(raw)/2] ^= 1
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	_, err = LoadPartition(path, g, 6, opt)
	assert.ErrorIs(t, err, ErrCacheCorrupt)
	_, err = OpenPartition(path, g)
	assert.ErrorIs(t, err, ErrCacheCorrupt)
	_, err = OpenPartition(filepath.Join(dir, "missing.part"), g)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func FuzzReadPartitionFile(f *testing.F) {
	g := mustGraph(f, 40, []int32{0, 1, 2, 3, 10, 20}, []int32{1, 2, 3, 4, 11, 30})
	for _, k := range []int{1, 3, 40} {
		p, err := Partition(g, k, PartitionOptions{})
		require.NoError(f, err)
		var buf bytes.Buffer
		require.NoError(f, WritePartitionFile(&buf, g, p, PartitionOptions{}))
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ReadPartitionFile(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrCacheCorrupt) {
				t.Fatalf("error %v is not ErrCacheCorrupt", err)
			}
			return
		}
		if int64(len(pf.Parts)) != pf.Graph.Nodes {
			t.Fatalf("%d parts for %d nodes", len(pf.Parts), pf.Graph.Nodes)
		}
		for _, q := range pf.Parts {
			if q < 0 || int(q) >= pf.K {
				t.Fatalf("part %d with K=%d", q, pf.K)
			}
		}
		if err := pf.Match(g, pf.K, PartitionOptions{Seed: pf.Seed, Imbalance: pf.Imbalance}); err != nil && !errors.Is(err, ErrCacheMismatch) {
			t.Fatal(err)
		}
	})
}
