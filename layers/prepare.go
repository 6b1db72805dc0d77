package layers

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// Prepare does ahead of Run what Run's first pass over d would otherwise
// do inside its timing and keep for the passes after: the merged batch,
// the feature lists of a sparse first product, and, on a backend whose
// operands are host memory, every graph those passes aggregate over
// (batch edge lists and feature lists), checked once and kept by the plan.
// Batches are prepared side by side on the backend's forks. Run gives the
// same results with or without it; a caller that times Run reports
// Prepare's time apart (the one-time setup of a serving process).
func (p *Plan) Prepare(d *Data, in *Input, sparse bool) error {
	if p.closed || len(d.Eval) == 0 {
		return nil
	}
	if in.Params != p.Model.Input {
		return fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, in.Params, p.Model.Input)
	}
	if sparse {
		if err := p.checkInput(in); err != nil {
			return err
		}
	}
	// Only a backend on host memory has its graphs kept by the plan; a
	// device's passes upload their own (and it is left as it was).
	before := p.Backend.Traffic()
	probe, err := p.Backend.UploadGraph(&bmm.Graph{Indptr: []int32{0}}, 0)
	if err != nil {
		return nil
	}
	probe.Free()
	if t := p.Backend.Traffic().Sub(before); t.HostToDevice != 0 || t.DeviceToHost != 0 {
		return nil
	}
	batches := d.Eval
	if p.merges(d) {
		batches = []*Batch{p.mergedBatch(d)}
	}
	type upload struct {
		key graphKey
		g   *bmm.Graph
		src int
	}
	// graphsOf lists b's graphs as the pass uploads them (the feature
	// lists first), making the lists as q, the plan or a lane, would.
	graphsOf := func(q *Plan, b *Batch) []upload {
		var ups []upload
		if sparse {
			q.packLists(b, in)
			if g := q.sparseLists(b, in); g != nil {
				ups = append(ups, upload{graphKey{b: b, in: in}, g, in.Cols})
			}
		}
		if !p.edges(b) {
			return ups
		}
		for _, op := range p.ops {
			if op.kind != qAgg || p.params[op.in[0]].Bits > 8 {
				continue
			}
			g := &b.Edges
			if op.nbr {
				g = &b.neighbours().Edges
			}
			k := graphKey{b: b, nbr: op.nbr}
			if !slices.ContainsFunc(ups, func(u upload) bool { return u.key == k }) {
				ups = append(ups, upload{k, g, b.N()})
			}
		}
		return ups
	}
	rest := batches
	lanes := p.laneCount(len(rest))
	if lanes > 1 && !p.disjointOK(d) {
		lanes = 1 // Run takes the serial loop too
	}
	if lanes < 2 { // as Run: one batch (merged) checked on every core, or the serial loop
		for _, b := range rest {
			for _, u := range graphsOf(p, b) {
				if p.graphs[u.key] != nil {
					continue
				}
				o, err := p.Backend.UploadGraph(u.g, u.src)
				if err != nil {
					return fmt.Errorf("layers: uploading a graph: %w", err)
				}
				p.keepGraph(u.key, o)
			}
			if err := p.fillPool(b, in, sparse); err != nil {
				return err
			}
		}
		return nil
	}
	// Side by side: each lane's fork checks whole batches (operands made
	// on a fork are the root's), and the plan keeps them.
	type made struct {
		key graphKey
		o   bmm.GraphOperand
	}
	lps, err := p.lanesUpTo(lanes)
	if err != nil {
		return err
	}
	out := make([][]made, len(rest))
	errs := make([]error, len(rest))
	var next atomic.Int64
	par.Run(lanes, func(w int) {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(rest) {
				return
			}
			for _, u := range graphsOf(lps[w], rest[i]) {
				o, err := lps[w].Backend.UploadGraph(u.g, u.src)
				if err != nil {
					errs[i] = fmt.Errorf("layers: uploading a graph: %w", err)
					break
				}
				out[i] = append(out[i], made{u.key, o})
			}
		}
	})
	// Each lane's outputs for its own share of the batches, which Run
	// gives it first (runLanes).
	poolErrs := make([]error, lanes)
	par.Run(lanes, func(w int) {
		for _, b := range rest[w*len(rest)/lanes : (w+1)*len(rest)/lanes] {
			if poolErrs[w] = lps[w].fillPool(b, in, sparse); poolErrs[w] != nil {
				return
			}
		}
	})
	var failed error // the first batch's error, as Run would report it
	for i := range out {
		for _, m := range out[i] {
			if failed != nil || p.graphs[m.key] != nil {
				m.o.Free()
				continue
			}
			p.keepGraph(m.key, m.o)
		}
		if failed == nil {
			failed = errs[i]
		}
	}
	return cmp.Or(failed, cmp.Or(poolErrs...))
}

// keepGraph keeps o, a host graph operand, as the plan's graph key.
func (p *Plan) keepGraph(key graphKey, o bmm.GraphOperand) {
	if p.graphs == nil {
		p.graphs = map[graphKey]bmm.GraphOperand{}
	}
	p.graphs[key] = o
}

// fillPool puts into p's pool the outputs a pass over b takes from it
// (as pass.op and pass.rowSums ask for them), and sizes p's prediction
// buffer for b, so that the first pass finds them made as later ones do.
func (p *Plan) fillPool(b *Batch, in *Input, sparse bool) error {
	ps := &pass{p: p, b: b, edges: p.edges(b), batchIn: &batchIn{}}
	ps.sparseFirst = sparse && p.sparseLists(b, in) != nil
	n := b.N()
	sums := map[int]bool{}
	for i := range p.ops {
		op := &p.ops[i]
		f := ps.need(i + 1)
		if i < len(p.ops)-1 && !f.any() {
			continue
		}
		if op.kind == qLin && !ps.sparseOp(i) && !sums[op.in[0]] {
			sums[op.in[0]] = true
			if _, err := ps.vector(n); err != nil {
				return err
			}
		}
		width := p.widths[i+1]
		if op.out == nil {
			if _, err := ps.vector(n * width); err != nil {
				return err
			}
			continue
		}
		bits := op.out.Bits
		if f.rows {
			if _, err := ps.bits(n, width, bits, bittensor.ByRows); err != nil {
				return err
			}
		}
		if f.cols {
			if _, err := ps.bits(n, width, bits, bittensor.ByCols); err != nil {
				return err
			}
		}
		if f.codes {
			if _, err := ps.codes(n, width, bits); err != nil {
				return err
			}
		}
	}
	for _, o := range ps.pooled {
		p.pool.put(o)
	}
	if cap(p.pred) < n {
		p.pred = make([]int32, n)
	}
	return nil
}
