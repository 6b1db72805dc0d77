package layers

import (
	"errors"

	"github.com/qgtc/qgtc/bmm"
)

// replayed is a resident plan's pass recorded on its backend
// (bmm.Recorder): later passes over the same batches replay it.
type replayed struct {
	key     replayKey
	rec     bmm.Recording
	batches []*Batch
	// dst holds every node's prediction on the backend, −1 outside the
	// batches (set once: every replay writes the same nodes), where each
	// batch's argmax scatters (ArgmaxTo); all is the recording's one
	// ReadInts of it (until a bmm.ReplayerInto replays into each pass's
	// result instead). Without them (a node in two batches of a merged
	// pass, whose index the backend refuses), preds are the recording's
	// Argmax destinations, per batch, scattered on the host.
	dst   bmm.Ints
	all   []int32
	preds [][]int32
	outs  []pooled // the ops' outputs, out of the pool while recorded
	stats Stats
	edges int // batches aggregated over edge lists
}

// replayKey names what a recording ran: the batches and the features.
type replayKey struct {
	d      *Data
	first  *Batch
	n      int
	in     *Input
	sparse bool
	merged bool
}

// recorder is the plan's backend as a Recorder when the plan replays.
func (p *Plan) recorder() bmm.Recorder {
	if !p.Resident || !p.Replay || p.replayOff {
		return nil
	}
	r, _ := p.Backend.(bmm.Recorder)
	return r
}

// replayRun runs batches from a recording, recording them first when every
// batch's uploads are kept (the pass after the first). It reports false
// when this pass runs the ordinary way.
func (p *Plan) replayRun(r *Result, batches []*Batch, key replayKey, in *Input, sparse bool) (bool, error) {
	rec := p.recorder()
	if rec == nil {
		return false, nil
	}
	if p.replay != nil && p.replay.key != key {
		p.dropReplay()
	}
	if p.replay == nil {
		for _, b := range batches {
			if p.kept[keptKey{b, in, sparse}] == nil {
				return false, nil
			}
		}
		rp, err := p.record(rec, batches, key, in, sparse)
		if err != nil {
			// A pass the backend cannot record runs the ordinary way from now on.
			p.replayOff = true
			return false, nil
		}
		p.replay = rp
		if rp.all != nil {
			copyPred(r.Pred, rp.all)
		}
	} else if ri, ok := p.replay.rec.(bmm.ReplayerInto); ok && p.replay.all != nil {
		// The predictions straight into this pass's result: no copy between.
		if err := ri.ReplayInto(r.Pred); err != nil {
			return true, err
		}
	} else {
		if err := p.replay.rec.Replay(); err != nil {
			return true, err
		}
		if p.replay.all != nil {
			copyPred(r.Pred, p.replay.all)
		}
	}
	rp := p.replay
	if rp.all == nil {
		fillPred(r.Pred)
		for i, b := range rp.batches {
			scatterPred(r.Pred, b.Nodes, rp.preds[i])
		}
	}
	for _, b := range rp.batches {
		r.Nodes += b.N()
	}
	r.Stats.InterBytes += rp.stats.InterBytes
	r.Stats.UnfusedBytes += rp.stats.UnfusedBytes
	r.EdgeListBatches += rp.edges
	r.Replayed = true
	return true, nil
}

// record records one pass over batches and runs it.
func (p *Plan) record(rec bmm.Recorder, batches []*Batch, key replayKey, in *Input, sparse bool) (*replayed, error) {
	rp := &replayed{key: key}
	// The nodes go up, and the predictions are set to −1, before
	// recording: neither is part of a replay.
	idx, _ := p.nodeIndexes(batches, key.d.Graph.N()) // without, the host scatters
	if idx != nil {
		var err error
		if rp.dst, err = p.Backend.NewInts(key.d.Graph.N(), -1); err != nil {
			return nil, err
		}
		rp.all = make([]int32, key.d.Graph.N())
	}
	if err := rec.Record(); err != nil {
		p.returnOuts(rp)
		return nil, err
	}
	var sx *Input
	if sparse {
		sx = in
	}
	err := func() error {
		for i, b := range batches {
			k := keptKey{b, in, sparse}
			ps, err := p.pass(b, nil, sx, nil, &k)
			if err == nil {
				if idx != nil {
					err = p.Backend.ArgmaxTo(rp.dst, idx[i], ps.logits(), p.Model.Classes)
				} else {
					pred := make([]int32, b.N())
					err = p.Backend.Argmax(pred, ps.logits(), p.Model.Classes)
					rp.preds = append(rp.preds, pred)
				}
				if err == nil {
					rp.batches = append(rp.batches, b)
					rp.stats.InterBytes += ps.st.InterBytes
					rp.stats.UnfusedBytes += ps.st.UnfusedBytes
					if ps.edges {
						rp.edges++
					}
				}
			}
			rp.outs, ps.pooled = append(rp.outs, ps.pooled...), nil
			ps.release()
			if err != nil {
				return err
			}
		}
		if idx != nil {
			return p.Backend.ReadInts(rp.all, rp.dst)
		}
		return nil
	}()
	r, endErr := rec.EndRecord()
	if err = errors.Join(err, endErr); err != nil {
		if r != nil {
			_ = r.Close()
		}
		p.returnOuts(rp)
		return nil, err
	}
	rp.rec = r
	return rp, nil
}

// dropReplay closes the recording and gives its outputs back to the pool.
func (p *Plan) dropReplay() {
	if p.replay == nil {
		return
	}
	_ = p.replay.rec.Close()
	p.returnOuts(p.replay)
	p.replay = nil
}

// returnOuts gives a recording's outputs back to the pool and frees its
// predictions.
func (p *Plan) returnOuts(rp *replayed) {
	for _, o := range rp.outs {
		p.pool.put(o)
	}
	rp.outs = nil
	if rp.dst != nil {
		rp.dst.Free()
		rp.dst = nil
	}
}

// nodeIndexes returns each batch's nodes as an index on the backend
// (nodeIndex); nil where the backend refuses one (the pass then scatters
// on the host), with the error of a failed upload.
func (p *Plan) nodeIndexes(batches []*Batch, n int) ([]bmm.Index, error) {
	idx := make([]bmm.Index, len(batches))
	for i, b := range batches {
		ix, err := p.nodeIndex(b, n)
		if err != nil || ix == nil {
			return nil, err
		}
		idx[i] = ix
	}
	return idx, nil
}
