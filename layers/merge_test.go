package layers

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
)

// TestPlanMerged runs the batches merged (one block-diagonal batch) and
// one by one: the same predictions, and the merged batch's logits are the
// batches' logits row by row, bit for bit. Codes past a byte, which
// aggregate on the packed adjacency, never merge.
func TestPlanMerged(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, bits := range []int{1, 4, 8, 12} {
			m, d, in := unequalData(t, kind, bits, 4, bits == 1)
			for _, sparse := range []bool{false, true} {
				for _, be := range testBackends() {
					t.Run(fmt.Sprintf("%s/a=%d/sparse-input=%v/%s", kind, bits, sparse, be.Name()), func(t *testing.T) {
						plan, err := m.Compile(be)
						require.NoError(t, err)
						defer plan.Close()
						plan.Agg = AggSparse
						plan.Merge = MergeOff
						one, err := plan.Run(d, in, sparse, nil)
						require.NoError(t, err)
						assert.False(t, one.Merged)
						plan.Merge = MergeOn
						all, err := plan.Run(d, in, sparse, nil)
						require.NoError(t, err)
						assert.Equal(t, bits <= 8, all.Merged)
						require.Equal(t, one.Pred, all.Pred)
						assert.Equal(t, one.Nodes, all.Nodes)
						assert.Equal(t, len(d.Eval), all.EdgeListBatches)
						if !all.Merged {
							return
						}
						var want []float32
						for _, b := range d.Eval {
							want = append(want, batchLogits(t, plan, b, in, sparse)...)
						}
						got := batchLogits(t, plan, plan.mergedBatch(d), in, sparse)
						require.Len(t, got, len(want))
						for i := range want {
							require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "logit %d", i)
						}
					})
				}
			}
		}
	}
}

// TestMergeBatches checks the block-diagonal batch: every batch's rows in
// turn, its edges renumbered, its vectors in place, and no packed
// adjacency.
func TestMergeBatches(t *testing.T) {
	_, d, _ := unequalData(t, GCN, 4, 4, false)
	m := mergeBatches(d.Eval, 1)
	assert.True(t, m.edgesOnly)
	assert.Nil(t, m.Adj)
	row := 0
	for bi, b := range d.Eval {
		for v := range b.N() {
			r := row + v
			assert.Equal(t, b.Nodes[v], m.Nodes[r])
			var want []int32
			for _, u := range b.Indices[b.Indptr[v]:b.Indptr[v+1]] {
				want = append(want, u+int32(row))
			}
			assert.Equal(t, want, m.Indices[m.Indptr[r]:m.Indptr[r+1]], "batch %d row %d", bi, v)
			assert.Equal(t, b.Deg[v], m.Deg[r])
			assert.Equal(t, b.DInv[v], m.DInv[r])
			assert.Equal(t, b.FeatScale[v], m.FeatScale[r])
		}
		row += b.N()
	}
	assert.Equal(t, row, m.N())
	assert.Equal(t, bmm.Graph{Indptr: m.Indptr, Indices: m.Indices}, m.Edges)
}

// rowSumsCounter counts RowSums calls.
type rowSumsCounter struct {
	bmm.Backend
	n int
}

func (c *rowSumsCounter) RowSums(dst bmm.Vector, x bmm.Bits) error {
	c.n++
	return c.Backend.RowSums(dst, x)
}

// TestPlanResident checks a resident plan's traffic on a backend whose
// uploads move bytes: the first Run moves the inputs up and the
// predictions down, later Runs only the predictions, merged or not, with
// the same predictions every time, and without the features' row sums
// again; Close frees what it kept.
func TestPlanResident(t *testing.T) {
	for _, kind := range []string{GCN, SAGE} {
		for _, mode := range []AggMode{AggDense, AggSparse} {
			for _, sparse := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/sparse-input=%v", kind, mode, sparse), func(t *testing.T) {
					m, d, in := unequalData(t, kind, 4, 4, false)
					sums := &rowSumsCounter{Backend: bmm.NewGenericBackend()}
					be := &deviceBackend{Backend: sums}
					plan, err := m.Compile(be)
					require.NoError(t, err)
					plan.Agg, plan.Resident = mode, true
					var first *Result
					firstSums := 0
					for pass := range 3 {
						sums.n = 0
						run, err := plan.Run(d, in, sparse, nil)
						require.NoError(t, err)
						if pass == 0 {
							firstSums = sums.n
						} else if !sparse {
							assert.Less(t, sums.n, firstSums, "pass %d: the features' row sums stayed with them", pass)
						}
						assert.Equal(t, mode == AggSparse, run.Merged)
						assert.Equal(t, int64(4*d.Graph.N()), run.Traffic.DeviceToHost, "pass %d: the predictions come back", pass)
						if pass == 0 {
							first = run
							assert.Positive(t, run.Traffic.HostToDevice, "the inputs go up")
							continue
						}
						assert.Zero(t, run.Traffic.HostToDevice, "pass %d: the inputs stayed", pass)
						assert.Equal(t, first.Pred, run.Pred, "pass %d", pass)
					}
					var kept []bmm.Vector
					for _, in := range plan.kept {
						for _, o := range in.owned {
							if v, ok := o.(bmm.Vector); ok {
								require.NoError(t, be.ReadVector(make([]float32, v.Len()), v), "kept alive")
								kept = append(kept, v)
							}
						}
					}
					require.NotEmpty(t, kept, "the plan keeps the batches' inputs")
					require.NoError(t, plan.Close())
					for _, v := range kept {
						assert.ErrorIs(t, be.ReadVector(make([]float32, v.Len()), v), bmm.ErrForeign, "Close frees what the plan kept")
					}
				})
			}
		}
	}
}
