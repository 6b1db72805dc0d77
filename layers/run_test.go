package layers

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// serialBackend hides a backend's Fork: plans on it run batch after batch,
// every op split across the cores (the path before lanes).
type serialBackend struct{ bmm.Backend }

// manyBatches is a 600-node task cut into 14 batches of unequal sizes
// (one node to ~150), so that lanes finish their shares at different times
// and help each other.
func manyBatches(t *testing.T, kind string, abits, wbits int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	ds := qSynth(t, 600, 4, 40, binary, 11)
	const k = 14
	parts := make([]int32, ds.Graph.N())
	bounds := []int{0, 1, 9, 60, 70, 220, 230, 231, 300, 380, 390, 470, 520, 590, 600}
	for p := 0; p < k; p++ {
		for v := bounds[p]; v < bounds[p+1]; v++ {
			parts[v] = int32(p)
		}
	}
	return trainedOn(t, ds, parts, k, kind, abits, wbits)
}

// withProcs runs f with GOMAXPROCS set to n.
func withProcs(n int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	f()
}

// TestRunLanesMatchSerial: Run on lanes (whole batches side by side on
// forks of the CPU backend, batches not merged) gives the serial loop's predictions, stats and
// op count, on 2 to 16 lanes, run after run (the lanes' reused outputs
// hold the last run's values); every lane's logits for every batch equal
// the plan's own bit for bit; progress counts every batch once, in order.
// Run it with -race: lanes that shared scratch, an output or a counter
// would show here.
func TestRunLanesMatchSerial(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, tc := range []struct {
			abits, wbits int
			binary       bool
		}{{1, 1, true}, {4, 4, false}, {12, 4, false}} {
			m, d, in := manyBatches(t, kind, tc.abits, tc.wbits, tc.binary)
			for _, mode := range []AggMode{AggAuto, AggDense, AggSparse} {
				for _, sparse := range []bool{false, true} {
					name := fmt.Sprintf("%s/a=%d/w=%d/binary=%v/%s/sparse-input=%v", kind, tc.abits, tc.wbits, tc.binary, mode, sparse)
					t.Run(name, func(t *testing.T) {
						ref, err := m.Compile(serialBackend{cpu.NewBackend(nil)})
						require.NoError(t, err)
						defer ref.Close()
						ref.Agg, ref.Merge = mode, MergeOff
						want, err := ref.Run(d, in, sparse, nil)
						require.NoError(t, err)
						require.Equal(t, 1, ref.laneCount(len(d.Eval)), "no lanes without Fork")
						plan, err := m.Compile(cpu.NewBackend(nil))
						require.NoError(t, err)
						defer plan.Close()
						plan.Agg, plan.Merge = mode, MergeOff // merged, the batches are one
						for _, procs := range []int{2, 3, 16} {
							withProcs(procs, func() {
								require.Equal(t, min(procs, len(d.Eval)), plan.laneCount(len(d.Eval)))
								for rep := range 2 {
									var seen []int
									got, err := plan.Run(d, in, sparse, func(done, total int) {
										assert.Equal(t, len(d.Eval), total)
										seen = append(seen, done)
									})
									require.NoError(t, err)
									what := fmt.Sprintf("%d procs, run %d", procs, rep)
									require.Equal(t, want.Pred, got.Pred, what)
									assert.Equal(t, want.Stats, got.Stats, what)
									assert.Equal(t, want.Nodes, got.Nodes, what)
									assert.Equal(t, want.Batches, got.Batches, what)
									assert.Equal(t, want.EdgeListBatches, got.EdgeListBatches, what)
									assert.Equal(t, want.Traffic, got.Traffic, what)
									for i := range seen {
										require.Equal(t, i+1, seen[i], "%s: progress", what)
									}
									require.Len(t, seen, len(d.Eval), what)
								}
							})
						}
						require.NotNil(t, plan.par)
						require.Len(t, plan.par.lanes, 14, "lanes are kept, one per batch at most")
						// Each batch on one lane, and batch 0 on every lane.
						for li, lp := range plan.par.lanes {
							for bi, b := range d.Eval {
								if bi != li && bi != 0 {
									continue
								}
								a, c := batchLogits(t, plan, b, in, sparse), batchLogits(t, lp, b, in, sparse)
								require.Len(t, c, len(a))
								for j := range a {
									require.Equal(t, math.Float32bits(a[j]), math.Float32bits(c[j]), "lane %d, batch %d, logit %d", li, bi, j)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestRunLanesFallBack: batches that share a node run on the serial loop
// (the last batch's prediction wins, as it always has), and an error in a
// batch is the serial loop's error, that of the first failing batch.
func TestRunLanesFallBack(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	withProcs(4, func() {
		// Overlap: batch 5 again at the end, its nodes now also in the
		// last batch's place.
		over := *d
		over.Eval = append(append([]*Batch(nil), d.Eval...), d.Eval[5])
		ref, err := m.Compile(serialBackend{cpu.NewBackend(nil)})
		require.NoError(t, err)
		defer ref.Close()
		ref.Merge = MergeOff
		want, err := ref.Run(&over, in, true, nil)
		require.NoError(t, err)
		plan, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(t, err)
		defer plan.Close()
		plan.Merge = MergeOff
		got, err := plan.Run(&over, in, true, nil)
		require.NoError(t, err)
		assert.Equal(t, want.Pred, got.Pred)
		assert.False(t, plan.disjointOK(&over), "batch 5 twice")
		assert.Empty(t, plan.par.lanes, "the overlapping batches ran on the serial loop")
		assert.True(t, plan.disjointOK(d))

		// Errors: dense aggregation over a batch without its packed
		// adjacency (batch 3), and batches without the feature scale the
		// model applies (every later one, another error), so the error
		// tells which batch failed first.
		require.True(t, m.NormRows)
		bad := *d
		bad.Eval = make([]*Batch, len(d.Eval))
		for i, b := range d.Eval {
			nb := &Batch{Nodes: b.Nodes, Indptr: b.Indptr, Indices: b.Indices, makeAdj: b.PackedAdj, Deg: b.Deg, DInv: b.DInv,
				FeatScale: b.FeatScale, Edges: b.Edges, tiles: b.tiles}
			switch {
			case i == 3:
				nb.makeAdj = nil
			case i > 3:
				nb.FeatScale = nil
			}
			bad.Eval[i] = nb
		}
		ref.Agg, plan.Agg = AggDense, AggDense
		_, werr := ref.Run(&bad, in, false, nil)
		require.ErrorContains(t, werr, "adjacency")
		require.True(t, plan.disjointOK(&bad), "on lanes")
		for range 5 {
			_, gerr := plan.Run(&bad, in, false, nil)
			require.Error(t, gerr)
			assert.Equal(t, werr.Error(), gerr.Error())
		}
		// The plan still runs good batches afterwards, and its lanes take
		// the settings changed since they were made.
		plan.Agg = AggSparse
		got, err = plan.Run(d, in, false, nil)
		require.NoError(t, err)
		ref.Agg = AggSparse
		want, err = ref.Run(d, in, false, nil)
		require.NoError(t, err)
		assert.Equal(t, want.Pred, got.Pred)
		assert.Equal(t, len(d.Eval), got.EdgeListBatches, "every batch over its edge list")
		// A closed plan refuses, lanes or not.
		require.NoError(t, plan.Close())
		_, err = plan.Run(d, in, false, nil)
		assert.ErrorIs(t, err, ErrModel)
	})
}

// TestRunLanesResident: a resident plan's lanes keep their batches'
// uploads from run to run (a batch may be kept by two lanes after a
// steal) and give the serial loop's predictions; Close frees them.
func TestRunLanesResident(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	for _, sparse := range []bool{false, true} {
		ref, err := m.Compile(serialBackend{cpu.NewBackend(nil)})
		require.NoError(t, err)
		ref.Merge = MergeOff
		want, err := ref.Run(d, in, sparse, nil)
		require.NoError(t, err)
		require.NoError(t, ref.Close())
		plan, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(t, err)
		plan.Merge, plan.Resident = MergeOff, true
		withProcs(4, func() {
			for range 3 {
				got, err := plan.Run(d, in, sparse, nil)
				require.NoError(t, err)
				require.Equal(t, want.Pred, got.Pred, "sparse input %v", sparse)
			}
		})
		kept := 0
		for _, lp := range plan.par.lanes {
			kept += len(lp.kept)
		}
		assert.GreaterOrEqual(t, kept, len(d.Eval), "every batch kept by a lane")
		assert.Empty(t, plan.kept, "the plan's own loop ran no batch")
		require.NoError(t, plan.Close())
		assert.Nil(t, plan.par)
	}
}
