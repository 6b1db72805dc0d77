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
	preds   [][]int32 // the recording's Argmax destinations, per batch
	outs    []pooled  // the ops' outputs, out of the pool while recorded
	stats   Stats
	edges   int // batches aggregated over edge lists
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
	} else if err := p.replay.rec.Replay(); err != nil {
		return true, err
	}
	rp := p.replay
	for i, b := range rp.batches {
		scatterPred(r.Pred, b.Nodes, rp.preds[i])
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
	if err := rec.Record(); err != nil {
		return nil, err
	}
	rp := &replayed{key: key}
	var sx *Input
	if sparse {
		sx = in
	}
	err := func() error {
		for _, b := range batches {
			k := keptKey{b, in, sparse}
			ps, err := p.pass(b, nil, sx, nil, &k)
			if err == nil {
				pred := make([]int32, b.N())
				if err = p.Backend.Argmax(pred, ps.logits(), p.Model.Classes); err == nil {
					rp.batches, rp.preds = append(rp.batches, b), append(rp.preds, pred)
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

func (p *Plan) returnOuts(rp *replayed) {
	for _, o := range rp.outs {
		p.pool.put(o)
	}
	rp.outs = nil
}
