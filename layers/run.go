package layers

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// Batch-parallel running. A batch of a few thousand nodes is too small to
// split every op across many cores (bench/manycore/RESULTS.md), so when
// the backend forks (bmm.Forker) and there are batches enough, Run gives
// whole batches to lanes: one per
// core, each a copy of the plan on a fork of the backend, with its own
// outputs, epilogues and graph uploads, its ops on its own goroutine. The
// batches' predictions go to disjoint nodes, so the result is the serial
// one bit for bit whatever the lanes' order.

// planLanes is a plan's lanes, made on first use and kept (with their
// outputs and uploads) until Close, and what it knows of the batches.
type planLanes struct {
	lanes []*Plan
	// disjoint caches, for the last Data run on lanes, whether no node is
	// in two of its batches (the lanes' writes to Pred then never meet).
	seen struct {
		d        *Data
		first    *Batch
		n        int
		disjoint bool
	}
}

// laneCount is how many lanes Run uses for nb batches: one per core, up to
// one per batch; 1 (the serial loop, every op split across the cores) when
// the backend does not fork or when fewer than three batches would leave
// most cores idle, where splitting each op is faster.
func (p *Plan) laneCount(nb int) int {
	if _, ok := p.Backend.(bmm.Forker); !ok {
		return 1
	}
	w := runtime.GOMAXPROCS(0)
	l := min(w, nb)
	if l < 2 || (l < w && l < 3) {
		return 1
	}
	return l
}

// cores is how many cores p's own loops (the merged batch, the feature
// lists) may use: one on a lane.
func (p *Plan) cores() int {
	if p.onLane {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// lane returns lane i, making the lanes up to it: a copy of the plan whose
// backend is a fork of p's, with empty pools and caches of its own. The
// copy shares p's compiled operands (weights and static epilogue vectors),
// which ops only read, and has p's settings as they are now (they may have
// changed since the lane was made).
func (p *Plan) lane(i int) (*Plan, error) {
	if p.par == nil {
		p.par = &planLanes{}
	}
	for len(p.par.lanes) <= i {
		fb, err := p.Backend.(bmm.Forker).Fork()
		if err != nil {
			return nil, fmt.Errorf("layers: forking the backend: %w", err)
		}
		lp := new(Plan)
		*lp = *p
		lp.Backend = fb
		lp.pool = opPool{}
		lp.run = make([]bmm.Epi, len(p.run))
		lp.graphs, lp.shared, lp.pred, lp.par, lp.kept = nil, nil, nil, nil, nil
		lp.merged.d, lp.merged.first, lp.merged.b = nil, nil, nil
		lp.onLane = true
		p.par.lanes = append(p.par.lanes, lp)
	}
	lp := p.par.lanes[i]
	lp.Agg, lp.Merge, lp.Resident = p.Agg, p.Merge, p.Resident
	return lp, nil
}

// lanesUpTo returns lanes 0..l-1 (lane).
func (p *Plan) lanesUpTo(l int) ([]*Plan, error) {
	lanes := make([]*Plan, l)
	for i := range lanes {
		var err error
		if lanes[i], err = p.lane(i); err != nil {
			return nil, err
		}
	}
	return lanes, nil
}

// closeLanes frees what the lanes hold (not the plan's own operands, which
// they share) and closes their forks.
func (p *Plan) closeLanes() {
	if p.par == nil {
		return
	}
	for _, lp := range p.par.lanes {
		lp.pool.close()
		for _, g := range lp.graphs {
			g.Free()
		}
		lp.graphs = nil
		for _, in := range lp.kept {
			in.free()
		}
		lp.kept = nil
		lp.closed = true
		lp.Backend.Close()
	}
	p.par = nil
}

// disjointOK reports whether no node is in two of d's batches, checked once
// per Data (and Eval slice).
func (p *Plan) disjointOK(d *Data) bool {
	if p.par == nil {
		p.par = &planLanes{}
	}
	s := &p.par.seen
	if len(d.Eval) > 0 && s.d == d && s.first == d.Eval[0] && s.n == len(d.Eval) {
		return s.disjoint
	}
	seen := make([]uint64, (d.Graph.N()+63)/64)
	ok := true
	for _, b := range d.Eval {
		for _, v := range b.Nodes {
			if v < 0 || int(v) >= d.Graph.N() || seen[v/64]&(1<<(v%64)) != 0 {
				ok = false // a node twice (or outside the graph: the serial loop reports it)
				break
			}
			seen[v/64] |= 1 << (v % 64)
		}
		if !ok {
			break
		}
	}
	s.d, s.first, s.n, s.disjoint = d, d.Eval[0], len(d.Eval), ok
	return ok
}

// laneShare is one lane's contiguous range of batches, on a cache line of
// its own: next is advanced by its lane and, once the lane's own range is
// done, by lanes helping with it.
type laneShare struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

// laneWork is what one lane did in a Run.
type laneWork struct {
	r             Result // its predictions go straight to the run's Pred
	pack, compute time.Duration
	err           error
	errBatch      int
	_             [64]byte // lanes write their own only
}

// packLists makes what a sparse first product reads of b's features in
// in, on b's first run: the feature lists and the code sums (kept by the
// batch). It is that product's packing, as Input.Pack is the dense one's.
func (p *Plan) packLists(b *Batch, in *Input) {
	if g, _ := b.featRows(in, p.byteFirst(in), p.cores()); g != nil {
		b.featSums(in)
	}
}

// runLanes is Run on l lanes (see laneCount); r is the run's result with
// Pred made.
func (p *Plan) runLanes(l int, r *Result, d *Data, in *Input, sparse bool, progress func(done, total int)) error {
	lanes, err := p.lanesUpTo(l)
	if err != nil {
		return err
	}
	for _, lp := range lanes {
		lp.shared = p.graphs
	}
	nb := len(d.Eval)
	shares := make([]laneShare, l)
	for w := range shares {
		shares[w].next.Store(int64(w * nb / l))
		shares[w].end = int64((w + 1) * nb / l)
	}
	work := make([]laneWork, l)
	var (
		// failAt is the lowest batch that failed (nb: none). Lanes skip the
		// batches after it but run those before, so the error returned is
		// the first failing batch's, as on the serial loop.
		failAt atomic.Int64
		mu     sync.Mutex // progress
		done   int
	)
	failAt.Store(int64(nb))
	one := func(lp *Plan, lw *laneWork, i int) error {
		pack, compute, err := lp.runBatch(&lw.r, d.Eval[i], in, sparse)
		if err != nil {
			return err
		}
		lw.pack += pack
		lw.compute += compute
		if progress != nil {
			mu.Lock()
			done++
			progress(done, nb)
			mu.Unlock()
		}
		return nil
	}
	start := time.Now()
	par.Run(l, func(w int) {
		lp, lw := lanes[w], &work[w]
		lw.r.Pred = r.Pred
		// Its own share first, then the others' (in turn from the next).
		for k := range l {
			s := &shares[(w+k)%l]
			for {
				i := s.next.Add(1) - 1
				if i >= s.end || i > failAt.Load() {
					break // a share's batches come in order: the rest are later still
				}
				if err := one(lp, lw, int(i)); err != nil {
					if lw.err == nil || int(i) < lw.errBatch {
						lw.err, lw.errBatch = err, int(i)
					}
					lowerTo(&failAt, i)
				}
			}
		}
	})
	wall := time.Since(start)
	var first *laneWork
	var pack, compute time.Duration
	for w := range work {
		lw := &work[w]
		if lw.err != nil && (first == nil || lw.errBatch < first.errBatch) {
			first = lw
		}
		r.Stats.InterBytes += lw.r.Stats.InterBytes
		r.Stats.UnfusedBytes += lw.r.Stats.UnfusedBytes
		r.Nodes += lw.r.Nodes
		r.EdgeListBatches += lw.r.EdgeListBatches
		pack += lw.pack
		compute += lw.compute
	}
	if first != nil {
		return first.err
	}
	// The lanes' times overlap: Pack and Compute share the wall time in
	// the proportion the lanes spent in each.
	if sum := pack + compute; sum > 0 {
		r.Pack = time.Duration(float64(wall) * float64(pack) / float64(sum))
	}
	r.Compute = wall - r.Pack
	return nil
}

// predChunk is the share of a prediction vector one core fills or
// scatters: a merged pass over millions of nodes spends milliseconds on
// the host here, as long as its device work.
const predChunk = 1 << 16

// fillPred sets every prediction to −1 (in no batch).
func fillPred(pred []int32) {
	par.For((len(pred)+predChunk-1)/predChunk, runtime.GOMAXPROCS(0), func(i int) {
		s := pred[i*predChunk : min(len(pred), (i+1)*predChunk)]
		for j := range s {
			s[j] = -1
		}
	})
}

// copyPred copies a whole prediction vector, on several cores when large.
func copyPred(dst, src []int32) {
	par.For((len(src)+predChunk-1)/predChunk, runtime.GOMAXPROCS(0), func(i int) {
		lo, hi := i*predChunk, min(len(src), (i+1)*predChunk)
		copy(dst[lo:hi], src[lo:hi])
	})
}

// scatterPred writes a batch's predictions at its nodes (distinct, as a
// batch's are).
func scatterPred(dst, nodes, pred []int32) {
	par.For((len(nodes)+predChunk-1)/predChunk, runtime.GOMAXPROCS(0), func(i int) {
		lo, hi := i*predChunk, min(len(nodes), (i+1)*predChunk)
		for j, v := range nodes[lo:hi] {
			dst[v] = pred[lo+j]
		}
	})
}

// lowerTo sets a to v if v is below it: the lowest failing batch, which
// lanes running batches side by side report.
func lowerTo(a *atomic.Int64, v int64) {
	for f := a.Load(); v < f && !a.CompareAndSwap(f, v); f = a.Load() {
	}
}
