package layers

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/cpu"
)

// graphKeys lists the graphs p and its lanes keep.
func graphKeys(p *Plan) (own, lanes []graphKey) {
	own = slices.Collect(maps.Keys(p.graphs))
	if p.par != nil {
		for _, lp := range p.par.lanes {
			lanes = slices.AppendSeq(lanes, maps.Keys(lp.graphs))
		}
	}
	return own, lanes
}

// sameKeys compares graph keys by batch index in d (a merged batch, each
// plan's own, as "merged").
// poolSize counts the outputs in p's pool and its lanes'.
func poolSize(p *Plan) int {
	count := func(q *opPool) (n int) {
		for _, l := range q.free {
			n += len(l)
		}
		return n
	}
	n := count(&p.pool)
	if p.par != nil {
		for _, lp := range p.par.lanes {
			n += count(&lp.pool)
		}
	}
	return n
}

func sameKeys(t *testing.T, d *Data, want, got []graphKey) {
	t.Helper()
	key := func(k graphKey) string {
		b := "merged"
		if i := slices.Index(d.Eval, k.b); i >= 0 {
			b = fmt.Sprint(i)
		}
		return fmt.Sprintf("%s/%p/%v", b, k.in, k.nbr)
	}
	w, g := make([]string, len(want)), make([]string, len(got))
	for i, k := range want {
		w[i] = key(k)
	}
	for i, k := range got {
		g[i] = key(k)
	}
	slices.Sort(w)
	slices.Sort(g)
	assert.Equal(t, w, g)
}

// TestPlanPrepare: after Prepare, Run's first pass uploads no graph (the
// plan holds every one the pass reads, the same a Run without Prepare
// makes and keeps) and, batch by batch or merged, allocates no output (the
// pool holds them), and
// predicts what a plan without Prepare does: batch by batch, on lanes and
// merged, with and without feature lists.
func TestPlanPrepare(t *testing.T) {
	for _, kind := range []string{GCN, SAGE} {
		m, d, in := manyBatches(t, kind, 4, 4, false)
		for _, merge := range []MergeMode{MergeOff, MergeOn} {
			for _, procs := range []int{1, 3} {
				for _, sparse := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/merge=%v/procs=%d/sparse=%v", kind, merge, procs, sparse), func(t *testing.T) {
						withProcs(procs, func() {
							ref, err := m.Compile(cpu.NewBackend(nil))
							require.NoError(t, err)
							defer ref.Close()
							ref.Agg, ref.Merge = AggSparse, merge
							want, err := ref.Run(d, in, sparse, nil)
							require.NoError(t, err)
							refOwn, refLanes := graphKeys(ref)

							plan, err := m.Compile(cpu.NewBackend(nil))
							require.NoError(t, err)
							defer plan.Close()
							plan.Agg, plan.Merge = AggSparse, merge
							require.NoError(t, plan.Prepare(d, in, sparse))
							own, lanes := graphKeys(plan)
							require.NotEmpty(t, own)
							assert.Empty(t, lanes, "Prepare keeps every graph in the plan")
							sameKeys(t, d, append(refOwn, refLanes...), own)
							outputs := poolSize(plan)
							require.Positive(t, outputs)
							for rep := range 2 {
								got, err := plan.Run(d, in, sparse, nil)
								require.NoError(t, err)
								assert.Equal(t, want.Pred, got.Pred, "run %d", rep)
								assert.Equal(t, want.Merged, got.Merged)
								assert.Equal(t, want.Stats, got.Stats)
								own2, lanes2 := graphKeys(plan)
								assert.Len(t, own2, len(own), "run %d uploaded no graph of its own", rep)
								assert.Empty(t, lanes2, "nor did its lanes")
								if !got.Merged && plan.laneCount(len(d.Eval)) > 1 {
									continue // a lane that helps with another's share takes shapes of that share
								}
								assert.Equal(t, outputs, poolSize(plan), "run %d made no output of its own", rep)
							}
						})
					})
				}
			}
		}
	}
}

// TestPlanPrepareOverlap: batches that share a node run on the serial loop
// (TestRunLanesFallBack), and Prepare readies that loop, not lanes.
func TestPlanPrepareOverlap(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	over := *d
	over.Eval = append(append([]*Batch(nil), d.Eval...), d.Eval[5])
	withProcs(4, func() {
		plan, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(t, err)
		defer plan.Close()
		plan.Agg, plan.Merge = AggSparse, MergeOff
		require.NoError(t, plan.Prepare(&over, in, true))
		outputs := poolSize(plan)
		require.Positive(t, outputs)
		_, err = plan.Run(&over, in, true, nil)
		require.NoError(t, err)
		assert.Empty(t, plan.par.lanes, "no lanes made, by Prepare or Run")
		assert.Equal(t, outputs, poolSize(plan), "the serial loop found its outputs made")
	})
}
