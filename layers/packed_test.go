package layers

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// packedOf is batch b as a packed batch file gives it back: the CSR without
// its diagonal, the codes of its rows as bit planes.
func packedOf(t *testing.T, b *Batch, in *Input) *PackedBatch {
	adj, err := b.PackedAdj()
	require.NoError(t, err)
	pb := &PackedBatch{Nodes: b.Nodes, Indptr: make([]int32, b.N()+1), Adj: adj, FeatScale: b.FeatScale}
	for r := range b.N() {
		for _, c := range b.Indices[b.Indptr[r]:b.Indptr[r+1]] {
			if c != int32(r) {
				pb.Indices = append(pb.Indices, c)
			}
		}
		pb.Indptr[r+1] = int32(len(pb.Indices))
	}
	pb.Feat, err = in.Pack(b.Nodes)
	require.NoError(t, err)
	return pb
}

// TestRunPackedMatchesRun: packed batches, one at a time on 1 or 4 lanes,
// predict what Run predicts over the same batches, for every model, with
// sparse and dense first products and every aggregation, binary and
// multi-bit codes (whose stored zero codes the planes drop); the plans keep
// nothing of the batches afterwards.
func TestRunPackedMatchesRun(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, tc := range []struct {
			abits, wbits int
			binary       bool
		}{{1, 1, true}, {4, 4, false}, {12, 4, false}} {
			m, d, in := manyBatches(t, kind, tc.abits, tc.wbits, tc.binary)
			packed := make([]*PackedBatch, len(d.Eval))
			for i, b := range d.Eval {
				packed[i] = packedOf(t, b, in)
			}
			for _, mode := range []AggMode{AggAuto, AggDense, AggSparse} {
				for _, sparse := range []bool{false, true} {
					for _, procs := range []int{1, 4} {
						name := fmt.Sprintf("%s/a=%d/w=%d/%s/sparse-input=%v/procs=%d", kind, tc.abits, tc.wbits, mode, sparse, procs)
						t.Run(name, func(t *testing.T) {
							withProcs(procs, func() {
								p, err := m.Compile(cpu.NewBackend(nil))
								require.NoError(t, err)
								defer p.Close()
								p.Agg = mode
								want, err := p.Run(d, in, sparse, nil)
								require.NoError(t, err)
								kept := func() []int { // graphs the plan and its lanes keep
									n := []int{len(p.graphs)}
									if p.par != nil {
										for _, lp := range p.par.lanes {
											n = append(n, len(lp.graphs))
										}
									}
									return n
								}
								before := kept()
								got := make([]int32, d.Graph.N())
								for i := range got {
									got[i] = -1
								}
								var mu sync.Mutex // done runs on the lanes
								var seen []int
								_, _, _, err = p.RunPackedAll(len(packed), func(i int) (*PackedBatch, error) { return packed[i], nil },
									func(i int) { mu.Lock(); seen = append(seen, i); mu.Unlock() }, in.Params, in.AllOnes(), sparse, got)
								require.NoError(t, err)
								assert.Equal(t, want.Pred, got)
								slices.Sort(seen)
								assert.Equal(t, seen, seqTo(len(packed)))
								after := kept()
								assert.Equal(t, before, after[:len(before)], "graphs kept of packed batches")
								for _, n := range after[len(before):] { // lanes made by RunPackedAll
									assert.Zero(t, n, "graphs kept of packed batches")
								}
							})
						})
					}
				}
			}
		}
	}
}

// streamFixture is a GCN over several batches, its batches packed, and a
// plan of it on a CPU backend (closed with the test).
func streamFixture(t *testing.T) (*Model, *Data, *Input, []*PackedBatch, *Plan) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	packed := make([]*PackedBatch, len(d.Eval))
	for i, b := range d.Eval {
		packed[i] = packedOf(t, b, in)
	}
	ref, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	t.Cleanup(func() { ref.Close() })
	return m, d, in, packed, ref
}

func seqTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestRunPackedStream: batches prepared by host workers and run on one or
// three devices (plans on CPU backends) predict what Run predicts, every
// batch once, with few workers and little lookahead; a batch that fails to
// load stops the run with the lowest failing batch's error.
func TestRunPackedStream(t *testing.T) {
	m, d, in, packed, ref := streamFixture(t)
	for _, sparse := range []bool{false, true} {
		want, err := ref.Run(d, in, sparse, nil)
		require.NoError(t, err)
		for _, tc := range []struct{ devices, workers, ahead int }{{1, 1, 1}, {1, 4, 2}, {3, 2, 8}} {
			t.Run(fmt.Sprintf("sparse=%v/devices=%d/workers=%d/ahead=%d", sparse, tc.devices, tc.workers, tc.ahead), func(t *testing.T) {
				plans := make([]*Plan, tc.devices)
				for i := range plans {
					plans[i], err = m.Compile(cpu.NewBackend(nil))
					require.NoError(t, err)
					defer plans[i].Close()
				}
				got := make([]int32, d.Graph.N())
				for i := range got {
					got[i] = -1
				}
				var mu sync.Mutex
				var seen []int
				st, err := RunPackedStream(plans, tc.workers, tc.ahead, len(packed), func(i int) (*PackedBatch, error) { return packed[i], nil },
					func(i int) { mu.Lock(); seen = append(seen, i); mu.Unlock() }, in.Params, in.AllOnes(), sparse, got)
				require.NoError(t, err)
				assert.Equal(t, want.Pred, got)
				slices.Sort(seen)
				assert.Equal(t, seqTo(len(packed)), seen)
				total := 0
				for i, p := range plans {
					total += st.Batches[i]
					assert.Empty(t, p.graphs, "graphs kept of packed batches")
				}
				assert.Equal(t, len(packed), total)
			})
		}
	}
	// Without Adj, the adjacency is made only where a batch runs dense.
	t.Run("lazy adjacency", func(t *testing.T) {
		for _, mode := range []AggMode{AggDense, AggSparse} {
			p, err := m.Compile(cpu.NewBackend(nil))
			require.NoError(t, err)
			defer p.Close()
			p.Agg = mode
			want, err := p.Run(d, in, false, nil)
			require.NoError(t, err)
			var made atomic.Int64
			got := make([]int32, d.Graph.N())
			for i := range got {
				got[i] = -1
			}
			_, err = RunPackedStream([]*Plan{p}, 2, 3, len(packed), func(i int) (*PackedBatch, error) {
				lazy := *packed[i]
				lazy.Adj = nil
				lazy.MakeAdj = func() (*bittensor.Tensor, error) { made.Add(1); return packed[i].Adj, nil }
				return &lazy, nil
			}, nil, in.Params, in.AllOnes(), false, got)
			require.NoError(t, err)
			assert.Equal(t, want.Pred, got, "%s", mode)
			if mode == AggDense {
				assert.Equal(t, int64(len(packed)), made.Load())
			} else {
				assert.Zero(t, made.Load(), "adjacencies made for edge-list batches")
			}
		}
	})
	t.Run("load fails", func(t *testing.T) {
		require.GreaterOrEqual(t, len(packed), 4)
		other, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(t, err)
		defer other.Close()
		plans := []*Plan{ref, other}
		got := make([]int32, d.Graph.N())
		_, err = RunPackedStream(plans, 3, 4, len(packed), func(i int) (*PackedBatch, error) {
			if i == 2 || i == 3 {
				return nil, fmt.Errorf("batch %d unreadable", i)
			}
			return packed[i], nil
		}, nil, in.Params, in.AllOnes(), false, got)
		require.Error(t, err)
		assert.Equal(t, "batch 2 unreadable", err.Error())
	})
}

// countingBackend counts the outputs a plan asks its backend to allocate
// and the predictions it copies back.
type countingBackend struct {
	bmm.Backend
	news, argmax, reads, ats int
}

func (c *countingBackend) Argmax(dst []int32, logits bmm.Vector, cols int) error {
	c.argmax++
	return c.Backend.Argmax(dst, logits, cols)
}

func (c *countingBackend) ReadInts(dst []int32, v bmm.Ints) error {
	c.reads++
	return c.Backend.ReadInts(dst, v)
}

func (c *countingBackend) ArgmaxAt(dst bmm.Ints, off int, logits bmm.Vector, cols int) error {
	c.ats++
	return c.Backend.(bmm.ArgmaxAter).ArgmaxAt(dst, off, logits, cols)
}

func (c *countingBackend) NewBits(rows, cols, bits int, packing bittensor.Packing) (bmm.Bits, error) {
	c.news++
	return c.Backend.NewBits(rows, cols, bits, packing)
}

func (c *countingBackend) NewCodes(rows, cols, bits int) (bmm.Codes, error) {
	c.news++
	return c.Backend.NewCodes(rows, cols, bits)
}

func (c *countingBackend) NewVector(n int) (bmm.Vector, error) {
	c.news++
	return c.Backend.NewVector(n)
}

// TestRunPreparedReusesOutputs: a stream of batches of one size allocates
// its op outputs for the first batch only; batches of many sizes leave the
// pool holding one batch's outputs, not one set per size.
func TestRunPreparedReusesOutputs(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	sizes := map[int]bool{}
	for _, b := range d.Eval {
		sizes[b.N()] = true
	}
	require.Greater(t, len(sizes), 2, "batches of several sizes")
	for _, sparse := range []bool{false, true} {
		be := &countingBackend{Backend: cpu.NewBackend(nil)}
		p, err := m.Compile(be)
		require.NoError(t, err)
		p.Agg = AggSparse
		got := make([]int32, d.Graph.N())
		one := packedOf(t, d.Eval[0], in)
		run := func(pb *PackedBatch) {
			pp, err := p.PreparePacked(pb, in.Params, in.AllOnes(), sparse)
			require.NoError(t, err)
			require.True(t, pp.b.Edges.Checked(pp.Nodes()), "edge list checked by the host worker")
			require.NoError(t, p.RunPrepared(pp, got))
		}
		run(one)
		first := be.news
		require.Positive(t, first)
		for range 4 {
			run(one)
		}
		assert.Equal(t, first, be.news, "outputs allocated again for batches of the same size")
		for _, b := range d.Eval {
			run(packedOf(t, b, in))
		}
		last := d.Eval[len(d.Eval)-1].N()
		shapes := 0
		for k := range p.pool.free {
			shapes++
			assert.True(t, k.rows == last || k.rows%last == 0, "pooled shape %+v of another batch than the last (%d nodes)", k, last)
		}
		assert.LessOrEqual(t, shapes, len(p.ops)+1, "pool shapes after %d batches of %d sizes", len(d.Eval), len(sizes))
		require.NoError(t, p.Close())
	}
}

// TestPreparePackedChecksEdges: an index past the batch is refused on the
// host worker, before the batch reaches a device.
func TestPreparePackedChecksEdges(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	p, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	defer p.Close()
	p.Agg = AggSparse
	var pb *PackedBatch
	for _, b := range d.Eval {
		if pb = packedOf(t, b, in); len(pb.Indices) > 0 {
			break
		}
	}
	require.NotEmpty(t, pb.Indices)
	bad := *pb
	bad.Indices = slices.Clone(pb.Indices)
	bad.Indices[len(bad.Indices)-1] = int32(len(pb.Nodes))
	_, err = p.PreparePacked(&bad, in.Params, in.AllOnes(), false)
	require.ErrorIs(t, err, ErrModel)
}

// TestRunPackedStreamDefersPredictions: on a backend that writes
// predictions at an offset, a stream copies none back per batch: one
// ReadInts each time the device's Ints fills and one at the end, with the
// predictions Run makes, also where a batch is larger than the Ints.
func TestRunPackedStreamDefersPredictions(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	packed := make([]*PackedBatch, len(d.Eval))
	total, largest := 0, 0
	for i, b := range d.Eval {
		packed[i] = packedOf(t, b, in)
		total, largest = total+b.N(), max(largest, b.N())
	}
	ref, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	defer ref.Close()
	want, err := ref.Run(d, in, false, nil)
	require.NoError(t, err)
	defer func(c int) { streamPredCap = c }(streamPredCap)
	for _, size := range []int{1 << 22, largest, largest - 1} {
		streamPredCap = size
		be := &countingBackend{Backend: cpu.NewBackend(nil)}
		p, err := m.Compile(be)
		require.NoError(t, err)
		got := make([]int32, d.Graph.N())
		for i := range got {
			got[i] = -1
		}
		_, err = RunPackedStream([]*Plan{p}, 2, 3, len(packed), func(i int) (*PackedBatch, error) { return packed[i], nil },
			nil, in.Params, in.AllOnes(), false, got)
		require.NoError(t, err)
		assert.Equal(t, want.Pred, got, "Ints of %d", size)
		over := 0 // batches larger than the Ints: copied back one by one
		for _, b := range d.Eval {
			if b.N() > min(size, d.Graph.N()) {
				over++
			}
		}
		assert.Equal(t, over, be.argmax, "Ints of %d", size)
		assert.Equal(t, len(packed)-over, be.ats, "Ints of %d", size)
		if size >= total {
			assert.Equal(t, 1, be.reads, "one read back for the whole stream")
		} else {
			assert.Greater(t, be.reads, 1, "Ints of %d: full before the end", size)
			assert.Less(t, be.reads, len(packed), "Ints of %d: read back per batch", size)
		}
		require.NoError(t, p.Close())
	}
}

// TestPreparePackedReusesArrays: Â, the degrees and the local ids that
// PreparePacked makes are the batcher's, also in arrays given back by
// Release after a larger batch (their old contents left in them), and a
// PackedBatch's Release runs once its batch is released.
func TestPreparePackedReusesArrays(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	p, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	defer p.Close()
	p.Agg = AggSparse
	order := slices.Clone(d.Eval)
	slices.SortFunc(order, func(a, b *Batch) int { return b.N() - a.N() }) // largest first
	for round := range 2 {
		for _, b := range order {
			pb := packedOf(t, b, in)
			released := 0
			pb.Release = func() { released++ }
			pp, err := p.PreparePacked(pb, in.Params, in.AllOnes(), round == 1)
			require.NoError(t, err)
			assert.Equal(t, b.Indptr, pp.b.Indptr)
			assert.Equal(t, b.Indices, pp.b.Indices)
			assert.Equal(t, b.Deg, pp.b.Deg)
			assert.Equal(t, b.DInv, pp.b.DInv)
			assert.Equal(t, seqTo32(b.N()), pp.b.Nodes)
			pp.Release()
			assert.Equal(t, 1, released)
			pp.Release() // a second time does nothing
			assert.Equal(t, 1, released)
		}
	}
}

func seqTo32(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// stagingBackend is a bmm.Stager over a CPU backend that counts what was
// staged, what an upload took, and what was given back untaken. The
// stagers of several plans share one record, as tcu's devices share their
// staged uploads.
type stagingBackend struct {
	bmm.Backend
	rec *stageRecord
}

type stageRecord struct {
	mu                     sync.Mutex
	staged                 map[any]bool
	stages, taken, unstage int
}

func (s *stagingBackend) StageBits(t *bittensor.Tensor) { s.rec.stage(t) }
func (s *stagingBackend) StageGraph(g *bmm.Graph, srcRows int) {
	s.rec.stage(g)
}

func (s *stagingBackend) Unstage(op any) {
	if s.rec.take(op) {
		s.rec.mu.Lock()
		s.rec.unstage++
		s.rec.mu.Unlock()
	}
}

func (s *stagingBackend) UploadBits(t *bittensor.Tensor) (bmm.Bits, error) {
	if s.rec.take(t) {
		s.rec.mu.Lock()
		s.rec.taken++
		s.rec.mu.Unlock()
	}
	return s.Backend.UploadBits(t)
}

func (s *stagingBackend) UploadGraph(g *bmm.Graph, srcRows int) (bmm.GraphOperand, error) {
	if s.rec.take(g) {
		s.rec.mu.Lock()
		s.rec.taken++
		s.rec.mu.Unlock()
	}
	return s.Backend.UploadGraph(g, srcRows)
}

func (r *stageRecord) stage(op any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.staged[op] = true
	r.stages++
}

func (r *stageRecord) take(op any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.staged[op]
	delete(r.staged, op)
	return ok
}

// TestRunPackedStreamStages: on backends that stage uploads, a stream's
// workers stage each batch's features (the planes, or the code lists of a
// sparse first product) and edge list (edge-list aggregation), and the device that runs the batch, whichever it is,
// uploads exactly those: every staged operand is taken by an upload, none
// is left to Release, with Run's predictions.
func TestRunPackedStreamStages(t *testing.T) {
	m, d, in, packed, ref := streamFixture(t)
	for _, sparse := range []bool{false, true} {
		want, err := ref.Run(d, in, sparse, nil)
		require.NoError(t, err)
		for _, mode := range []AggMode{AggDense, AggSparse} {
			rec := &stageRecord{staged: map[any]bool{}}
			plans := make([]*Plan, 2)
			for i := range plans {
				plans[i], err = m.Compile(&stagingBackend{Backend: cpu.NewBackend(nil), rec: rec})
				require.NoError(t, err)
				plans[i].Agg = mode
				defer plans[i].Close()
			}
			got := make([]int32, d.Graph.N())
			_, err = RunPackedStream(plans, 3, 4, len(packed), func(i int) (*PackedBatch, error) { return packed[i], nil },
				nil, in.Params, in.AllOnes(), sparse, got)
			require.NoError(t, err)
			assert.Equal(t, want.Pred, got, "%s", mode)
			perBatch := 1 // the features: planes, or the code lists
			if mode == AggSparse {
				perBatch++ // and the edge list
			}
			assert.Equal(t, perBatch*len(packed), rec.stages, "%s sparse=%v: staged", mode, sparse)
			assert.Equal(t, rec.stages, rec.taken, "%s sparse=%v: taken by an upload", mode, sparse)
			assert.Zero(t, rec.unstage, "%s sparse=%v: given back untaken", mode, sparse)
			assert.Empty(t, rec.staged, "%s sparse=%v", mode, sparse)
		}
	}
}

// costBackend records the costs its plan asks PreferEdges about.
type costBackend struct {
	bmm.Backend
	mu    sync.Mutex
	costs []bmm.AggCost
}

func (c *costBackend) PreferEdges(a bmm.AggCost) bool {
	c.mu.Lock()
	c.costs = append(c.costs, a)
	c.mu.Unlock()
	return c.Backend.PreferEdges(a)
}

// TestAggCostUploads: a plan that keeps nothing between passes tells the
// cost model that each pass uploads the aggregation's operand, with the
// packed adjacency's bytes (padded lines of padded bits); a resident plan
// does not.
func TestAggCostUploads(t *testing.T) {
	m, d, in := manyBatches(t, GCN, 4, 4, false)
	for _, resident := range []bool{false, true} {
		be := &costBackend{Backend: cpu.NewBackend(nil)}
		p, err := m.Compile(be)
		require.NoError(t, err)
		p.Resident = resident
		_, err = p.Run(d, in, false, nil)
		require.NoError(t, err)
		require.NotEmpty(t, be.costs)
		for _, c := range be.costs {
			assert.Equal(t, !resident, c.Uploaded)
			if c.Batches <= 1 {
				n := int64(c.Rows)
				assert.Equal(t, (n+15)/16*16*((n+255)/256*256/8), c.DenseBytes, "%+v", c)
			}
		}
		require.NoError(t, p.Close())
	}
}
