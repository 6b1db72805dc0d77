package layers

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// A Resident is one device's share of a packed stream's batches with their
// inputs kept on its backend (KeepPackedStream): a serving process's later
// passes over a graph that fits the devices read no file, prepare nothing
// and upload nothing; only the predictions come back.
type Resident struct {
	p      *Plan
	sparse bool
	// batches are shells: each kept batch's global ids (its predictions'
	// places) and feature scales, no adjacency or features on the host.
	batches []*Batch
	nodes   int
	dst     bmm.Ints // every prediction of the share, at its batch's offset
	host    []int32
	offs    []int // each batch's offset in dst, and the share's end
}

// Batches is the number of batches the share keeps.
func (r *Resident) Batches() int { return len(r.batches) }

// keptShell is what a resident plan needs of b once its inputs are kept:
// nodes, its global ids (copied: a packed loader's may be file views),
// and the feature scales a normalizing model checks for.
func (b *Batch) keptShell(nodes []int32, edges bool) *Batch {
	s := &Batch{Nodes: slices.Clone(nodes), edgesOnly: edges, keptAdj: !edges}
	if b.FeatScale != nil {
		s.FeatScale = slices.Clone(b.FeatScale)
	}
	return s
}

// add runs pp as the stream's sink runs it, its inputs kept under a shell
// of the batch.
func (r *Resident) add(pp *PreparedBatch, pred []int32, sink *predSink) error {
	p := r.p
	shell := pp.b.keptShell(pp.nodes, p.edges(pp.b))
	key := keptKey{shell, nil, r.sparse}
	before := p.Backend.Traffic()
	if err := sink.run(pp, pred, &key); err != nil {
		if in := p.kept[key]; in != nil {
			in.free()
			delete(p.kept, key)
		}
		return fmt.Errorf("keeping batch %d of %s (%d nodes kept): %w", len(r.batches), p.Backend.Name(), r.nodes, err)
	}
	if p.kept[key] == nil {
		return fmt.Errorf("%w: %s kept no inputs of a batch", ErrModel, p.Backend.Name())
	}
	r.batches = append(r.batches, shell)
	r.nodes += shell.N()
	if p.Backend.Traffic().Sub(before).HostToDevice == 0 {
		// The backend reads the host's arrays in place, and a stream's
		// arrays are reused by the next batches.
		return fmt.Errorf("%w: %s reads its inputs in place: nothing to keep resident", ErrModel, p.Backend.Name())
	}
	return nil
}

// run runs the share's batches from their kept inputs and writes their
// predictions into pred at the batches' global ids.
func (r *Resident) run(pred []int32) error {
	p := r.p
	if len(r.batches) == 0 {
		return nil
	}
	at := p.Backend.(bmm.ArgmaxAter) // KeepPackedStream checked
	if err := r.alloc(); err != nil {
		return err
	}
	for i, b := range r.batches {
		key := keptKey{b, nil, r.sparse}
		ps, err := p.pass(b, nil, nil, nil, &key)
		if err == nil {
			err = at.ArgmaxAt(r.dst, r.offs[i], ps.logits(), p.Model.Classes)
		}
		ps.release()
		p.pool.trimUnused()
		if err != nil {
			return err
		}
	}
	if err := p.Backend.ReadInts(r.host, r.dst); err != nil {
		return err
	}
	par.For(len(r.batches), min(runtime.GOMAXPROCS(0), 8), func(i int) {
		for k, v := range r.batches[i].Nodes {
			pred[v] = r.host[r.offs[i]+k]
		}
	})
	return nil
}

// alloc makes the share's predictions on the backend and on the host,
// once: KeepPackedStream's pass does, so that the first pass from the
// devices' memory is not the one that allocates (and first touches,
// on the cores) a prediction per node.
func (r *Resident) alloc() error {
	if r.dst != nil || len(r.batches) == 0 {
		return nil
	}
	var err error
	if r.dst, err = r.p.Backend.NewInts(r.nodes, -1); err != nil {
		return err
	}
	r.host = make([]int32, r.nodes)
	r.offs = make([]int, len(r.batches)+1)
	for i, b := range r.batches {
		r.offs[i+1] = r.offs[i] + b.N()
	}
	const chunk = 1 << 20
	par.For((len(r.host)+chunk-1)/chunk, min(runtime.GOMAXPROCS(0), 8), func(c int) {
		clear(r.host[c*chunk : min(len(r.host), (c+1)*chunk)])
	})
	return nil
}

// Free frees the share's kept inputs and predictions.
func (r *Resident) Free() {
	if r == nil {
		return
	}
	for _, b := range r.batches {
		key := keptKey{b, nil, r.sparse}
		if in := r.p.kept[key]; in != nil {
			in.free()
			delete(r.p.kept, key)
		}
	}
	r.batches, r.nodes = nil, 0
	if r.dst != nil {
		r.dst.Free()
		r.dst = nil
	}
}

// RunResident runs every share on its device at once (a pass over the
// batches KeepPackedStream kept) and writes the predictions into pred at
// the batches' global ids; it returns each device's time. The first
// failing device's error is returned.
func RunResident(shares []*Resident, pred []int32) ([]time.Duration, error) {
	took := make([]time.Duration, len(shares))
	errs := make([]error, len(shares))
	var wg sync.WaitGroup
	for d, r := range shares {
		wg.Go(func() {
			t0 := time.Now()
			errs[d] = r.run(pred)
			took[d] = time.Since(t0)
		})
	}
	wg.Wait()
	for d, err := range errs {
		if err != nil {
			return took, fmt.Errorf("device %d (%s): %w", d, shares[d].p.Backend.Name(), err)
		}
	}
	return took, nil
}
