package layers

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/subgraph"
)

// TestBatchesFromBatcher checks what layers adds to subgraph's batches:
// every node once, Â in the CSR (each row holds its diagonal), the degrees
// and D^-1/2 from its rows, the dense-tile count against the packed
// adjacency scanned tile by tile, and training epochs that regroup the
// parts without packing.
func TestBatchesFromBatcher(t *testing.T) {
	g, _, err := subgraph.PlantedPartition(2000, 8, 8, 0.3, 3)
	require.NoError(t, err)
	p, err := subgraph.Partition(g, 8, subgraph.PartitionOptions{Seed: 2})
	require.NoError(t, err)
	scale := make([]float32, g.N())
	for i := range scale {
		scale[i] = float32(i)
	}
	check := func(bs []*Batch, packed bool) {
		seen := make([]int, g.N())
		for _, b := range bs {
			for i, v := range b.Nodes {
				seen[v]++
				row := b.Indices[b.Indptr[i]:b.Indptr[i+1]]
				assert.Contains(t, row, int32(i), "row %d lacks its self-loop", i)
				assert.Equal(t, float32(len(row)), b.Deg[i])
				assert.Equal(t, float32(1/math.Sqrt(float64(len(row)))), b.DInv[i])
				assert.Equal(t, float32(v), b.FeatScale[i])
			}
			adj, err := b.PackedAdj()
			require.NoError(t, err)
			if !packed {
				assert.Nil(t, adj)
				continue
			}
			require.NotNil(t, adj)
			n, chunks := b.N(), 0
			for r0 := 0; r0 < n; r0 += 64 {
				for c0 := 0; c0 < n; c0 += 256 {
					hit := false
					for r := r0; r < min(n, r0+64) && !hit; r++ {
						for c := c0; c < min(n, c0+256) && !hit; c++ {
							hit = adj.At(r, c) != 0
						}
					}
					if hit {
						chunks++
					}
				}
			}
			assert.Equal(t, chunks, b.tiles)
		}
		for v, c := range seen {
			require.Equal(t, 1, c, "node %d in %d batches", v, c)
		}
	}
	eval, err := evalBatches(g, p.Parts, 8, 3, scale)
	require.NoError(t, err)
	require.Len(t, eval, 3)
	check(eval, true)
	rng := rand.New(rand.NewPCG(1, 1))
	ep1, err := trainBatches(g, p.Parts, 8, 3, rng, scale)
	require.NoError(t, err)
	check(ep1, false)
	ep2, err := trainBatches(g, p.Parts, 8, 3, rng, scale)
	require.NoError(t, err)
	assert.NotEqual(t, ep1[0].Nodes, ep2[0].Nodes, "each epoch draws a new grouping")
	one, err := evalBatches(g, nil, 1, 1, scale)
	require.NoError(t, err)
	require.Len(t, one, 1)
	check(one, true)
}

// TestNewBatchesConcurrent: batches built several at a time come out in
// the plan's order, each as subgraph builds it alone, and the scratches
// stay within the graph's size.
func TestNewBatchesConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	g, _, err := subgraph.PlantedPartition(3000, 12, 8, 0.3, 5)
	require.NoError(t, err)
	p, err := subgraph.Partition(g, 12, subgraph.PartitionOptions{Seed: 1})
	require.NoError(t, err)
	plan, err := subgraph.Batches(g, p, subgraph.BatchOptions{PartsPerBatch: 1,
		Rows: subgraph.BandRows, SelfLoops: true, LoopsInCSR: true, LazyAdj: true})
	require.NoError(t, err)
	require.Equal(t, 4, plan.Concurrency())
	bs, err := NewBatches(plan, nil)
	require.NoError(t, err)
	require.Len(t, bs, plan.Len())
	for i, b := range bs {
		sb, err := plan.Batch(i)
		require.NoError(t, err)
		assert.Equal(t, sb.Nodes, b.Nodes, "batch %d", i)
		assert.Equal(t, sb.Indptr, b.Indptr, "batch %d", i)
		assert.Equal(t, sb.Indices, b.Indices, "batch %d", i)
	}
	sparse, err := subgraph.FromEdges(3000, []int32{0}, []int32{1}, subgraph.BuildOptions{})
	require.NoError(t, err)
	sp, err := subgraph.Batches(sparse, &subgraph.Partitioning{K: 12, Parts: p.Parts}, subgraph.BatchOptions{PartsPerBatch: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, sp.Concurrency(), "a scratch a batch would pass the graph's own size")
}

// packedAdj is b's packed adjacency, made if it has to be; tb fails on an
// error.
func packedAdj(tb testing.TB, b *Batch) *bittensor.Tensor {
	return mustAdj(tb)(b.PackedAdj())
}

func mustAdj(tb testing.TB) func(*bittensor.Tensor, error) *bittensor.Tensor {
	return func(t *bittensor.Tensor, err error) *bittensor.Tensor {
		tb.Helper()
		require.NoError(tb, err)
		return t
	}
}

// TestAdjacencyOnDemand: inference batches are built without their packed
// adjacency; a pass over edge lists never makes it, a dense pass makes each
// batch's once, equal to the one built with the batch, and both passes
// predict the same.
func TestAdjacencyOnDemand(t *testing.T) {
	m, d, in := unequalData(t, GCN, 4, 4, false)
	var preds [][]int32
	for _, mode := range []AggMode{AggSparse, AggDense} {
		plan, err := m.Compile(bmm.NewGenericBackend())
		require.NoError(t, err)
		plan.Agg, plan.Merge = mode, MergeOff
		r, err := plan.Run(d, in, false, nil)
		require.NoError(t, err)
		plan.Close()
		preds = append(preds, r.Pred)
		for i, b := range d.Eval {
			require.Nil(t, b.Adj, "batch %d", i)
			require.NotNil(t, b.makeAdj, "batch %d", i)
			if mode == AggSparse {
				assert.Nil(t, b.adjMade, "batch %d: made for an edge-list pass", i)
				continue
			}
			require.NotNil(t, b.adjMade, "batch %d", i)
			want, err := subgraph.Batches(d.Graph, batchPartitioning(d.Graph, d.Parts, d.K), subgraph.BatchOptions{
				PartsPerBatch: min(d.PerBatch, d.K), Rows: subgraph.BandRows, SelfLoops: true, LoopsInCSR: true})
			require.NoError(t, err)
			sb, err := want.Batch(i)
			require.NoError(t, err)
			assert.True(t, sb.Adj.Equal(b.adjMade), "batch %d", i)
		}
	}
	assert.Equal(t, preds[0], preds[1])
}
