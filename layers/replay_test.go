package layers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// taping is the generic backend as a bmm.Recorder: while recording, ops
// are kept as closures and run at EndRecord and each Replay, which first
// clears the Argmax and ReadInts destinations, so a plan that reads them
// early or keeps stale ones fails.
type taping struct {
	bmm.Backend
	tape    []func() error
	dsts    [][]int32
	reads   []*[]int32 // ReadInts destinations, which ReplayInto may change
	on      bool
	replays int
	into    bool // EndRecord returns a bmm.ReplayerInto
}

type tape struct {
	t     *taping
	ops   []func() error
	reads []*[]int32
}

// tapeInto is a tape that replays into new ReadInts destinations.
type tapeInto struct{ *tape }

func (r tapeInto) ReplayInto(dsts ...[]int32) error {
	if len(dsts) != len(r.reads) {
		return fmt.Errorf("%d destinations for %d reads", len(dsts), len(r.reads))
	}
	for i, d := range dsts {
		if len(d) != len(*r.reads[i]) {
			return errors.New("destination of another length")
		}
		*r.reads[i] = d
	}
	return r.Replay()
}

func (t *taping) Record() error {
	if t.on {
		return errors.New("already recording")
	}
	t.on, t.tape, t.dsts, t.reads = true, nil, nil, nil
	return nil
}

func (t *taping) EndRecord() (bmm.Recording, error) {
	t.on = false
	r := &tape{t: t, ops: t.tape, reads: t.reads}
	if t.into {
		return tapeInto{r}, r.Replay()
	}
	return r, r.Replay()
}

func (r *tape) Replay() error {
	for _, d := range r.t.dsts {
		clear(d)
	}
	for _, d := range r.reads {
		clear(*d)
	}
	for _, op := range r.ops {
		if err := op(); err != nil {
			return err
		}
	}
	r.t.replays++
	return nil
}

func (r *tape) Ops() int64   { return int64(len(r.ops)) }
func (r *tape) Close() error { return nil }

// epi copies ep as the op is queued: a backend takes an op's parameters
// then (a plan reuses its Epi for the next batch).
func epi(ep *bmm.Epi) *bmm.Epi {
	if ep == nil {
		return nil
	}
	c := *ep
	return &c
}

func (t *taping) do(op func() error) error {
	if !t.on {
		return op()
	}
	t.tape = append(t.tape, op)
	return nil
}

var errTaped = errors.New("not while recording")

func (t *taping) UploadBits(x *bittensor.Tensor) (bmm.Bits, error) {
	if t.on {
		return nil, errTaped
	}
	return t.Backend.UploadBits(x)
}

func (t *taping) UploadVector(v []float32) (bmm.Vector, error) {
	if t.on {
		return nil, errTaped
	}
	return t.Backend.UploadVector(v)
}

func (t *taping) UploadGraph(g *bmm.Graph, src int) (bmm.GraphOperand, error) {
	if t.on {
		return nil, errTaped
	}
	return t.Backend.UploadGraph(g, src)
}

func (t *taping) ReadVector(dst []float32, v bmm.Vector) error {
	if t.on {
		return errTaped
	}
	return t.Backend.ReadVector(dst, v)
}

func (t *taping) MulBit(dst bmm.Bits, a, b bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.MulBit(dst, a, b, e, rq) })
}
func (t *taping) MulCodes(dst bmm.Codes, a, b bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.MulCodes(dst, a, b, e, rq) })
}
func (t *taping) MulFloat(dst bmm.Vector, a, b bmm.Bits, ep *bmm.Epi) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.MulFloat(dst, a, b, e) })
}
func (t *taping) AggBit(dst bmm.Bits, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.AggBit(dst, g, x, e, rq) })
}
func (t *taping) AggCodes(dst bmm.Codes, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.AggCodes(dst, g, x, e, rq) })
}
func (t *taping) AggFloat(dst bmm.Vector, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi) error {
	e := epi(ep)
	return t.do(func() error { return t.Backend.AggFloat(dst, g, x, e) })
}
func (t *taping) AddBit(dst bmm.Bits, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	return t.do(func() error { return t.Backend.AddBit(dst, x, y, relu, rq) })
}
func (t *taping) AddCodes(dst bmm.Codes, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	return t.do(func() error { return t.Backend.AddCodes(dst, x, y, relu, rq) })
}
func (t *taping) AddFloat(dst bmm.Vector, x, y bmm.Vector, relu bool) error {
	return t.do(func() error { return t.Backend.AddFloat(dst, x, y, relu) })
}
func (t *taping) RowSums(dst bmm.Vector, a bmm.Bits) error {
	return t.do(func() error { return t.Backend.RowSums(dst, a) })
}
func (t *taping) Argmax(dst []int32, logits bmm.Vector, cols int) error {
	if t.on {
		t.dsts = append(t.dsts, dst)
	}
	return t.do(func() error { return t.Backend.Argmax(dst, logits, cols) })
}

func (t *taping) UploadIndex(idx []int32, bound int) (bmm.Index, error) {
	if t.on {
		return nil, errTaped
	}
	return t.Backend.UploadIndex(idx, bound)
}

func (t *taping) NewInts(n int, fill int32) (bmm.Ints, error) {
	if t.on {
		return nil, errTaped // a fill recorded would run at every replay
	}
	return t.Backend.NewInts(n, fill)
}

func (t *taping) ArgmaxTo(dst bmm.Ints, at bmm.Index, logits bmm.Vector, cols int) error {
	return t.do(func() error { return t.Backend.ArgmaxTo(dst, at, logits, cols) })
}

func (t *taping) ReadInts(dst []int32, v bmm.Ints) error {
	if !t.on {
		return t.Backend.ReadInts(dst, v)
	}
	slot := &dst
	t.reads = append(t.reads, slot)
	return t.do(func() error { return t.Backend.ReadInts(*slot, v) })
}

// TestPlanReplay: a resident plan with Replay records its second pass and
// replays it from then on; every pass predicts what a plain plan does, over
// batches run merged and one by one, from sparse and packed features. A
// plan that is not resident never records.
func TestPlanReplay(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		m, d, in := unequalData(t, kind, 4, 4, false)
		ref := bmm.NewGenericBackend()
		rp, err := m.Compile(ref)
		require.NoError(t, err)
		want, err := rp.Run(d, in, true, nil)
		require.NoError(t, err)
		require.NoError(t, rp.Close())
		for _, merge := range []MergeMode{MergeOn, MergeOff} {
			for _, sparse := range []bool{false, true} {
				for _, resident := range []bool{true, false} {
					t.Run(fmt.Sprintf("%s/merge=%v/sparse=%v/resident=%v", kind, merge, sparse, resident), func(t *testing.T) {
						be := &taping{Backend: bmm.NewGenericBackend()}
						p, err := m.Compile(be)
						require.NoError(t, err)
						p.Merge, p.Resident, p.Replay = merge, resident, true
						for pass := range 4 {
							run, err := p.Run(d, in, sparse, nil)
							require.NoError(t, err)
							require.Equal(t, want.Pred, run.Pred, "pass %d", pass)
							require.Equal(t, resident && pass > 0, run.Replayed, "pass %d", pass)
							if run.Replayed {
								require.Zero(t, run.Traffic.HostToDevice)
							}
						}
						want := 0
						if resident {
							want = 3
						}
						require.Equal(t, want, be.replays)
						require.NoError(t, p.Close())
						require.NoError(t, be.Close())
					})
				}
			}
		}
	}
}

// TestPlanReplayUncovered: a replay scatters its predictions on the
// backend into one graph-sized array set to −1 once. With a batch left
// out, its nodes stay −1 in every replayed pass; with a batch twice in a
// merged pass (a node twice in one index, which the backend refuses) the
// replay scatters on the host. Either way every pass predicts what a
// plain plan does.
func TestPlanReplayUncovered(t *testing.T) {
	m, d, in := unequalData(t, GCN, 4, 4, false)
	for _, c := range []struct {
		name  string
		eval  []*Batch
		merge MergeMode
	}{
		{"gap/merged", []*Batch{d.Eval[0], d.Eval[2]}, MergeOn},
		{"gap/batches", []*Batch{d.Eval[2], d.Eval[0]}, MergeOff},
		{"twice/merged", []*Batch{d.Eval[1], d.Eval[1]}, MergeOn},
		{"twice/batches", []*Batch{d.Eval[1], d.Eval[1]}, MergeOff},
	} {
		for _, into := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/into=%v", c.name, into), func(t *testing.T) {
				testReplayUncovered(t, m, d, in, c.eval, c.merge, c.name != "twice/merged", into)
			})
		}
	}
}

// testReplayUncovered runs 4 passes of eval on a taping backend (a
// bmm.ReplayerInto with into), each predicting what a plain plan does,
// and checks whether the scatter ran on the backend.
func testReplayUncovered(t *testing.T, m *Model, d *Data, in *Input, eval []*Batch, merge MergeMode, onBackend, into bool) {
	dd := *d
	dd.Eval = eval
	ref := bmm.NewGenericBackend()
	rp, err := m.Compile(ref)
	require.NoError(t, err)
	want, err := rp.Run(&dd, in, false, nil)
	require.NoError(t, err)
	require.NoError(t, rp.Close())
	require.Contains(t, want.Pred, int32(-1), "some node in no batch")
	be := &taping{Backend: bmm.NewGenericBackend(), into: into}
	p, err := m.Compile(be)
	require.NoError(t, err)
	p.Merge, p.Resident, p.Replay = merge, true, true
	var runs []*Result
	for pass := range 4 {
		run, err := p.Run(&dd, in, false, nil)
		require.NoError(t, err)
		require.Equal(t, want.Pred, run.Pred, "pass %d", pass)
		require.Equal(t, pass > 0, run.Replayed, "pass %d", pass)
		runs = append(runs, run)
	}
	for i, run := range runs {
		require.Equal(t, want.Pred, run.Pred, "pass %d, after the later passes: its own predictions", i)
	}
	require.Equal(t, 3, be.replays)
	require.Equal(t, onBackend, p.replay.dst != nil, "scattered on the backend")
	require.NoError(t, p.Close())
	require.NoError(t, be.Close())
}
