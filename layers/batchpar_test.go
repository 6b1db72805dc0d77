package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// randBatches is k batches of up to maxRows rows with random CSR rows
// (empty batches and empty rows among them) and vectors; scaled says
// whether they carry FeatScale.
func randBatches(r *rand.Rand, k, maxRows int, scaled bool) []*Batch {
	bs := make([]*Batch, k)
	next := int32(0)
	for i := range bs {
		n := r.IntN(maxRows + 1)
		if r.IntN(4) == 0 {
			n = 0
		}
		b := &Batch{Nodes: make([]int32, n), Indptr: make([]int32, n+1), Deg: make([]float32, n), DInv: make([]float32, n)}
		if scaled {
			b.FeatScale = make([]float32, n)
		}
		for v := range n {
			b.Nodes[v] = next
			next++
			deg := r.IntN(6)
			if r.IntN(3) == 0 {
				deg = 0
			}
			for range deg {
				b.Indices = append(b.Indices, int32(r.IntN(n)))
			}
			b.Indptr[v+1] = int32(len(b.Indices))
			b.Deg[v], b.DInv[v] = float32(deg), r.Float32()
			if scaled {
				b.FeatScale[v] = r.Float32()
			}
		}
		bs[i] = b
	}
	return bs
}

// randInput is a rows×cols input of bits-bit codes (all 1 when ones), with
// rows without features among them.
func randInput(r *rand.Rand, rows, cols, bits int, ones bool) *Input {
	in := &Input{Rows: rows, Cols: cols, Params: Params{Bits: bits}, Indptr: make([]int32, rows+1)}
	for v := range rows {
		if r.IntN(3) > 0 {
			for c := range cols {
				if r.IntN(4) == 0 {
					code := uint32(1)
					if !ones {
						code = uint32(r.IntN(1<<bits-1)) + 1
					}
					in.Indices, in.Vals, in.Codes = append(in.Indices, int32(c)), append(in.Vals, float32(code)), append(in.Codes, code)
				}
			}
		}
		in.Indptr[v+1] = int32(len(in.Indices))
	}
	in.prepare()
	return in
}

// TestMergeBatchesPar: the merged batch built on the cores, in pieces of
// any size, is the serial one, with empty batches and rows, with and
// without FeatScale, at GOMAXPROCS 1 and 8.
func TestMergeBatchesPar(t *testing.T) {
	for _, procs := range []int{1, 8} {
		for seed := range uint64(6) {
			for _, rows := range []int{1, 2, 3, 7, 64} {
				t.Run(fmt.Sprintf("procs=%d/seed=%d/rows=%d", procs, seed, rows), func(t *testing.T) {
					withProcs(procs, func() {
						r := rand.New(rand.NewPCG(seed, 19))
						bs := randBatches(r, 1+r.IntN(9), 40, seed%3 != 0)
						if seed == 5 {
							bs[len(bs)-1].FeatScale = nil // one without: the merged batch has none
						}
						want := mergeBatchesSerial(bs)
						got := mergeBatchesPar(bs, 8, rows)
						assert.Equal(t, want, got)
						assert.Equal(t, want.Edges, got.Edges)
					})
				})
			}
		}
	}
	// Past mergeParEntries mergeBatches takes the cores: the same batch.
	r := rand.New(rand.NewPCG(1, 19))
	bs := randBatches(r, 12, 3*mergeParRows, true)
	withProcs(8, func() {
		assert.Equal(t, mergeBatchesSerial(bs), mergeBatches(bs, 8))
	})
}

// TestFeatListsPar: the feature lists made on the cores, in chunks of any
// size, are the serial ones with the same bound: weighted and all ones,
// nodes in any order (some twice), rows without features, no nodes, at
// GOMAXPROCS 1 and 8.
func TestFeatListsPar(t *testing.T) {
	for _, procs := range []int{1, 8} {
		for _, bits := range []int{1, 3, 8} {
			for _, ones := range []bool{false, true} {
				for seed := range uint64(3) {
					t.Run(fmt.Sprintf("procs=%d/bits=%d/ones=%v/seed=%d", procs, bits, ones, seed), func(t *testing.T) {
						withProcs(procs, func() {
							r := rand.New(rand.NewPCG(seed, 23))
							in := randInput(r, 50+r.IntN(50), 1+r.IntN(20), bits, ones)
							nodes := make([]int32, r.IntN(2*in.Rows))
							for i := range nodes {
								nodes[i] = int32(r.IntN(in.Rows))
							}
							if seed == 0 {
								nodes = nil
							}
							want, wantBound := featLists(in, nodes)
							for _, rows := range []int{1, 2, 3, 7, 1024} {
								got, bound := featListsPar(in, nodes, 8, rows)
								assert.Equal(t, want, got, "chunks of %d rows", rows)
								assert.Equal(t, wantBound, bound, "chunks of %d rows", rows)
							}
						})
					})
				}
			}
		}
	}
}

// TestFeatRowsCores: a batch past listParRows makes its lists on the
// cores, a lane's on one; both are the serial lists.
func TestFeatRowsCores(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 29))
	in := randInput(r, 3*listParRows, 12, 4, false)
	nodes := r.Perm(in.Rows)
	b := &Batch{Nodes: make([]int32, len(nodes))}
	for i, v := range nodes {
		b.Nodes[i] = int32(v)
	}
	want, wantBound := featLists(in, b.Nodes)
	withProcs(8, func() {
		got, bound := b.featRows(in, true, 8)
		assert.Equal(t, want, got)
		assert.Equal(t, wantBound, bound)
	})
}

// TestPlanMergedCores: a merged batch large enough to be built on the
// cores (and its feature lists, and SAGE's neighbours) predicts what it
// does on one core, with and without Prepare.
func TestPlanMergedCores(t *testing.T) {
	ds := qSynth(t, 3*listParRows, 4, 40, false, 5)
	parts := make([]int32, ds.Graph.N())
	for v := range parts {
		parts[v] = int32(v % 7)
	}
	d, err := NewData(ds, parts, 7, 1)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, 4)
	require.NoError(t, err)
	for _, kind := range []string{GCN, SAGE} {
		m, err := NewModel(kind, 40, 16, 4, 2, 4, 4, 5)
		require.NoError(t, err)
		require.NoError(t, m.Calibrate(d, in, 0))
		run := func(procs int, prepare bool) []int32 {
			var pred []int32
			withProcs(procs, func() {
				// A fresh Data each time: the batches keep their feature lists.
				d, err := NewData(ds, parts, 7, 1)
				require.NoError(t, err)
				plan, err := m.Compile(cpu.NewBackend(nil))
				require.NoError(t, err)
				defer plan.Close()
				plan.Agg, plan.Merge = AggSparse, MergeOn
				if prepare {
					require.NoError(t, plan.Prepare(d, in, true))
				}
				res, err := plan.Run(d, in, true, nil)
				require.NoError(t, err)
				require.True(t, res.Merged)
				pred = res.Pred
			})
			return pred
		}
		want := run(1, false)
		for _, prepare := range []bool{false, true} {
			assert.Equal(t, want, run(8, prepare), "%s, prepare %v", kind, prepare)
		}
	}
}

// TestWithoutLoopsPar: a batch's neighbours made on the cores, in chunks
// of any size, are the serial ones (rows with and without their
// self-loop, empty rows, no rows) at GOMAXPROCS 1 and 8; a merged batch
// past listParRows makes them so.
func TestWithoutLoopsPar(t *testing.T) {
	for _, procs := range []int{1, 8} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("procs=%d/seed=%d", procs, seed), func(t *testing.T) {
				withProcs(procs, func() {
					r := rand.New(rand.NewPCG(seed, 31))
					b := randBatches(r, 1, 60, false)[0]
					for v := range b.N() { // a self-loop in most rows, anywhere in the row
						if r.IntN(4) > 0 && b.Indptr[v+1] > b.Indptr[v] {
							b.Indices[b.Indptr[v]+int32(r.IntN(int(b.Indptr[v+1]-b.Indptr[v])))] = int32(v)
						}
					}
					want := withoutLoops(b.N(), b.Indptr, b.Indices)
					for _, rows := range []int{1, 2, 3, 7, 1024} {
						assert.Equal(t, want, withoutLoopsPar(b.N(), b.Indptr, b.Indices, 8, rows), "chunks of %d rows", rows)
					}
				})
			})
		}
	}
	r := rand.New(rand.NewPCG(2, 31))
	bs := randBatches(r, 6, 2*listParRows, false)
	withProcs(8, func() {
		m := mergeBatches(bs, 8)
		require.GreaterOrEqual(t, m.N(), listParRows)
		want := withoutLoops(m.N(), m.Indptr, m.Indices)
		want.Edges = bmm.Graph{Indptr: want.Indptr, Indices: want.Indices}
		assert.Equal(t, want, m.neighbours())
	})
}
