package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// TestBackendConformance runs the backend suite on every bit-kernel path
// this CPU has, each with the vector aggregation kernel on and off.
func TestBackendConformance(t *testing.T) {
	for _, k := range kernels(t) {
		for _, vec := range aggPaths() {
			name := k.Name() + map[bool]string{true: "/aggvec", false: "/agggo"}[vec]
			t.Run(name, func(t *testing.T) {
				withAggAsm(t, vec, func() {
					bmmtest.TestBackend(t, func(*testing.T) bmm.Backend { return NewBackend(k) })
				})
			})
		}
	}
}

// TestBackendZeroCopy: operands are the caller's memory, outputs included.
func TestBackendZeroCopy(t *testing.T) {
	b := NewBackend(nil)
	assert.Equal(t, "cpu/"+Path(), b.Name())
	x, err := bittensor.PackRows([]int32{1, 2, 3, 0, 1, 2}, 2, 3, 2)
	require.NoError(t, err)
	w, err := bittensor.PackCols([]int32{1, 1, 1, 2, 0, 1}, 3, 2, 2)
	require.NoError(t, err)
	d, err := bittensor.New(2, 2, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	xo, err := b.UploadBits(x)
	require.NoError(t, err)
	wo, err := b.UploadBits(w)
	require.NoError(t, err)
	do, err := b.UploadBits(d)
	require.NoError(t, err)
	require.NoError(t, b.MulBit(do, xo, wo, nil, bmm.Requant{Scale: 1}))
	assert.Equal(t, []int32{3, 8, 1, 4}, d.Ints(), "MulBit wrote the uploaded tensor")

	logits := make([]float32, 4)
	lo, err := b.UploadVector(logits)
	require.NoError(t, err)
	require.NoError(t, b.MulFloat(lo, xo, wo, nil))
	assert.Equal(t, []float32{3, 8, 1, 4}, logits, "MulFloat wrote the uploaded slice")

	vals := make([]uint8, 2*CodesAlign)
	vals[3] = 5
	co, err := b.UploadCodes(vals, 2, CodesAlign, 3)
	require.NoError(t, err)
	assert.Same(t, &vals[0], &co.(*codesOperand).c.data[0], "whole-group rows are wrapped, not copied")
	assert.Equal(t, int64(2), b.Traffic().Ops)
	assert.Zero(t, b.Traffic().HostToDevice+b.Traffic().DeviceToHost)
}

// TestBackendPreferEdges pins the cost model that QAggAuto used before
// the backend: edges against non-zero tiles × 64·256 bit-MACs × width.
func TestBackendPreferEdges(t *testing.T) {
	b := NewBackend(nil)
	perEdge := 1.0
	if AggVectorized() {
		perEdge = 1.0 / 16
	}
	tiles, bits := 10, 4
	even := int(float64(tiles) * 64 * 256 * float64(bits) / 200 / perEdge) // where both cost the same
	assert.True(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: even - 8, DenseTiles: tiles, Bits: bits}))
	assert.False(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: even + 8, DenseTiles: tiles, Bits: bits}))
	assert.False(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: 1, DenseTiles: 0, Bits: bits}), "no tile: nothing to multiply")
}

// BenchmarkBackend times backend ops against the direct calls layers made
// before the backend (the kernel's MulBit, AggBit): the backend's overhead
// is resolving its operands, so the pairs should match.
func BenchmarkBackend(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const m, k, n = 4096, 1024, 64
	vals := func(c, bits int) []int32 {
		v := make([]int32, c)
		for i := range v {
			v[i] = int32(r.IntN(1 << bits))
		}
		return v
	}
	x, err := bittensor.PackRows(vals(m*k, 4), m, k, 4)
	require.NoError(b, err)
	w, err := bittensor.PackCols(vals(k*n, 4), k, n, 4)
	require.NoError(b, err)
	d, err := bittensor.New(m, n, 4, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(b, err)
	be := NewBackend(nil)
	xo, _ := be.UploadBits(x)
	wo, _ := be.UploadBits(w)
	do, _ := be.UploadBits(d)
	rq := bmm.Requant{Scale: 0.01}
	b.Run("MulBit/kernel", func(b *testing.B) {
		for range b.N {
			require.NoError(b, be.Kernel().MulBit(d, x, w, nil, rq))
		}
	})
	b.Run("MulBit/backend", func(b *testing.B) {
		for range b.N {
			require.NoError(b, be.MulBit(do, xo, wo, nil, rq))
		}
	})
	g := &bmm.Graph{Indptr: make([]int32, m+1)}
	for v := range m {
		for range 16 {
			g.Indices = append(g.Indices, int32(r.IntN(m)))
		}
		g.Indptr[v+1] = int32(len(g.Indices))
	}
	codes, err := CodesFromInts(vals(m*n, 4), m, n, 4)
	require.NoError(b, err)
	adj, err := NewAdj(CSR{Indptr: g.Indptr, Indices: g.Indices}, nil, 0, m)
	require.NoError(b, err)
	go_, _ := be.UploadGraph(g, m)
	co, _ := be.WrapCodes(codes)
	b.Run("AggBit/direct", func(b *testing.B) {
		for range b.N {
			require.NoError(b, AggBit(d, adj, codes, nil, rq))
		}
	})
	b.Run("AggBit/backend", func(b *testing.B) {
		for range b.N {
			require.NoError(b, be.AggBit(do, go_, co, nil, rq))
		}
	})
	sums, _ := be.NewVector(m)
	b.Run("RowSums", func(b *testing.B) {
		for range b.N {
			require.NoError(b, be.RowSums(sums, xo))
		}
	})
	logits := make([]float32, m*40)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	lo, _ := be.UploadVector(logits)
	pred := make([]int32, m)
	b.Run("Argmax", func(b *testing.B) {
		for range b.N {
			require.NoError(b, be.Argmax(pred, lo, 40))
		}
	})
}

// TestUploadGraphChecksAsCheckGraph: UploadGraph refuses exactly the graphs
// bmm.CheckGraph refuses (it reads a good graph once, with NewAdj), with
// CheckGraph's error, and bounds a good one's sums as CheckGraph does.
func TestUploadGraphChecksAsCheckGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := NewBackend(nil)
	defer b.Close()
	for i := range 3000 {
		rows, src := r.IntN(6), 1+r.IntN(5)
		g := &bmm.Graph{Indptr: make([]int32, rows+1)}
		for v := 0; v < rows; v++ {
			for range r.IntN(4) {
				g.Indices = append(g.Indices, int32(r.IntN(src)))
			}
			g.Indptr[v+1] = int32(len(g.Indices))
		}
		if r.IntN(2) == 0 {
			g.WeightBits = 1 + r.IntN(8)
			for range g.Indices {
				g.Weights = append(g.Weights, uint8(r.IntN(1<<g.WeightBits)))
			}
		}
		// One fault, or none.
		switch r.IntN(10) {
		case 0:
			if len(g.Indices) > 0 {
				g.Indices[r.IntN(len(g.Indices))] = int32(src + r.IntN(3))
			}
		case 1:
			if len(g.Indices) > 0 {
				g.Indices[r.IntN(len(g.Indices))] = -1
			}
		case 2:
			g.Indptr[r.IntN(len(g.Indptr))] += int32(1 + r.IntN(2))
		case 3:
			g.Indptr = g.Indptr[:0]
		case 4:
			if g.Weights != nil && len(g.Weights) > 0 {
				g.Weights[r.IntN(len(g.Weights))] = uint8(1 << g.WeightBits)
			}
		case 5:
			g.WeightBits = []int{0, 9}[r.IntN(2)]
		case 6:
			if g.Weights != nil {
				g.Weights = append(g.Weights, 0)
			}
		case 7:
			g.Indices = append(g.Indices, 0)
		}
		want, werr := bmm.CheckGraph(g, src)
		o, err := b.UploadGraph(g, src)
		if werr != nil {
			require.Error(t, err, "graph %d: %+v", i, g)
			assert.Equal(t, werr.Error(), err.Error(), "graph %d", i)
			continue
		}
		require.NoError(t, err, "graph %d: %+v", i, g)
		assert.Equal(t, want, o.(*graphOperand).maxSum, "graph %d", i)
	}
	_, err := b.UploadGraph(nil, 3)
	assert.ErrorIs(t, err, bmm.ErrShape)
}

// TestBackendPreferMerged: batches merge up to mergeRows rows, on more
// than one core and unless they are enough for two rounds of whole batches
// on every core.
func TestBackendPreferMerged(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	b := NewBackend(nil)
	assert.True(t, b.PreferMerged(7, 1000), "7 batches on 4 cores")
	assert.False(t, b.PreferMerged(8, 1000), "two rounds on 4 cores")
	assert.False(t, b.PreferMerged(2, mergeRows+1), "past mergeRows")
	assert.False(t, b.PreferMerged(1, 10), "one batch")
	runtime.GOMAXPROCS(1)
	assert.False(t, b.PreferMerged(3, 1000), "one core: nothing to save")
}

// TestTouch: touch writes every element of an output of a grain or more
// (zero, as fresh), whatever its size around the grain and whoever calls
// it (a root on the cores, a fork).
func TestTouch(t *testing.T) {
	for _, n := range []int{0, 1, clearWordsGrain - 1, clearWordsGrain, 2*clearWordsGrain + 1, 5 * clearWordsGrain} {
		for _, fork := range []bool{false, true} {
			w := make([]uint64, n)
			for i := range w {
				w[i] = 1
			}
			f := make([]float32, 2*n)
			for i := range f {
				f[i] = 1
			}
			touch(fork, w)
			touch(fork, f)
			if n >= clearWordsGrain { // smaller ones are left to the op that writes them
				assert.NotContains(t, w, uint64(1), "n=%d fork=%v: words", n, fork)
				assert.NotContains(t, f, float32(1), "n=%d fork=%v: floats", n, fork)
			}
		}
	}
}
