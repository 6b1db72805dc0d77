package subgraph

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func batchFixture(t testing.TB) (*Graph, *Partitioning) {
	g, _, err := PlantedPartition(3000, 12, 10, 0.2, 7)
	require.NoError(t, err)
	p, err := Partition(g, 12, PartitionOptions{Seed: 1})
	require.NoError(t, err)
	return g, p
}

func TestBatchesMatchInducedSubgraph(t *testing.T) {
	g, p := batchFixture(t)
	for _, q := range []int{1, 3, 5, 12} {
		for _, order := range []BatchOrder{Sequential, Shuffled} {
			for _, rows := range []RowOrder{PartRows, SortedRows, BandRows} {
				for _, loops := range []int{0, 1, 2} { // none, in Adj, in the CSR too
					opt := BatchOptions{PartsPerBatch: q, Order: order, Seed: 9, Rows: rows, SelfLoops: loops > 0, LoopsInCSR: loops == 2}
					t.Run(fmt.Sprintf("q=%d/%v/rows=%d/loops=%d", q, order, rows, loops), func(t *testing.T) {
						bp, err := Batches(g, p, opt)
						require.NoError(t, err)
						assert.Equal(t, (12+q-1)/q, bp.Len())
						seen := make([]int, g.N())
						for b, err := range bp.All() {
							require.NoError(t, err)
							checkBatch(t, g, p, b, opt)
							for _, v := range b.Nodes {
								seen[v]++
							}
						}
						for v, c := range seen {
							require.Equal(t, 1, c, "node %d in %d batches", v, c)
						}
					})
				}
			}
		}
	}
}

// TestBatchRowOrders checks each row order's promise: parts in blocks,
// ascending ids, or a breadth-first order (every node after the first of
// its component has a neighbour in an earlier row).
func TestBatchRowOrders(t *testing.T) {
	g, p := batchFixture(t)
	for _, rows := range []RowOrder{PartRows, SortedRows, BandRows} {
		bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 3, Order: Shuffled, Seed: 4, Rows: rows})
		require.NoError(t, err)
		b, err := bp.Batch(1)
		require.NoError(t, err)
		switch rows {
		case PartRows:
			require.Len(t, b.Blocks, 4)
		case SortedRows:
			assert.Nil(t, b.Blocks)
			assert.True(t, slices.IsSorted(b.Nodes))
		case BandRows:
			assert.Nil(t, b.Blocks)
			comp, _ := b.CSR().Components()
			first := map[int32]bool{}
			for i := range b.Nodes {
				if !first[comp[i]] {
					first[comp[i]] = true
					continue
				}
				assert.Less(t, b.Indices[b.Indptr[i]], int32(i), "row %d has no earlier neighbour", i)
			}
		}
	}
}

// TestBatchShuffleIsPerm: Shuffle(r) groups the parts in r.Perm(K)'s order
// (what fp32 Cluster-GCN training drew before the batcher was shared),
// and CSROnly batches have the CSR of the packed ones.
func TestBatchShuffleIsPerm(t *testing.T) {
	g, p := batchFixture(t)
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 5, SelfLoops: true})
	require.NoError(t, err)
	ep := bp.Shuffle(rand.New(rand.NewPCG(3, 4)))
	perm := rand.New(rand.NewPCG(3, 4)).Perm(12)
	require.Equal(t, 3, ep.Len())
	for i := 0; i < ep.Len(); i++ {
		var want []int32
		for _, q := range perm[5*i : min(12, 5*i+5)] {
			want = append(want, int32(q))
		}
		assert.Equal(t, want, ep.Parts(i))
	}
	csr, err := Batches(g, p, BatchOptions{PartsPerBatch: 5, SelfLoops: true, CSROnly: true})
	require.NoError(t, err)
	a, err := bp.Batch(2)
	require.NoError(t, err)
	c, err := csr.Batch(2)
	require.NoError(t, err)
	assert.Nil(t, c.Adj)
	assert.Equal(t, a.Indptr, c.Indptr)
	assert.Equal(t, a.Indices, c.Indices)
}

// TestBatchesEmptyParts: a part with no node is left out of its batch and
// a batch of empty parts only is dropped.
func TestBatchesEmptyParts(t *testing.T) {
	g := &Graph{Indptr: []int32{0, 1, 2, 2}, Indices: []int32{1, 0}}
	p := &Partitioning{K: 4, Parts: []int32{0, 0, 3}}
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 2})
	require.NoError(t, err)
	require.Equal(t, 2, bp.Len())
	assert.Equal(t, []int32{0}, bp.Parts(0))
	assert.Equal(t, []int32{3}, bp.Parts(1))
}

// checkBatch compares a batch with the induced subgraph bit for bit.
func checkBatch(t *testing.T, g *Graph, p *Partitioning, b *Batch, opt BatchOptions) {
	t.Helper()
	n := len(b.Nodes)
	if opt.Rows == PartRows {
		require.Len(t, b.Blocks, len(b.Parts)+1)
		for j, part := range b.Parts {
			for _, v := range b.Nodes[b.Blocks[j]:b.Blocks[j+1]] {
				require.Equal(t, part, p.Parts[v])
			}
		}
	}
	want, err := g.InducedSubgraph(b.Nodes)
	require.NoError(t, err)
	if opt.LoopsInCSR {
		want = want.Rebuild(BuildOptions{SelfLoops: AddSelfLoops})
	}
	assert.Equal(t, want.Indptr, b.Indptr, "the CSR is the induced subgraph's")
	assert.Equal(t, want.Indices, b.Indices)
	assert.Equal(t, opt.SelfLoops && !opt.LoopsInCSR, b.SelfLoops)
	dense := make([]int32, n*n)
	for i := 0; i < n; i++ {
		for _, j := range want.Neighbors(i) {
			if int(j) != i {
				dense[i*n+int(j)] = 1
			}
		}
		if opt.SelfLoops {
			dense[i*n+i] = 1
		}
	}
	require.Equal(t, n, b.Adj.Rows())
	require.Equal(t, n, b.Adj.Cols())
	require.Equal(t, 1, b.Adj.Bits())
	require.Equal(t, bittensor.ByRows, b.Adj.Packing())
	exp, err := bittensor.PackRows(dense, n, n, 1)
	require.NoError(t, err)
	require.True(t, exp.Equal(b.Adj), "adjacency differs from the induced subgraph")
	ones := 0
	for _, w := range b.Adj.Words() {
		ones += bits.OnesCount64(w)
	}
	assert.Equal(t, b.Ones(), ones)
	// The mask is exact: a tile is marked iff it holds a one.
	m := b.Mask
	for rt := 0; rt < m.RowTiles; rt++ {
		for ct := 0; ct < m.ColTiles; ct++ {
			any := false
			for r := rt * m.Rows; r < min(n, (rt+1)*m.Rows) && !any; r++ {
				for c := ct * m.Cols; c < min(n, (ct+1)*m.Cols); c++ {
					if dense[r*n+c] != 0 {
						any = true
						break
					}
				}
			}
			require.Equal(t, any, m.NonZero(rt, ct), "tile (%d, %d)", rt, ct)
		}
	}
}

func TestBatchesShuffle(t *testing.T) {
	g, p := batchFixture(t)
	groups := func(seed uint64, order BatchOrder) [][]int32 {
		bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 2, Order: order, Seed: seed})
		require.NoError(t, err)
		var out [][]int32
		for i := 0; i < bp.Len(); i++ {
			out = append(out, bp.Parts(i))
		}
		return out
	}
	assert.Equal(t, groups(1, Shuffled), groups(1, Shuffled))
	assert.NotEqual(t, groups(1, Shuffled), groups(2, Shuffled))
	assert.Equal(t, [][]int32{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}}, groups(5, Sequential))
}

func TestBatchesErrors(t *testing.T) {
	g, p := batchFixture(t)
	for name, opt := range map[string]BatchOptions{
		"q>K":     {PartsPerBatch: 13},
		"q<0":     {PartsPerBatch: -1},
		"order":   {Order: 9},
		"padding": {Padding: bittensor.Padding{Lines: 16, Bits: 100}},
		"rows":    {Rows: 9},
		"loops":   {LoopsInCSR: true},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Batches(g, p, opt)
			assert.ErrorIs(t, err, ErrBatch)
		})
	}
	_, err := Batches(g, &Partitioning{K: 2, Parts: []int32{0}}, BatchOptions{})
	assert.ErrorIs(t, err, ErrPartition)
	bp, err := Batches(g, p, BatchOptions{})
	require.NoError(t, err)
	_, err = bp.Batch(12)
	assert.ErrorIs(t, err, ErrBatch)
}
