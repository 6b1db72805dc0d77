package fp

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthData is a graph of k communities with features that hint at the
// community: learnable, but not from the features alone.
func synthData(t testing.TB, n, k, f int, seed uint64) *Data {
	r := rand.New(rand.NewPCG(seed, 1))
	labels := make([]int32, n)
	for v := range labels {
		labels[v] = int32(v % k)
	}
	var src, dst []int32
	for v := range n {
		for range 4 {
			u := r.IntN(n)
			if r.Float64() < 0.8 { // same community
				u = (u/k)*k + v%k
				if u >= n {
					u -= k
				}
			}
			src, dst = append(src, int32(v)), append(dst, int32(u))
		}
	}
	g, err := subgraph.FromEdges(n, src, dst, subgraph.BuildOptions{Symmetrize: true, SelfLoops: subgraph.RemoveSelfLoops})
	require.NoError(t, err)
	feat := &subgraph.Features{Rows: n, Cols: f}
	feat.Indptr = []int32{0}
	for v := range n {
		for j := range f {
			if (j%k == v%k && r.Float64() < 0.3) || r.Float64() < 0.1 {
				feat.Indices = append(feat.Indices, int32(j))
			}
		}
		feat.Indptr = append(feat.Indptr, int32(len(feat.Indices)))
	}
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
	d, err := NewData(ds, true)
	require.NoError(t, err)
	return d
}

var testConfigs = []Config{
	{Model: "gcn", Hidden: 8, Layers: 2, Dropout: 0.5},
	{Model: "gin", Hidden: 8, Layers: 2, Dropout: 0.5},
	{Model: "gin", Norm: "batch", Hidden: 8, Layers: 2, Dropout: 0.5},
	{Model: "sage", Hidden: 8, Layers: 2, Dropout: 0.5},
	{Model: "sage", Aggr: "max", Hidden: 8, Layers: 2, Dropout: 0.5},
	{Model: "gat", Hidden: 8, Heads: 2, Layers: 2, Dropout: 0.5, AttnDropout: 0.3},
	{Model: "gat", Hidden: 8, Heads: 2, OutHeads: 3, Layers: 3, Dropout: 0.2},
}

func name(c Config) string { return c.Model + c.Aggr + c.Norm }

// TestModelGradients checks every parameter's gradient through a whole
// model (dropout on, seeded) against central finite differences.
func TestModelGradients(t *testing.T) {
	d := synthData(t, 24, 3, 10, 1)
	for _, c := range testConfigs {
		t.Run(name(c), func(t *testing.T) {
			c.In, c.Out = 10, 3
			m, err := New(c, 5)
			require.NoError(t, err)
			loss := func(backward bool) float64 {
				tp := nn.NewTape(true, rand.New(rand.NewPCG(1, 2)))
				l := tp.CrossEntropy(m.Forward(tp, d.Input), d.Labels, d.Train)
				if backward {
					tp.Backward(l)
				}
				return float64(l.Data[0])
			}
			for _, p := range m.Params() {
				p.Grad = nil
			}
			loss(true)
			const h = 1e-3
			checked := 0
			for _, p := range m.Params() {
				if p.Buffer {
					continue
				}
				require.NotNil(t, p.Grad, p.Name)
				for i := 0; i < len(p.Data); i += 1 + len(p.Data)/12 {
					orig := p.Data[i]
					p.Data[i] = orig + h
					lp := loss(false)
					p.Data[i] = orig - h
					lm := loss(false)
					p.Data[i] = orig
					num := (lp - lm) / (2 * h)
					assert.InDelta(t, num, float64(p.Grad[i]), 2e-2*math.Max(1, math.Abs(num)), "%s[%d]", p.Name, i)
					checked++
				}
			}
			assert.Greater(t, checked, 10)
		})
	}
}

// TestTrainLearns trains each model on a small community graph: each must
// beat chance by far, and two runs with the same seeds must agree exactly.
func TestTrainLearns(t *testing.T) {
	d := synthData(t, 300, 4, 24, 2)
	for _, c := range testConfigs {
		t.Run(name(c), func(t *testing.T) {
			c.In, c.Out = d.Input.X.Cols, d.NumClasses
			run := func() *Result {
				m, err := New(c, 11)
				require.NoError(t, err)
				res, err := Train(m, d, TrainConfig{Epochs: 60, LR: 0.01, WeightDecay: 5e-4, Seed: 3})
				require.NoError(t, err)
				return res
			}
			a, b := run(), run()
			assert.Greater(t, a.TestAcc, 0.7, "test accuracy")
			assert.Equal(t, a.TestAcc, b.TestAcc)
			assert.Equal(t, a.ValLoss, b.ValLoss)
			assert.Equal(t, a.BestEpoch, b.BestEpoch)
		})
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Model: "mlp", In: 3, Hidden: 4, Out: 2, Layers: 2},
		{Model: "gcn", In: 0, Hidden: 4, Out: 2, Layers: 2},
		{Model: "gcn", In: 3, Hidden: 4, Out: 2, Layers: 0},
		{Model: "gcn", In: 3, Hidden: 4, Out: 2, Layers: 2, Dropout: 1},
		{Model: "sage", Aggr: "sum", In: 3, Hidden: 4, Out: 2, Layers: 2},
		{Model: "gin", Norm: "layer", In: 3, Hidden: 4, Out: 2, Layers: 2},
		{Model: "gat", In: 3, Hidden: 6, Heads: 4, Out: 2, Layers: 2},
	} {
		_, err := New(c, 1)
		assert.ErrorIs(t, err, ErrConfig, "%+v", c)
	}
}

// TestClusterGCN trains on random groups of graph partitions; it must
// learn and be reproducible.
func TestClusterGCN(t *testing.T) {
	d := synthData(t, 300, 4, 24, 2)
	run := func() *Result {
		m, err := New(Config{Model: "gcn", In: d.Input.X.Cols, Hidden: 16, Out: d.NumClasses, Layers: 2, Dropout: 0.5}, 1)
		require.NoError(t, err)
		res, err := Train(m, d, TrainConfig{Epochs: 40, LR: 0.01, Seed: 2, Clusters: 6, ClustersPerBatch: 2})
		require.NoError(t, err)
		return res
	}
	a, b := run(), run()
	assert.Greater(t, a.TestAcc, 0.7)
	assert.Equal(t, a.TestAcc, b.TestAcc)
	assert.Equal(t, a.ValLoss, b.ValLoss)

	m, err := New(Config{Model: "gcn", In: d.Input.X.Cols, Hidden: 16, Out: d.NumClasses, Layers: 2}, 1)
	require.NoError(t, err)
	_, err = Train(m, d, TrainConfig{Epochs: 1, LR: 0.01, Clusters: 1000})
	assert.Error(t, err, "more clusters than nodes")
}

func TestInduced(t *testing.T) {
	d := synthData(t, 30, 3, 8, 3)
	nodes := []int32{2, 5, 7, 11, 20}
	sub, err := d.Input.Induced(nodes)
	require.NoError(t, err)
	dense := d.Input.X.Dense()
	sd := sub.X.Dense()
	for i, v := range nodes {
		assert.Equal(t, dense.Data[int(v)*8:int(v+1)*8], sd.Data[i*8:(i+1)*8])
		for p := sub.Graph.CSR.Indptr[i]; p < sub.Graph.CSR.Indptr[i+1]; p++ {
			u := nodes[sub.Graph.CSR.Indices[p]]
			assert.Contains(t, d.Input.pull.Neighbors(int(v)), u)
		}
	}
}

// TestHooks: every matrix product passes its input and weight through the
// hooks with the right site, and a straight-through rounding hook (what
// fake quantization looks like) keeps gradients flowing to the weights.
func TestHooks(t *testing.T) {
	d := synthData(t, 40, 3, 10, 6)
	for _, c := range testConfigs {
		t.Run(name(c), func(t *testing.T) {
			c.In, c.Out = 10, 3
			m, err := New(c, 2)
			require.NoError(t, err)
			weights := map[string]int{}
			layersSeen := map[int]bool{}
			ste := func(tp *nn.Tape, x *nn.Tensor) *nn.Tensor {
				y := &nn.Tensor{Rows: x.Rows, Cols: x.Cols, Data: make([]float32, len(x.Data)), Sparse: x.Sparse}
				for i, v := range x.Data {
					y.Data[i] = float32(math.Round(float64(v)*64) / 64)
				}
				tp.Custom(y, func() {
					if x.RequiresGrad() {
						g := nn.GradOf(x)
						for i, gv := range y.Grad {
							g[i] += gv
						}
					}
				}, x)
				return y
			}
			m.SetHooks(Hooks{
				Input: func(tp *nn.Tape, s Site, x *nn.Tensor) *nn.Tensor {
					layersSeen[s.Layer] = true
					return ste(tp, x)
				},
				Weight: func(tp *nn.Tape, s Site, w *nn.Tensor) *nn.Tensor {
					assert.Same(t, s.Weight.Tensor, w)
					weights[s.Weight.Name]++
					return ste(tp, w)
				},
			})
			for _, p := range m.Params() {
				p.Grad = nil
			}
			tp := nn.NewTape(true, rand.New(rand.NewPCG(1, 1)))
			tp.Backward(tp.CrossEntropy(m.Forward(tp, d.Input), d.Labels, d.Train))
			assert.Len(t, layersSeen, c.Layers)
			for _, p := range m.Params() {
				if strings.HasSuffix(p.Name, "weight") && !strings.Contains(p.Name, "norms") {
					assert.Equal(t, 1, weights[p.Name], p.Name)
					require.NotNil(t, p.Grad, p.Name)
					var s float64
					for _, g := range p.Grad {
						s += math.Abs(float64(g))
					}
					assert.Greater(t, s, 0.0, p.Name)
				}
			}
		})
	}
}

// TestSampleGCN: with a limit no row exceeds, the sampled GCN input gives
// the exact logits bit for bit; with a small one every row keeps at most
// limit entries, each weight the exact one times its row's deg/kept, and a
// trained model still classifies (the ES-SpMM approximation).
func TestSampleGCN(t *testing.T) {
	d := synthData(t, 300, 4, 24, 2)
	c := Config{Model: "gcn", Hidden: 8, Layers: 2, Dropout: 0.5, In: d.Input.X.Cols, Out: d.NumClasses}
	m, err := New(c, 11)
	require.NoError(t, err)
	_, err = Train(m, d, TrainConfig{Epochs: 60, LR: 0.01, WeightDecay: 5e-4, Seed: 3})
	require.NoError(t, err)
	g, w := d.Input.gcn()
	maxDeg := 0
	for v := range g.CSR.Rows() {
		maxDeg = max(maxDeg, int(g.CSR.Indptr[v+1]-g.CSR.Indptr[v]))
	}
	exact := Evaluate(m, d)
	whole := d.Input.SampleGCN(maxDeg, 1<<20)
	assert.Equal(t, w, whole.gcnW)
	tp := nn.NewTape(false, nil)
	want, got := m.Forward(tp, d.Input), m.Forward(tp, whole)
	assert.Equal(t, want.Data, got.Data)

	const limit = 3
	s := d.Input.SampleGCN(limit, 16)
	sg := s.loops.CSR
	sampled := 0
	for v := range sg.Rows() {
		kept, deg := int(sg.Indptr[v+1]-sg.Indptr[v]), int(g.CSR.Indptr[v+1]-g.CSR.Indptr[v])
		require.LessOrEqual(t, kept, limit)
		if deg > limit {
			sampled++
		}
		for p := sg.Indptr[v]; p < sg.Indptr[v+1]; p++ {
			u := sg.Indices[p]
			q := g.CSR.Indptr[v]
			for g.CSR.Indices[q] != u {
				q++
			}
			assert.InDelta(t, float64(w[q])*float64(deg)/float64(kept), float64(s.gcnW[p]), 1e-6)
		}
	}
	require.Positive(t, sampled, "rows past the limit")
	d2 := *d
	d2.Input = s
	ev := Evaluate(m, &d2)
	assert.Greater(t, ev.TestAcc, 0.5, "sampled test accuracy (exact %.3f)", exact.TestAcc)
	assert.Equal(t, d.Input.gcnW, w, "the input itself unchanged")
}
