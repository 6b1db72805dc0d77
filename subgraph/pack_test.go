package subgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomFeatures packs an n×f matrix of random nbits-bit codes ByRows.
func randomFeatures(t testing.TB, n, f, nbits int) *bittensor.Tensor {
	r := rand.New(rand.NewPCG(uint64(n), uint64(f)))
	vals := make([]int32, n*f)
	for i := range vals {
		vals[i] = int32(r.IntN(1 << nbits))
	}
	x, err := bittensor.PackRows(vals, n, f, nbits)
	require.NoError(t, err)
	return x
}

func TestPackRoundTrip(t *testing.T) {
	g, p := batchFixture(t)
	for _, tc := range []struct {
		q         int
		loops     bool
		idx32     bool
		fcols, fb int
	}{
		{1, false, false, 0, 0}, {3, true, false, 70, 3}, {2, false, true, 300, 1}, {12, true, true, 1, 8},
	} {
		t.Run(fmt.Sprintf("q=%d/loops=%v/idx32=%v/feat=%dx%d", tc.q, tc.loops, tc.idx32, tc.fcols, tc.fb), func(t *testing.T) {
			var feat *bittensor.Tensor
			if tc.fcols > 0 {
				feat = randomFeatures(t, g.N(), tc.fcols, tc.fb)
			}
			bp, err := Batches(g, p, BatchOptions{PartsPerBatch: tc.q, Order: Shuffled, Seed: 3, SelfLoops: tc.loops})
			require.NoError(t, err)
			for b, err := range bp.All() {
				require.NoError(t, err)
				buf, err := b.pack(feat, tc.idx32)
				require.NoError(t, err)
				assert.Zero(t, len(buf)%PackAlign)
				pk, err := ReadPacked(buf)
				require.NoError(t, err)
				assert.Equal(t, tc.idx32, pk.Index32)
				assert.Equal(t, len(b.Nodes), pk.Nodes)
				assert.Equal(t, len(b.Indices), pk.Edges)
				adj, err := pk.Adjacency()
				require.NoError(t, err)
				require.True(t, b.Adj.Equal(adj), "unpacked adjacency differs")
				// The CSR, in place or decoded, is the batch's (without the
				// diagonal Pack leaves to the flag).
				ptr, idx := pk.CSR(nil, nil)
				assert.Equal(t, b.Indptr, ptr)
				assert.Equal(t, b.Indices, idx)
				x, err := pk.Features()
				require.NoError(t, err)
				if feat == nil {
					assert.Nil(t, x)
					continue
				}
				want := feat.Ints()
				got := x.Ints()
				for i, v := range b.Nodes {
					require.Equal(t, want[int(v)*tc.fcols:(int(v)+1)*tc.fcols], got[i*tc.fcols:(i+1)*tc.fcols], "row %d (node %d)", i, v)
				}
				// Unaligned copies decode alike.
				odd := make([]byte, len(buf)+1)
				copy(odd[1:], buf)
				pk2, err := ReadPacked(odd[1:])
				require.NoError(t, err)
				adj2, err := pk2.Adjacency()
				require.NoError(t, err)
				assert.True(t, adj.Equal(adj2))
				ptr2, idx2 := pk2.CSR(make([]int32, 1), make([]int32, 0, 1<<12))
				assert.Equal(t, b.Indptr, ptr2)
				assert.Equal(t, b.Indices, idx2)
				// Features into reused storage, dirty and large enough: the same.
				dirty := make([]uint64, len(x.Words())+5)
				for i := range dirty {
					dirty[i] = ^uint64(0)
				}
				for _, q := range []*Packed{pk, pk2} {
					x2, err := q.FeaturesIn(dirty)
					require.NoError(t, err)
					assert.True(t, x.Equal(x2))
					assert.Same(t, &dirty[0], &x2.Words()[0], "the storage given is used")
				}
			}
		})
	}
}

func TestReadPackedErrors(t *testing.T) {
	g, p := batchFixture(t)
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 2})
	require.NoError(t, err)
	b, err := bp.Batch(0)
	require.NoError(t, err)
	good, err := b.Pack(randomFeatures(t, g.N(), 10, 2))
	require.NoError(t, err)
	le := binary.LittleEndian
	mutate := func(f func(buf []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	for name, buf := range map[string][]byte{
		"short":     good[:10],
		"magic":     mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":   mutate(func(b []byte) []byte { le.PutUint16(b[4:], 2); return b }),
		"flags":     mutate(func(b []byte) []byte { le.PutUint16(b[6:], 8); return b }),
		"truncated": good[:len(good)-64],
		"edges":     mutate(func(b []byte) []byte { le.PutUint32(b[12:], le.Uint32(b[12:])+1); return b }),
		"offset":    mutate(func(b []byte) []byte { le.PutUint64(b[40:], 65); return b }),
		"indptr":    mutate(func(b []byte) []byte { le.PutUint32(b[64+4:], 1<<30); return b }),
		"column": mutate(func(b []byte) []byte {
			le.PutUint16(b[le.Uint64(b[40:]):], 0x7fff)
			return b
		}),
		"feature bits": mutate(func(b []byte) []byte { le.PutUint32(b[20:], 0); return b }),
		"padding":      mutate(func(b []byte) []byte { le.PutUint32(b[28:], 100); return b }),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadPacked(buf)
			assert.ErrorIs(t, err, ErrPacked)
		})
	}
	// A set padding bit in the feature planes is caught when unpacking.
	bad := mutate(func(b []byte) []byte {
		off := le.Uint64(b[48:])
		b[off+7] |= 0x80 // bit 63 of row 0, plane 0: beyond the 10 columns
		return b
	})
	pk, err := ReadPacked(bad)
	require.NoError(t, err)
	_, err = pk.Features()
	assert.ErrorIs(t, err, ErrPacked)
}

func FuzzReadPacked(f *testing.F) {
	// Small seeds (under 1 KiB): the fuzzer minimizes every new input for up
	// to -fuzzminimizetime, which takes long on inputs of several KiB.
	g, _, err := PlantedPartition(40, 4, 4, 0.2, 1)
	require.NoError(f, err)
	p, err := Partition(g, 4, PartitionOptions{Seed: 1})
	require.NoError(f, err)
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 1, SelfLoops: true})
	require.NoError(f, err)
	for i := 0; i < 2; i++ {
		b, err := bp.Batch(i)
		require.NoError(f, err)
		buf, err := b.pack(randomFeatures(f, g.N(), 3, 1+i), i == 1)
		require.NoError(f, err)
		f.Add(buf)
	}
	tiny := &Batch{Nodes: []int32{0, 1, 2}, Indptr: []int32{0, 1, 2, 2}, Indices: []int32{1, 0}}
	tiny.Adj, _ = adjacency(3, tiny.Indptr, tiny.Indices, false, bittensor.DefaultPadding)
	buf, err := tiny.Pack(nil)
	require.NoError(f, err)
	f.Add(buf)
	f.Fuzz(func(t *testing.T, data []byte) {
		pk, err := ReadPacked(data)
		if err != nil {
			if !errors.Is(err, ErrPacked) {
				t.Fatalf("error %v is not ErrPacked", err)
			}
			return
		}
		if pk.Nodes > 1<<12 || pk.FeatCols > 1<<12 {
			return // valid but too large to unpack quickly
		}
		adj, err := pk.Adjacency()
		if err != nil {
			t.Fatal(err)
		}
		ones := 0
		for _, w := range adj.Words() {
			ones += bits.OnesCount64(w)
		}
		want := pk.Edges
		if pk.SelfLoops {
			want += pk.Nodes
		}
		if ones != want {
			t.Fatalf("%d ones for %d edges", ones, want)
		}
		if _, err := pk.Features(); err != nil && !errors.Is(err, ErrPacked) {
			t.Fatal(err)
		}
	})
}

// BenchmarkPack compares what crosses the bus per batch: the packed buffer
// (16-bit local edge list) against the dense 1-bit adjacency, and times the
// pack and the unpack (the adjacency rebuilt from the edge list).
func BenchmarkPack(b *testing.B) {
	g, _, err := PlantedPartition(200000, 200, 16, 0.3, 1)
	require.NoError(b, err)
	p, err := Partition(g, 200, PartitionOptions{Seed: 1})
	require.NoError(b, err)
	for _, q := range []int{1, 4} {
		bp, err := Batches(g, p, BatchOptions{PartsPerBatch: q, SelfLoops: true})
		require.NoError(b, err)
		batch, err := bp.Batch(0)
		require.NoError(b, err)
		dense := 8 * len(batch.Adj.Words())
		b.Run(fmt.Sprintf("q=%d/nodes=%d/op=pack", q, len(batch.Nodes)), func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf, _ = batch.Pack(nil)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(len(buf)), "packed-B/batch")
			b.ReportMetric(float64(dense), "dense-B/batch")
			b.ReportMetric(float64(dense)/float64(len(buf)), "dense/packed")
		})
		buf, err := batch.Pack(nil)
		require.NoError(b, err)
		pk, err := ReadPacked(buf)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("q=%d/nodes=%d/op=unpack", q, len(batch.Nodes)), func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				if _, err := pk.Adjacency(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(pk.Edges+pk.Nodes), "ns/one")
		})
	}
}

// TestAdjacencyChecksIndices: a buffer read without its index check (as
// PackedFile reads a batch after the first time) still has Adjacency
// refuse an index past the batch instead of writing past a row.
func TestAdjacencyChecksIndices(t *testing.T) {
	g, p := batchFixture(t)
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 2, SelfLoops: true})
	require.NoError(t, err)
	b, err := bp.Batch(0)
	require.NoError(t, err)
	require.NotEmpty(t, b.Indices)
	for _, idx32 := range []bool{false, true} {
		buf, err := b.pack(nil, idx32)
		require.NoError(t, err)
		pk, err := ReadPacked(buf)
		require.NoError(t, err)
		last := pk.indicesOff + 2*(pk.Edges-1)
		if idx32 {
			last = pk.indicesOff + 4*(pk.Edges-1)
			binary.LittleEndian.PutUint32(buf[last:], uint32(len(b.Nodes)+200))
		} else {
			binary.LittleEndian.PutUint16(buf[last:], uint16(len(b.Nodes)+200))
		}
		_, err = ReadPacked(buf)
		require.ErrorIs(t, err, ErrPacked)
		pk, err = readPacked(buf, false)
		require.NoError(t, err)
		_, err = pk.Adjacency()
		assert.ErrorIs(t, err, ErrPacked, "idx32 %v", idx32)
	}
}
