package tcu

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// planCases are the models the device plans run: GCN, GIN with its batch
// norm, summing and averaging (its row scale from the host, as SAGE's),
// and SAGE.
var planCases = []struct{ name, kind, norm, aggr string }{
	{"gcn", layers.GCN, layers.NormNone, ""},
	{"gin", layers.GIN, layers.NormBatch, ""},
	{"gin-mean", layers.GIN, layers.NormBatch, layers.AggrMean},
	{"sage", layers.SAGE, layers.NormNone, ""},
}

// TestPlanOnDevice runs whole quantized models on the resident backend and
// on bmm's generic one: GCN, GIN with its batch norm (summing and
// averaging) and SAGE on Cora in
// four batches, at widths 1 to 8, every aggregation mode and both forms of
// the first product. The predictions and every logit agree bit for bit.
func TestPlanOnDevice(t *testing.T) {
	k := gpuKernel(t)
	ds, d := coraQuarters(t)
	for _, c := range planCases {
		for _, bits := range []int{1, 2, 4, 8} {
			m, in := coraModel(t, ds, d, c.kind, c.norm, c.aggr, bits)
			for _, agg := range []layers.AggMode{layers.AggAuto, layers.AggDense, layers.AggSparse} {
				for _, sparse := range []bool{false, true} {
					name := fmt.Sprintf("%s/bits=%d/agg=%v/sparse=%v", c.name, bits, agg, sparse)
					t.Run(name, func(t *testing.T) {
						be, err := NewBackend(k)
						require.NoError(t, err)
						defer be.Close()
						ref := bmm.NewGenericBackend()
						defer ref.Close()
						var runs [2]*layers.Result
						var logits [2][]float32
						for i, b := range []bmm.Backend{be, ref} {
							p, err := m.Compile(b)
							require.NoError(t, err)
							p.Agg = agg
							runs[i], err = p.Run(d, in, sparse, nil)
							require.NoError(t, err)
							logits[i], _, err = p.ForwardSparse(d.Eval[1], in, nil)
							require.NoError(t, err)
							require.NoError(t, p.Close())
						}
						require.Equal(t, runs[1].Pred, runs[0].Pred, "predictions")
						for j := range logits[1] {
							require.Equal(t, math.Float32bits(logits[1][j]), math.Float32bits(logits[0][j]), "logit %d", j)
						}
					})
				}
			}
		}
	}
}

// TestPlanReplayOnDevice runs resident plans four passes each: the first
// uploads, the second is recorded into a CUDA graph and the last two replay
// it with one launch. Every pass predicts what the generic backend does,
// and a replayed pass moves nothing up and only the predictions down.
func TestPlanReplayOnDevice(t *testing.T) {
	k := gpuKernel(t)
	ds, d := coraQuarters(t)
	for _, c := range planCases {
		for _, bits := range []int{1, 4} {
			m, in := coraModel(t, ds, d, c.kind, c.norm, c.aggr, bits)
			ref := bmm.NewGenericBackend()
			rp, err := m.Compile(ref)
			require.NoError(t, err)
			want, err := rp.Run(d, in, true, nil)
			require.NoError(t, err)
			require.NoError(t, rp.Close())
			require.NoError(t, ref.Close())
			for _, merge := range []layers.MergeMode{layers.MergeOn, layers.MergeOff} {
				for _, sparse := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/bits=%d/merge=%v/sparse=%v", c.name, bits, merge, sparse), func(t *testing.T) {
						be, err := NewBackend(k)
						require.NoError(t, err)
						defer be.Close()
						p, err := m.Compile(be)
						require.NoError(t, err)
						defer p.Close()
						p.Merge, p.Resident, p.Replay = merge, true, true
						for pass := range 4 {
							before := be.Profile()
							run, err := p.Run(d, in, sparse, nil)
							require.NoError(t, err)
							require.Equal(t, want.Pred, run.Pred, "pass %d", pass)
							require.Equal(t, pass > 0, run.Replayed, "pass %d replayed", pass)
							if pass > 1 {
								require.Equal(t, int64(0), run.Traffic.HostToDevice)
								require.Equal(t, int64(4*ds.Graph.N()), run.Traffic.DeviceToHost)
								require.Equal(t, int64(1), be.Profile().Sub(before).Launches, "one graph launch")
								require.Positive(t, run.Traffic.Ops)
							}
						}
					})
				}
			}
		}
	}
}

// coraQuarters is Cora in four batches of consecutive nodes.
func coraQuarters(t *testing.T) (*subgraph.Dataset, *layers.Data) {
	t.Helper()
	ds, err := subgraph.Load("cora")
	require.NoError(t, err)
	parts := make([]int32, ds.Graph.N())
	for v := range parts {
		parts[v] = int32(v * 4 / len(parts))
	}
	d, err := layers.NewData(ds, parts, 4, 1)
	require.NoError(t, err)
	return ds, d
}

// coraModel is a kind model (hidden 16, norm, bits wide) trained three fp32
// epochs on d and calibrated, with its quantized input.
func coraModel(t *testing.T, ds *subgraph.Dataset, d *layers.Data, kind, norm, aggr string, bits int) (*layers.Model, *layers.Input) {
	t.Helper()
	in, err := layers.QuantizeInput(ds.Features, bits)
	require.NoError(t, err)
	m, err := layers.NewModel(kind, ds.Features.Cols, 16, ds.NumClasses, 2, bits, bits, 3)
	require.NoError(t, err)
	require.NoError(t, m.SetNorm(norm))
	m.Aggr = aggr
	_, err = m.TrainFP32(d, in, layers.TrainConfig{Epochs: 3, LR: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, m.Calibrate(d, in, 0))
	return m, in
}

// TestPlanReplayUncoveredOnDevice: a replay over three of Cora's four
// batches scatters its predictions on the device into one array set to −1
// once; the left-out batch's nodes stay −1 in every replayed pass, as in
// the generic backend's plain pass, merged or batch by batch; each pass's
// result stays its own (the replays fill each pass's result directly).
func TestPlanReplayUncoveredOnDevice(t *testing.T) {
	k := gpuKernel(t)
	ds, d := coraQuarters(t)
	dd := *d
	dd.Eval = []*layers.Batch{d.Eval[3], d.Eval[0], d.Eval[2]}
	m, in := coraModel(t, ds, d, layers.GCN, layers.NormNone, "", 4)
	ref := bmm.NewGenericBackend()
	rp, err := m.Compile(ref)
	require.NoError(t, err)
	want, err := rp.Run(&dd, in, false, nil)
	require.NoError(t, err)
	require.NoError(t, rp.Close())
	require.NoError(t, ref.Close())
	require.Contains(t, want.Pred, int32(-1))
	for _, merge := range []layers.MergeMode{layers.MergeOn, layers.MergeOff} {
		t.Run(fmt.Sprintf("merge=%v", merge), func(t *testing.T) {
			be, err := NewBackend(k)
			require.NoError(t, err)
			defer be.Close()
			p, err := m.Compile(be)
			require.NoError(t, err)
			defer p.Close()
			p.Merge, p.Resident, p.Replay = merge, true, true
			var runs []*layers.Result
			for pass := range 4 {
				run, err := p.Run(&dd, in, false, nil)
				require.NoError(t, err)
				require.Equal(t, want.Pred, run.Pred, "pass %d", pass)
				require.Equal(t, pass > 0, run.Replayed, "pass %d replayed", pass)
				runs = append(runs, run)
			}
			for i, run := range runs { // a replay fills its own pass's result only
				require.Equal(t, want.Pred, run.Pred, "pass %d, after the later ones", i)
			}
		})
	}
}

// TestKernelProfileOnDevice: a resident plan run op by op with the
// kernels timed gives, per pass, one segment of the same kernels (every
// launch of the pass, each with a positive time, and its memsets); a
// replayed pass is one launch and is not timed kernel by kernel.
func TestKernelProfileOnDevice(t *testing.T) {
	k := gpuKernel(t)
	ds, d := coraQuarters(t)
	m, in := coraModel(t, ds, d, layers.GCN, layers.NormNone, "", 4)
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("replay=%v", replay), func(t *testing.T) {
			be, err := NewBackend(k)
			require.NoError(t, err)
			defer be.Close()
			p, err := m.Compile(be)
			require.NoError(t, err)
			defer p.Close()
			p.Merge, p.Resident, p.Replay = layers.MergeOn, true, replay
			_, err = p.Run(d, in, false, nil) // uploads
			require.NoError(t, err)
			_, err = p.Run(d, in, false, nil) // records, when replaying
			require.NoError(t, err)
			be.ProfileKernels(true)
			be.KernelSegments()
			var ops int64
			for range 5 {
				run, err := p.Run(d, in, false, nil)
				require.NoError(t, err)
				ops = run.Traffic.Ops
			}
			be.ProfileKernels(false)
			segs := be.KernelSegments()
			if replay {
				require.Empty(t, segs, "a replay is one launch")
				return
			}
			g := bmm.GroupKernels(segs)
			require.NotEmpty(t, g)
			require.Equal(t, 5, g[0].Segments)
			var launches int64
			for _, kt := range g[0].Kernels {
				require.Positive(t, kt.MS, "%s %s", kt.Op, kt.Kernel)
				require.NotEmpty(t, kt.Op)
				if kt.Kernel != "memset" {
					launches++
				}
			}
			require.Equal(t, ops, launches, "every launch of the pass timed")
			t.Logf("%+v", g[0])
		})
	}
}
