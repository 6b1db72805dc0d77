package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
)

// TestSAGEIsSAGEConv checks the full-precision SAGE against
// torch_geometric's SAGEConv written out directly: per layer
// lin_l(mean of the neighbours' h, the node itself excluded) + lin_r(h),
// ReLU between layers, on the batches' induced subgraphs.
func TestSAGEIsSAGEConv(t *testing.T) {
	m, d, in := preparedNorm(t, SAGE, NormNone, 8, 8, 3, false)
	require.Len(t, d.Eval, 3)
	for bi, b := range d.Eval {
		_, got, err := m.simForward(b, in, false, -1, 0, nil)
		require.NoError(t, err)
		n, f := b.N(), in.Cols
		h := make([]float64, n*f)
		for r, v := range b.Nodes {
			for p := in.Indptr[v]; p < in.Indptr[v+1]; p++ {
				h[r*f+int(in.Indices[p])] = float64(in.Vals[p]) * float64(b.FeatScale[r])
			}
		}
		w := f
		for li, ly := range m.Layers {
			o := ly.Lin1.Out
			next := make([]float64, n*o)
			for v := 0; v < n; v++ {
				mean := make([]float64, w)
				var deg int
				for _, u := range b.Indices[b.Indptr[v]:b.Indptr[v+1]] {
					if int(u) == v {
						continue
					}
					deg++
					for k := range mean {
						mean[k] += h[int(u)*w+k]
					}
				}
				for k := range mean {
					mean[k] /= float64(max(deg, 1))
				}
				for j := 0; j < o; j++ {
					s := float64(ly.Lin1.B[j])
					for k := 0; k < w; k++ {
						s += float64(ly.Lin1.W[j*w+k])*mean[k] + float64(ly.Lin2.W[j*w+k])*h[v*w+k]
					}
					if li < len(m.Layers)-1 {
						s = max(s, 0)
					}
					next[v*o+j] = s
				}
			}
			h, w = next, o
		}
		require.Len(t, got, len(h))
		for k, want := range h {
			assert.InDelta(t, want, float64(got[k]), 1e-4*max(1, math.Abs(want)), "batch %d logit %d", bi, k)
		}
	}
}

// TestNeighbours checks a batch's adjacency without self-loops against the
// one with them, in every form, and that a node without neighbours has a
// mean scale that keeps its sum, 0, at 0.
func TestNeighbours(t *testing.T) {
	_, d, _ := preparedNorm(t, GCN, NormNone, 4, 4, 3, false)
	lonely := 0
	for bi, b := range d.Eval {
		nb := b.neighbours()
		adj, nbAdj := packedAdj(t, b), mustAdj(t)(nb.PackedAdj())
		require.Same(t, nb, b.neighbours(), "made once")
		n := b.N()
		require.Len(t, nb.Indptr, n+1)
		for v := 0; v < n; v++ {
			var want []int32
			for _, u := range b.Indices[b.Indptr[v]:b.Indptr[v+1]] {
				if int(u) != v {
					want = append(want, u)
				}
			}
			row := nb.Indices[nb.Indptr[v]:nb.Indptr[v+1]]
			if len(want) == 0 {
				assert.Empty(t, row, "batch %d node %d", bi, v)
				lonely++
			} else {
				assert.Equal(t, want, row, "batch %d node %d", bi, v)
			}
			assert.Equal(t, float32(len(want)), nb.Deg[v])
			assert.Equal(t, 1/float32(max(len(want), 1)), nb.Inv[v])
			for c := 0; c < n; c++ {
				want := adj.At(v, c)
				if c == v {
					want = 0
				}
				require.Equal(t, want, nbAdj.At(v, c), "batch %d bit (%d, %d)", bi, v, c)
			}
		}
		assert.Equal(t, bmm.Graph{Indptr: nb.Indptr, Indices: nb.Indices}, nb.Edges)
		assert.LessOrEqual(t, nb.tiles, b.tiles)
		assert.Positive(t, nb.tiles)
	}
	t.Logf("%d nodes without a neighbour in their batch", lonely)
}
