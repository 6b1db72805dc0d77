package layers

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// PackedBatch is one inference batch as a packed batch file holds it
// (subgraph.PackedFile): the local CSR without the diagonal, the 1-bit
// adjacency with it, the feature codes as bit planes and the nodes' global
// ids and feature scales. Plan.RunPacked runs it without the graph or the
// whole graph's Input.
type PackedBatch struct {
	Nodes           []int32 // global ids, in row order
	Indptr, Indices []int32 // local CSR, rows sorted, no diagonal
	// Adj is the 1-bit adjacency; when nil, MakeAdj makes it for a batch
	// whose aggregations run dense (an n-node batch's is n²/8 bytes, which
	// an edge-list batch never reads).
	Adj       *bittensor.Tensor
	MakeAdj   func() (*bittensor.Tensor, error)
	Feat      *bittensor.Tensor // codes, ByRows, one plane per bit
	FeatScale []float32         // nil: none
	// Release, when not nil, is called once the batch's arrays are no
	// longer read (PreparedBatch.Release): the loader may reuse them.
	Release func()
}

// AllOnes reports whether every stored code of in is 1 (binary features):
// what a packed batch file records so that a batch's own input, made from
// its planes, takes the same first-product path as the whole graph's.
func (in *Input) AllOnes() bool {
	in.prepare()
	return in.allOnes
}

// RunPacked runs plan on one packed batch and writes its predictions into
// pred at the batch's global ids. params is the codes' quantizer and
// allOnes the whole input's Input.AllOnes; sparse is the first product's
// choice for the whole input (Plan.SparseCheaperSize). What the batch
// leaves in the plan (its graph uploads) is dropped before it returns, so a
// pass over many batches holds one at a time.
func (p *Plan) RunPacked(pb *PackedBatch, params Params, allOnes, sparse bool, pred []int32) (pack, compute time.Duration, err error) {
	t0 := time.Now()
	pp, err := p.PreparePacked(pb, params, allOnes, sparse)
	if err != nil {
		return 0, 0, err
	}
	t1 := time.Now()
	err = p.RunPrepared(pp, pred)
	if err == nil {
		pp.Release()
	}
	return t1.Sub(t0), time.Since(t1), err
}

// PreparedBatch is a packed batch made ready on the host for
// Plan.RunPrepared: Â's CSR, degrees, tile mask and, for the sparse first
// product, the feature lists.
type PreparedBatch struct {
	nodes   []int32 // global ids
	b       *Batch
	x       *bittensor.Tensor
	sx      *Input
	release func()     // the PackedBatch's Release
	stager  bmm.Stager // what staged the batch's uploads (Stage), if any
}

// Nodes is the batch's node count.
func (pp *PreparedBatch) Nodes() int { return len(pp.nodes) }

// Release gives the batch's host arrays back for later batches, and calls
// its PackedBatch's Release: once the batch is queued (RunPrepared has
// returned, or RunPackedStream's done), as the backends copy what they
// upload. pp must not be used after it.
func (pp *PreparedBatch) Release() {
	if pp == nil || pp.b == nil {
		return
	}
	if pp.stager != nil { // what no pass uploaded
		pp.stager.Unstage(pp.x)
		pp.stager.Unstage(&pp.b.Edges)
		if g := pp.b.feat.graph; g != nil {
			pp.stager.Unstage(g)
		}
		pp.stager = nil
	}
	if hb := pp.b.host; hb != nil {
		pp.b.host = nil
		hb.put()
	}
	if pp.release != nil {
		pp.release()
	}
	pp.b, pp.x, pp.sx, pp.release = nil, nil, nil, nil
}

// hostBufs are the host arrays of a prepared batch's Â, reused from batch
// to batch (hostPool).
type hostBufs struct {
	nodes, indptr, indices scratch[int32]
	deg, dinv              scratch[float32]
	// A sparse first product's code lists (planesInput) and their sums.
	inPtr, inIdx scratch[int32]
	inCodes      scratch[uint32]
	sums         scratch[float32]
	weights      scratch[uint8]
}

var hostPool = sync.Pool{New: func() any { return new(hostBufs) }}

func (hb *hostBufs) put() { hostPool.Put(hb) }

// scratch is a reusable array.
type scratch[T any] struct{ s []T }

// take returns n elements of s, grown (and then kept) when too short;
// their values are the last user's.
func (s *scratch[T]) take(n int) []T {
	if cap(s.s) < n {
		s.s = make([]T, n)
	}
	return s.s[:n]
}

// PreparePacked does RunPacked's host work on pb: it changes no state of
// p and asks its backend only for the cost model (PreferEdges), so several
// goroutines may prepare batches while one runs them (RunPackedStream).
func (p *Plan) PreparePacked(pb *PackedBatch, params Params, allOnes, sparse bool) (*PreparedBatch, error) {
	n := len(pb.Nodes)
	if params != p.Model.Input {
		return nil, fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, params, p.Model.Input)
	}
	if pb.Feat == nil || pb.Feat.Rows() != n || pb.Feat.Bits() != params.Bits || pb.Feat.Packing() != bittensor.ByRows ||
		pb.Feat.Cols() != p.Model.Layers[0].Lin1.In || len(pb.Indptr) != n+1 || (pb.Adj == nil && pb.MakeAdj == nil) || (pb.Adj != nil && pb.Adj.Rows() != n) ||
		(pb.FeatScale != nil && len(pb.FeatScale) != n) {
		return nil, fmt.Errorf("%w: packed batch of %d nodes does not fit a model of %d features at %d bits", ErrModel, n, p.Model.Layers[0].Lin1.In, params.Bits)
	}
	// The host arrays of Â come from a pool (Release gives them back): a
	// stream prepares large batches on every core without pause, and fresh
	// arrays kept the collector busy beside the devices' goroutines.
	hb := hostPool.Get().(*hostBufs)
	kept := false // by the batch made: Release gives hb back then
	defer func() {
		if !kept {
			hb.put()
		}
	}()
	e := len(pb.Indices) + n
	b := &Batch{Nodes: hb.nodes.take(n), Indptr: hb.indptr.take(n + 1), Indices: hb.indices.take(e),
		Deg: hb.deg.take(n), DInv: hb.dinv.take(n), Adj: pb.Adj, FeatScale: pb.FeatScale}
	// Â in the CSR, the diagonal sorted into each row, as the batcher's
	// LoopsInCSR makes it. The file's rows hold no diagonal
	// (subgraph.ReadPacked refuses one), so each row is copied in two parts
	// around it; its degree is made on the way.
	at, lo := int32(0), int32(0)
	if n > 0 && pb.Indptr[0] != 0 {
		return nil, fmt.Errorf("%w: packed batch row 0 starts at entry %d", ErrModel, pb.Indptr[0])
	}
	b.Indptr[0] = 0
	for r := range n {
		b.Nodes[r] = int32(r)
		hi := pb.Indptr[r+1]
		if hi < lo || int(hi) > len(pb.Indices) {
			return nil, fmt.Errorf("%w: packed batch row %d spans %d..%d of %d entries", ErrModel, r, lo, hi, len(pb.Indices))
		}
		row := pb.Indices[lo:hi]
		k := 0
		for k < len(row) && row[k] < int32(r) {
			k++
		}
		at += int32(copy(b.Indices[at:], row[:k]))
		b.Indices[at] = int32(r)
		at++
		at += int32(copy(b.Indices[at:], row[k:]))
		b.Indptr[r+1] = at
		d := at - b.Indptr[r]
		b.Deg[r], b.DInv[r] = float32(d), float32(1/math.Sqrt(float64(d)))
		lo = hi
	}
	b.Indices = b.Indices[:at]
	b.host = hb
	b.Edges = bmm.Graph{Indptr: b.Indptr, Indices: b.Indices}
	// The edge list's check (every index below n, the longest row) runs
	// here, on a host worker: UploadGraph finds it remembered instead of
	// reading the batch's edges again in device work.
	if _, _, err := b.Edges.Stats(n); err != nil {
		return nil, fmt.Errorf("%w: packed batch of %d nodes: %w", ErrModel, n, err)
	}
	// The tile count only feeds the dense-or-edge-list choice, which
	// AggSparse has made (bench/scale/RESULTS.md).
	if p.Agg != AggSparse {
		b.tiles = csrTiles(n, b.Indptr, b.Indices)
	}
	if b.Adj == nil && !p.edges(b) {
		adj, err := pb.MakeAdj()
		if err != nil {
			return nil, err
		}
		if adj.Rows() != n || adj.Cols() != n {
			return nil, fmt.Errorf("%w: packed batch of %d nodes has a %d×%d adjacency", ErrModel, n, adj.Rows(), adj.Cols())
		}
		b.Adj = adj
	}
	pp := &PreparedBatch{nodes: pb.Nodes, b: b, release: pb.Release}
	b.feat.packed = pb.Feat
	if !sparse {
		// The dense first product reads the planes themselves and sums
		// their rows on the device (pass.rowSums): no code lists, no sums.
		pp.x = pb.Feat
		kept = true
		return pp, nil
	}
	in := planesInput(pb.Feat, params, allOnes, hb)
	if err := p.checkInput(in); err != nil {
		return nil, err
	}
	b.feat.in, b.feat.sums = in, in.rowSums
	pp.sx = in
	if p.byteFirst(in) && in.Params.Bits <= 8 {
		// featRows' graph of in's lists, made here: the batch's rows are
		// in's, so its indptr and indices are in's own.
		g := &bmm.Graph{Indptr: in.Indptr, Indices: in.Indices}
		wmax := uint32(1)
		if !in.allOnes {
			g.Weights, g.WeightBits = hb.weights.take(len(in.Codes)), in.Params.Bits
			for j, c := range in.Codes {
				g.Weights[j] = uint8(c)
				wmax = max(wmax, c)
			}
		}
		var maxDeg int64
		for r := range n {
			maxDeg = max(maxDeg, int64(in.Indptr[r+1]-in.Indptr[r]))
		}
		b.feat.graph, b.feat.bound, b.feat.adjMade = g, maxDeg*int64(wmax), true
	}
	p.packLists(b, in)
	kept = true
	return pp, nil
}

// Stage has p's backend, where it is a bmm.Stager, do the host side of
// pp's large uploads now (the dense features or their code lists, and the
// edge list a pass uploads), on the caller's goroutine: a stream's host workers stage
// while the devices run earlier batches. Release gives back what no pass
// took.
func (p *Plan) Stage(pp *PreparedBatch) {
	st, ok := p.Backend.(bmm.Stager)
	if !ok || pp == nil || pp.b == nil {
		return
	}
	pp.stager = st
	if pp.x != nil {
		st.StageBits(pp.x)
	}
	if g := pp.b.feat.graph; pp.sx != nil && g != nil {
		st.StageGraph(g, pp.sx.Cols)
	}
	if p.edges(pp.b) {
		st.StageGraph(&pp.b.Edges, pp.b.N())
	}
}

// RunPrepared runs a batch made by PreparePacked (on this plan or another
// compiled from the same model) on p's backend and writes its predictions
// into pred at the batch's global ids; the batch's uploads are dropped
// before it returns.
func (p *Plan) RunPrepared(pp *PreparedBatch, pred []int32) error {
	defer p.forget(pp.b)
	n := len(pp.nodes)
	r := &Result{Pred: make([]int32, n)}
	err := p.predict(r, pp.b, pp.x, pp.sx, nil)
	// A stream's batches differ in size: outputs of shapes this batch did
	// not use would stay in the pool, one set per size, for a pass that
	// never comes back to them; freed, their device memory serves the next
	// batches from the backend's size classes.
	p.pool.trimUnused()
	if err != nil {
		return err
	}
	for i, v := range pp.nodes {
		pred[v] = r.Pred[i]
	}
	return nil
}

// streamPredCap is how many predictions a device of a stream keeps on its
// backend (ArgmaxAter) before reading them back in one ReadInts.
var streamPredCap = 1 << 22

// predSink queues a stream's batches on one device with their predictions
// left on the backend, at successive offsets of one Ints, so that a batch
// costs the device's goroutine no copy back and no wait for the device:
// the next batch's uploads are staged while the device still computes.
// flush reads them back once the Ints is full, and at the end.
type predSink struct {
	p    *Plan
	at   bmm.ArgmaxAter
	size int
	dst  bmm.Ints // made on first use
	used int
	// ids are the queued batches' global ids, at their offsets: copied,
	// as a batch's own may be views of a file whose pages are given back
	// once it is queued (pipeline's packed loader).
	ids  []int32
	host []int32
}

// newPredSink returns p's sink for a stream over a graph of n nodes, nil
// where p's backend cannot write predictions at an offset.
func (p *Plan) newPredSink(n int) *predSink {
	at, ok := p.Backend.(bmm.ArgmaxAter)
	if !ok || n == 0 {
		return nil
	}
	return &predSink{p: p, at: at, size: min(n, streamPredCap)}
}

// run queues batch pp; its predictions reach pred at the latest at the
// next flush. A batch larger than the sink runs as RunPrepared does, or,
// kept (key not nil: a resident plan keeps its inputs there), in a sink
// grown to its size.
func (s *predSink) run(pp *PreparedBatch, pred []int32, key *keptKey) error {
	p, n := s.p, len(pp.nodes)
	if n > s.size {
		if err := s.flush(pred); err != nil {
			return err
		}
		if key == nil {
			return p.RunPrepared(pp, pred)
		}
		s.free()
		s.size, s.host = n, nil
	}
	if s.used+n > s.size {
		if err := s.flush(pred); err != nil {
			return err
		}
	}
	if s.dst == nil {
		var err error
		if s.dst, err = p.Backend.NewInts(s.size, -1); err != nil {
			return err
		}
	}
	defer p.forget(pp.b)
	ps, err := p.pass(pp.b, pp.x, pp.sx, nil, key)
	if err == nil {
		err = s.at.ArgmaxAt(s.dst, s.used, ps.logits(), p.Model.Classes)
	}
	// Released before the device has run them: the backend orders the
	// next batch's writes into these buffers after this batch's reads.
	ps.release()
	p.pool.trimUnused()
	if err != nil {
		return err
	}
	if s.ids == nil {
		s.ids = make([]int32, 0, s.size)
	}
	s.ids = append(s.ids, pp.nodes...)
	s.used += n
	return nil
}

// flush reads the queued batches' predictions back (once every op before
// has run) and writes them into pred at their global ids.
func (s *predSink) flush(pred []int32) error {
	if s.used == 0 {
		return nil
	}
	if s.host == nil {
		s.host = make([]int32, s.size)
	}
	if err := s.p.Backend.ReadInts(s.host, s.dst); err != nil {
		return err
	}
	// Millions of writes scattered over the graph's predictions: on
	// several cores, as the device waits for this goroutine meanwhile (the
	// ids are distinct: no two chunks write one place).
	const chunk = 1 << 16
	par.For((len(s.ids)+chunk-1)/chunk, min(runtime.GOMAXPROCS(0), 8), func(c int) {
		lo, hi := c*chunk, min(len(s.ids), (c+1)*chunk)
		for i, v := range s.ids[lo:hi] {
			pred[v] = s.host[lo+i]
		}
	})
	s.ids, s.used = s.ids[:0], 0
	return nil
}

// free frees the sink's Ints.
func (s *predSink) free() {
	if s != nil && s.dst != nil {
		s.dst.Free()
		s.dst = nil
	}
}

// forget frees the graph uploads the plan keeps for b.
func (p *Plan) forget(b *Batch) {
	for k, g := range p.graphs {
		if k.b == b {
			g.Free()
			delete(p.graphs, k)
		}
	}
}

// planesInput is the Input of x's rows: each row's non-zero codes, read
// from its bit planes, with their sums; allOnes is the whole input's.
// It has no float values (the quantized pass reads none). The lists are
// sized by a popcount first, not grown by append (bench/scale/RESULTS.md),
// and taken from hb when it is not nil.
func planesInput(x *bittensor.Tensor, params Params, allOnes bool, hb *hostBufs) *Input {
	n, lw, nb := x.Rows(), x.LineWords(), x.Bits()
	words, pw := x.Words(), x.PlaneWords()
	if hb == nil {
		hb = new(hostBufs)
	}
	// Words past the columns are padding, zero (subgraph checks a packed
	// batch's): only the used ones are read.
	used := min(lw, (x.Cols()+63)/64)
	in := &Input{Rows: n, Cols: x.Cols(), Params: params, Indptr: hb.inPtr.take(n + 1)}
	// anyBits is the OR of word w of row r over the planes.
	anyBits := func(r, w int) uint64 {
		var v uint64
		for pl := range nb {
			v |= words[pl*pw+r*lw+w]
		}
		return v
	}
	total := 0
	for r := range n {
		for w := range used {
			total += bits.OnesCount64(anyBits(r, w))
		}
	}
	in.Indices, in.Codes = hb.inIdx.take(total), hb.inCodes.take(total)
	sums := hb.sums.take(n)
	at := 0
	in.Indptr[0] = 0
	for r := range n {
		var s int64
		for w := range used {
			for v := anyBits(r, w); v != 0; v &= v - 1 {
				k := bits.TrailingZeros64(v)
				var q uint32
				for pl := range nb {
					q |= uint32(words[pl*pw+r*lw+w]>>k&1) << pl
				}
				in.Indices[at], in.Codes[at] = int32(w*64+k), q
				at++
				s += int64(q)
			}
		}
		in.Indptr[r+1] = int32(at)
		sums[r] = float32(s)
	}
	in.prepOnce.Do(func() { in.rowSums, in.allOnes = sums, allOnes })
	return in
}

// SparseCheaperSize is SparseCheaper for an input of rows × cols codes of
// bits, codes of them stored: what a packed batch file's header says of the
// whole graph's input; hostLists when every pass makes the code lists from
// the planes (a streamed file).
func (p *Plan) SparseCheaperSize(rows, cols, codes, bits int, hostLists bool) bool {
	if !p.byteFirst(&Input{Params: Params{Bits: bits}}) {
		return false
	}
	pad := bittensor.DefaultPadding.Bits
	tiles := (rows + 63) / 64 * ((cols + pad - 1) / pad)
	return p.Backend.PreferEdges(bmm.AggCost{Rows: rows, Cols: p.widths[1], Edges: codes,
		DenseTiles: tiles, Bits: bits * p.Model.linBits(&p.Model.Layers[0].Lin1), HostLists: hostLists})
}

// RunPackedAll runs packed batches 0..n-1, load(i) reading batch i, as Run
// runs batches: on lanes, one per core, where the backend forks and the
// batches are enough (laneCount), else one after the other. Each lane holds
// one batch at a time; done(i), when not nil, is called once batch i's
// predictions are in pred, on that batch's lane (so from several
// goroutines at once). The batches must not share a node. It returns
// the lanes' summed load, pack and compute times and the lowest failing
// batch's error (lanes stop taking batches after a failure).
func (p *Plan) RunPackedAll(n int, load func(i int) (*PackedBatch, error), done func(i int), params Params, allOnes, sparse bool, pred []int32) (read, pack, compute time.Duration, err error) {
	l := p.laneCount(n)
	lanes := []*Plan{p}
	if l > 1 && !p.closed {
		if lanes, err = p.lanesUpTo(l); err != nil {
			return 0, 0, 0, err
		}
	}
	type laneTimes struct {
		read, pack, compute time.Duration
		err                 error
		errAt               int
		_                   [64]byte
	}
	work := make([]laneTimes, len(lanes))
	var next, failed atomic.Int64
	failed.Store(int64(n))
	par.Run(len(lanes), func(w int) {
		lt := &work[w]
		for {
			i := int(next.Add(1) - 1)
			if i >= n || int64(i) > failed.Load() {
				return
			}
			t0 := time.Now()
			pb, err := load(i)
			lt.read += time.Since(t0)
			var pk, c time.Duration
			if err == nil {
				pk, c, err = lanes[w].RunPacked(pb, params, allOnes, sparse, pred)
			}
			if err != nil {
				if lt.err == nil || i < lt.errAt {
					lt.err, lt.errAt = err, i
				}
				lowerTo(&failed, int64(i))
				return
			}
			lt.pack, lt.compute = lt.pack+pk, lt.compute+c
			if done != nil {
				done(i)
			}
		}
	})
	first := -1
	for w := range work {
		read, pack, compute = read+work[w].read, pack+work[w].pack, compute+work[w].compute
		if work[w].err != nil && (first < 0 || work[w].errAt < work[first].errAt) {
			first = w
		}
	}
	if first >= 0 {
		return read, pack, compute, work[first].err
	}
	return read, pack, compute, nil
}

// StreamTimes is what RunPackedStream measured: the host workers' read and
// prepare times summed, and per device its batches, nodes, the time it ran
// them and the time it waited for the host to have one ready.
type StreamTimes struct {
	Read, Prepare time.Duration
	Batches       []int
	Nodes         []int
	Run, Wait     []time.Duration
}

// Sums returns the host workers' read and prepare times and the devices'
// run times, each summed.
func (st StreamTimes) Sums() (read, prepare, run time.Duration) {
	for _, d := range st.Run {
		run += d
	}
	return st.Read, st.Prepare, run
}

// RunPackedStream runs packed batches 0..n-1 over devices (plans compiled
// from one model, one per backend): workers goroutines read and prepare
// batches on the host (PreparePacked), at most ahead of them ready and not
// yet taken, while each device takes the next batch in order as soon as it
// is free, so a device computes while the host prepares what follows.
// Predictions go to pred at the batches' global ids, which must not
// repeat: the result does not depend on which device ran which batch.
// done(i), when not nil, is called once batch i is queued on its device
// (its inputs are no longer read); on a backend that writes predictions
// at an offset (bmm.ArgmaxAter) they reach pred in batches, all of them
// by the time RunPackedStream returns.
// It returns the lowest failing batch's error.
func RunPackedStream(devices []*Plan, workers, ahead, n int, load func(i int) (*PackedBatch, error), done func(i int), params Params, allOnes, sparse bool, pred []int32) (StreamTimes, error) {
	return runPackedStream(devices, workers, ahead, n, load, done, params, allOnes, sparse, pred, nil)
}

// KeepPackedStream is RunPackedStream that keeps every batch's inputs on
// the device that ran it: the devices' shares, which RunResident runs
// again with nothing read or uploaded. The plans must be resident
// (Plan.Resident) on backends whose uploads are copies (a GPU's), that
// write predictions at an offset (bmm.ArgmaxAter). On an error the shares
// kept so far are freed.
func KeepPackedStream(devices []*Plan, workers, ahead, n int, load func(i int) (*PackedBatch, error), done func(i int), params Params, allOnes, sparse bool, pred []int32) ([]*Resident, StreamTimes, error) {
	keep := make([]*Resident, len(devices))
	for d, p := range devices {
		if _, ok := p.Backend.(bmm.ArgmaxAter); !ok || !p.Resident {
			return nil, StreamTimes{}, fmt.Errorf("%w: keeping batches on %s needs a resident plan on a backend that writes predictions at an offset", ErrModel, p.Backend.Name())
		}
		keep[d] = &Resident{p: p, sparse: sparse}
	}
	st, err := runPackedStream(devices, workers, ahead, n, load, done, params, allOnes, sparse, pred, keep)
	for _, r := range keep {
		if err == nil {
			err = r.alloc()
		}
	}
	if err != nil {
		for _, r := range keep {
			r.Free()
		}
		return nil, st, err
	}
	return keep, st, nil
}

// runPackedStream is RunPackedStream, keeping each device's batches in
// keep[d] when keep is not nil.
func runPackedStream(devices []*Plan, workers, ahead, n int, load func(i int) (*PackedBatch, error), done func(i int), params Params, allOnes, sparse bool, pred []int32, keep []*Resident) (StreamTimes, error) {
	nd := len(devices)
	st := StreamTimes{Batches: make([]int, nd), Nodes: make([]int, nd), Run: make([]time.Duration, nd), Wait: make([]time.Duration, nd)}
	if nd == 0 {
		return st, fmt.Errorf("%w: no device to run packed batches on", ErrModel)
	}
	workers, ahead = max(1, workers), max(1, ahead)
	type ready struct {
		pp  *PreparedBatch
		err error
	}
	var failed atomic.Int64
	failed.Store(int64(n))
	fail := func(i int) { lowerTo(&failed, int64(i)) }
	var next, read, prep atomic.Int64
	take, stop := par.Ordered(n, workers, ahead, func(i int) ready {
		t0 := time.Now()
		pb, err := load(i)
		t1 := time.Now()
		var pp *PreparedBatch
		if err == nil {
			pp, err = devices[0].PreparePacked(pb, params, allOnes, sparse)
		}
		if err == nil {
			devices[0].Stage(pp)
		}
		read.Add(int64(t1.Sub(t0)))
		prep.Add(int64(time.Since(t1)))
		return ready{pp, err}
	})
	errs := make([]error, n)
	var dw sync.WaitGroup
	for d, p := range devices {
		dw.Go(func() {
			sink := p.newPredSink(len(pred))
			defer sink.free()
			last := -1 // the last batch this device queued
			for {
				i := int(next.Add(1) - 1)
				if i >= n || int64(i) > failed.Load() {
					if sink != nil && last >= 0 {
						t := time.Now()
						if err := sink.flush(pred); err != nil {
							errs[last] = err
							fail(last)
						}
						st.Run[d] += time.Since(t)
					}
					return
				}
				t0 := time.Now()
				r := take(i)
				t1 := time.Now()
				st.Wait[d] += t1.Sub(t0)
				err := r.err
				if err == nil {
					switch {
					case keep != nil:
						err = keep[d].add(r.pp, pred, sink)
					case sink != nil:
						err = sink.run(r.pp, pred, nil)
					default:
						err = p.RunPrepared(r.pp, pred)
					}
				}
				st.Run[d] += time.Since(t1)
				if err != nil {
					errs[i] = err
					fail(i)
					return
				}
				last = i
				st.Batches[d]++
				st.Nodes[d] += r.pp.Nodes()
				r.pp.Release() // queued: the backends copied what they read
				if done != nil {
					done(i)
				}
			}
		})
	}
	dw.Wait()
	stop()
	st.Read, st.Prepare = time.Duration(read.Load()), time.Duration(prep.Load())
	if f := failed.Load(); f < int64(n) {
		return st, errs[f]
	}
	return st, nil
}
