package gpufp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/layers/fp"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/qgtc/qgtc/tcu"
)

// synthData is a small planted-partition graph (k communities, the
// classes; a fifth of the edges between them, average degree 8) with
// planted features that hint at the class (subgraph.PlantedFeatures):
// dense (a fifth of the columns per node, stored dense) or sparse (4 per
// node, stored as CSR), split 20/20/60 by node id.
func synthData(t testing.TB, n, k, f int, dense bool, seed uint64) *fp.Data {
	g, labels, err := subgraph.PlantedPartition(n, k, 8, 0.2, seed)
	require.NoError(t, err)
	nnz := 4
	if dense {
		nnz = max(1, f/5)
	}
	feat, err := subgraph.PlantedFeatures(labels, k, f, nnz, seed)
	require.NoError(t, err)
	ds := &subgraph.Dataset{Name: "synth", Graph: g, Features: feat, Labels: labels, NumClasses: k}
	for v := range n {
		switch {
		case v < n/5:
			ds.Train = append(ds.Train, int32(v))
		case v < 2*n/5:
			ds.Val = append(ds.Val, int32(v))
		default:
			ds.Test = append(ds.Test, int32(v))
		}
	}
	d, err := fp.NewData(ds, true)
	require.NoError(t, err)
	require.Equal(t, !dense, d.Input.X.Sparse != nil, "feature storage")
	return d
}

// The configurations on the device, three layers so that a middle layer
// (ReLU, dropout and the gradient through both) is covered.
var deviceConfigs = []fp.Config{
	{Model: "gcn", Hidden: 16, Layers: 3, Dropout: 0.5},
	{Model: "sage", Hidden: 16, Layers: 3, Dropout: 0.5},
	{Model: "gin", Hidden: 16, Layers: 3, Dropout: 0.5},
	// GAT: ELU between layers, attention dropout, averaged output heads.
	{Model: "gat", Hidden: 16, Heads: 4, OutHeads: 2, Layers: 3, Dropout: 0.5, AttnDropout: 0.3},
	{Model: "gcn", Hidden: 16, Layers: 2},
	{Model: "gat", Hidden: 16, Heads: 1, Layers: 2},
}

func TestSupported(t *testing.T) {
	for _, c := range []struct {
		cfg fp.Config
		ok  bool
	}{
		{fp.Config{Model: "gcn"}, true}, {fp.Config{Model: "sage", Aggr: "mean"}, true}, {fp.Config{Model: "gin", Norm: "none"}, true},
		{fp.Config{Model: "gat"}, true}, {fp.Config{Model: "sage", Aggr: "max"}, false}, {fp.Config{Model: "gin", Norm: "batch"}, false},
	} {
		err := Supported(c.cfg)
		if c.ok {
			assert.NoError(t, err, "%+v", c.cfg)
		} else {
			assert.ErrorIs(t, err, ErrUnsupported, "%+v", c.cfg)
		}
	}
}

// Unsupported models and modes are refused before the device is touched
// (there is none here: a nil device would crash).
func TestTrainRefuses(t *testing.T) {
	d := synthData(t, 40, 2, 10, true, 1)
	sage, err := fp.New(fp.Config{Model: "sage", Aggr: "max", In: 10, Hidden: 8, Out: 2, Layers: 2}, 1)
	require.NoError(t, err)
	_, err = Train(nil, sage, d, fp.TrainConfig{Epochs: 1, LR: 0.01})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "max")
	gcn, err := fp.New(fp.Config{Model: "gcn", In: 10, Hidden: 8, Out: 2, Layers: 2}, 1)
	require.NoError(t, err)
	_, err = Train(nil, gcn, d, fp.TrainConfig{Epochs: 1, LR: 0.01, Clusters: 4})
	assert.ErrorIs(t, err, ErrUnsupported)
	_, err = Train(nil, gcn, d, fp.TrainConfig{Epochs: 0, LR: 0.01})
	assert.ErrorIs(t, err, fp.ErrConfig)
	_, err = Evaluate(nil, sage, d)
	assert.ErrorIs(t, err, ErrUnsupported)
}

var (
	devOnce sync.Once
	dev     *tcu.Device
	devErr  error
)

func device(t *testing.T) *tcu.Device {
	if testing.Short() {
		t.Skip("GPU tests are not short")
	}
	devOnce.Do(func() {
		dev, devErr = tcu.Open(0)
		if devErr == nil {
			fmt.Fprintf(os.Stderr, "gpufp: %v\n", dev.Info())
		}
	})
	if errors.Is(devErr, tcu.ErrUnavailable) {
		t.Skipf("no GPU: %v", devErr)
	}
	require.NoError(t, devErr)
	return dev
}

// gradients runs one training forward and backward pass on the device
// (no Adam) with dropout seeds from rng and returns the loss and each
// parameter's gradient.
func (t *Trainer) gradients(rng *rand.Rand) (float64, map[string][]float32, error) {
	for _, s := range t.sites {
		seed := rng.Uint64()
		if err := s.fwd.SetSeed(seed); err != nil {
			return 0, nil, err
		}
		if s.bwd != nil {
			if err := s.bwd.SetSeed(seed); err != nil {
				return 0, nil, err
			}
		}
	}
	calls := append([]*tcu.FPCall{t.zero}, t.fwdTrain...)
	if err := t.d.RunCalls(append(append(calls, t.xent), t.back...)...); err != nil {
		return 0, nil, err
	}
	sum, err := readDoubles(t.loss, 1)
	if err != nil {
		return 0, nil, err
	}
	flat := make([]float32, t.nP)
	if err := t.G.Read(bytesOf(flat)); err != nil {
		return 0, nil, err
	}
	gs := map[string][]float32{}
	for _, p := range t.params {
		gs[p.Name] = flat[:len(p.Data)]
		flat = flat[len(p.Data):]
	}
	return float64(float32(sum[0] / float64(t.nTrain))), gs, nil
}

// TestGradients: the device's loss and every parameter's gradient after
// one training pass equal internal/nn's on the same model, input and
// dropout seeds (the same masks), within float32 rounding of reordered
// sums, for each model on dense and on sparse features.
func TestGradients(t *testing.T) {
	d := device(t)
	for _, dense := range []bool{true, false} {
		data := synthData(t, 300, 4, 120, dense, 7)
		for _, c := range deviceConfigs {
			t.Run(fmt.Sprintf("%s_layers%d_p%v_dense%v", c.Model, c.Layers, c.Dropout, dense), func(t *testing.T) {
				c.In, c.Out = data.Input.X.Cols, data.NumClasses
				m, err := fp.New(c, 3)
				require.NoError(t, err)
				tr, err := New(d, m, data, &Optim{LR: 0.01})
				require.NoError(t, err)
				defer tr.Close()
				loss, got, err := tr.gradients(rand.New(rand.NewPCG(5, 5)))
				require.NoError(t, err)

				tp := nn.NewTape(true, rand.New(rand.NewPCG(5, 5)))
				want := tp.CrossEntropy(m.Forward(tp, data.Input), data.Labels, data.Train)
				tp.Backward(want)
				assert.InDelta(t, float64(want.Data[0]), loss, 1e-5*math.Max(1, float64(want.Data[0])), "loss")
				for _, p := range m.Params() {
					require.NotNil(t, p.Grad, p.Name)
					g := got[p.Name]
					require.Len(t, g, len(p.Grad), p.Name)
					var top float64
					for _, v := range p.Grad {
						top = math.Max(top, math.Abs(float64(v)))
					}
					require.Positive(t, top, "%s: a gradient that is all zero checks nothing", p.Name)
					bad := 0
					for i := range g {
						if math.Abs(float64(g[i]-p.Grad[i])) > 1e-4*top {
							if bad < 3 {
								t.Errorf("%s[%d] = %g, nn has %g (largest %g)", p.Name, i, g[i], p.Grad[i], top)
							}
							bad++
						}
					}
					assert.Zero(t, bad, "%s: values off", p.Name)
				}
			})
		}
	}
}

// TestTrainMatchesCPU trains each model on the device and on the CPU from
// the same initialization and seeds (the same dropout masks): the first
// epochs' losses agree closely, the accuracies within a few nodes, the
// evaluation of the trained model on the device equals fp.Evaluate's, and
// the weights came back into the model.
func TestTrainMatchesCPU(t *testing.T) {
	d := device(t)
	data := synthData(t, 400, 4, 120, false, 9)
	for _, c := range deviceConfigs[:4] {
		t.Run(c.Model, func(t *testing.T) {
			c.In, c.Out = data.Input.X.Cols, data.NumClasses
			var cpuLoss, gpuLoss []float64
			run := func(gpu bool) (fp.Model, *fp.Result) {
				m, err := fp.New(c, 11)
				require.NoError(t, err)
				tc := fp.TrainConfig{Epochs: 60, LR: 0.01, WeightDecay: 5e-4, Seed: 3}
				losses := &cpuLoss
				if gpu {
					losses = &gpuLoss
				}
				tc.Progress = func(e fp.EpochStats) { *losses = append(*losses, e.Loss) }
				var res *fp.Result
				if gpu {
					res, err = Train(d, m, data, tc)
				} else {
					res, err = fp.Train(m, data, tc)
				}
				require.NoError(t, err)
				return m, res
			}
			mc, rc := run(false)
			mg, rg := run(true)
			require.Len(t, gpuLoss, len(cpuLoss))
			for e := range 5 {
				assert.InDelta(t, cpuLoss[e], gpuLoss[e], 1e-3*math.Max(1, cpuLoss[e]), "epoch %d loss", e+1)
			}
			assert.Greater(t, rg.TestAcc, 0.7)
			assert.InDelta(t, rc.TestAcc, rg.TestAcc, 0.03)
			assert.InDelta(t, rc.ValAcc, rg.ValAcc, 0.03)
			// The trained weights are in the model: the CPU evaluates them as the device did.
			ev, err := Evaluate(d, mg, data)
			require.NoError(t, err)
			cpu := fp.Evaluate(mg, data)
			assert.Equal(t, cpu.TestAcc, ev.TestAcc)
			assert.Equal(t, cpu.ValAcc, ev.ValAcc)
			assert.InDelta(t, cpu.ValLoss, ev.ValLoss, 1e-5*math.Max(1, cpu.ValLoss))
			assert.Equal(t, rg.TestAcc, ev.TestAcc, "Train's best parameters are the model's")
			init, err := fp.New(c, 11)
			require.NoError(t, err)
			assert.NotEqual(t, init.Params()[0].Data, mg.Params()[0].Data, "trained weights came back")
			assert.NotEqual(t, mc.Params()[0].Data, mg.Params()[0].Data, "two trainings, not one model twice")
		})
	}
}
