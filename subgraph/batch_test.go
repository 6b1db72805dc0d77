package subgraph

import (
	"fmt"
	"math/bits"
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
			for _, loops := range []bool{false, true} {
				t.Run(fmt.Sprintf("q=%d/%v/loops=%v", q, order, loops), func(t *testing.T) {
					bp, err := Batches(g, p, BatchOptions{PartsPerBatch: q, Order: order, Seed: 9, SelfLoops: loops})
					require.NoError(t, err)
					assert.Equal(t, (12+q-1)/q, bp.Len())
					seen := make([]int, g.N())
					for b, err := range bp.All() {
						require.NoError(t, err)
						checkBatch(t, g, p, b, loops)
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

// checkBatch compares a batch with the induced subgraph bit for bit.
func checkBatch(t *testing.T, g *Graph, p *Partitioning, b *Batch, loops bool) {
	t.Helper()
	n := len(b.Nodes)
	require.Len(t, b.Blocks, len(b.Parts)+1)
	for j, part := range b.Parts {
		for _, v := range b.Nodes[b.Blocks[j]:b.Blocks[j+1]] {
			require.Equal(t, part, p.Parts[v])
		}
	}
	want, err := g.InducedSubgraph(b.Nodes)
	require.NoError(t, err)
	dense := make([]int32, n*n)
	for i := 0; i < n; i++ {
		for _, j := range want.Neighbors(i) {
			if int(j) != i {
				dense[i*n+int(j)] = 1
			}
		}
		if loops {
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
