package layers

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/quantize"
	"github.com/qgtc/qgtc/subgraph"
)

// qSynth is a planted-partition graph whose labels are the communities and
// whose sparse count features are noisy indicators of them.
func qSynth(t testing.TB, n, k, f int, binary bool, seed uint64) *subgraph.Dataset {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	labels := make([]int32, n)
	for v := range labels {
		labels[v] = int32(r.IntN(k))
	}
	var src, dst []int32
	for len(src) < 3*n { // average degree 6, 80% of edges inside communities
		u, v := r.IntN(n), r.IntN(n)
		if u == v || (labels[u] != labels[v] && r.Float64() < 0.8) {
			continue
		}
		src, dst = append(src, int32(u)), append(dst, int32(v))
	}
	g, err := subgraph.FromEdges(n, src, dst, subgraph.BuildOptions{Symmetrize: true, SelfLoops: subgraph.RemoveSelfLoops})
	require.NoError(t, err)
	feat := &subgraph.Features{Rows: n, Cols: f, Indptr: make([]int32, n+1)}
	for v := 0; v < n; v++ {
		for c := 0; c < f; c++ {
			p := 0.05
			if c%k == int(labels[v]) {
				p = 0.25
			}
			if r.Float64() < p {
				feat.Indices = append(feat.Indices, int32(c))
				if !binary {
					feat.Values = append(feat.Values, float32(1+r.IntN(20)))
				}
			}
		}
		feat.Indptr[v+1] = int32(len(feat.Indices))
	}
	d := &subgraph.Dataset{Name: "synth", Graph: g, Features: feat, Labels: labels, NumClasses: k}
	d.RandomSplit(10, 10, seed)
	return d
}

// qCase is a model variant: its kind, GIN's norm and aggregation.
type qCase struct{ name, kind, norm, aggr string }

// qCases are the model variants every exactness test covers: GCN, GIN with
// its batch norm (folded into an epilogue at inference) and GIN without,
// GIN that averages, and SAGE.
var qCases = []qCase{
	{"gcn", GCN, NormNone, ""},
	{"gin", GIN, NormBatch, ""},
	{"gin-nonorm", GIN, NormNone, ""},
	{"gin-mean", GIN, NormBatch, AggrMean},
	{"sage", SAGE, NormNone, ""},
}

// qPrepared is preparedNorm with GIN's batch norm.
func qPrepared(t testing.TB, kind string, abits, wbits, parts int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	norm := NormNone
	if kind == GIN {
		norm = NormBatch
	}
	return preparedNorm(t, kind, norm, abits, wbits, parts, binary)
}

// preparedNorm returns a model of kind with the norm, trained a few epochs
// in full precision and calibrated, with its data and quantized input.
func preparedNorm(t testing.TB, kind, norm string, abits, wbits, parts int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	return preparedCase(t, qCase{kind: kind, norm: norm}, abits, wbits, parts, binary)
}

// preparedCase is preparedNorm of the variant c.
func preparedCase(t testing.TB, c qCase, abits, wbits, parts int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	kind, norm := c.kind, c.norm
	ds := qSynth(t, 300, 4, 40, binary, 3)
	// Contiguous id ranges as parts: the planted communities are shuffled,
	// so these batches cut edges, as real partitions do.
	var p []int32
	if parts > 1 {
		p = make([]int32, ds.Graph.N())
		for v := range p {
			p[v] = int32(v * parts / len(p))
		}
	}
	d, err := NewData(ds, p, parts, 1)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, abits)
	require.NoError(t, err)
	m, err := NewModel(kind, 40, 16, 4, 2, abits, wbits, 5)
	require.NoError(t, err)
	require.NoError(t, m.SetNorm(norm))
	m.Aggr = c.aggr
	_, err = m.TrainFP32(d, in, TrainConfig{Epochs: 5, LR: 0.01, Seed: 1})
	require.NoError(t, err)
	for i, ly := range m.Layers {
		if norm == NormBatch { // the exactness tests must cover a batch norm that is not the identity
			scale, shift := ly.BN.fold()
			require.NotEqual(t, float32(1), scale[0], "layer %d", i)
			require.NotEqual(t, float32(0), shift[0], "layer %d", i)
		}
	}
	require.NoError(t, m.Calibrate(d, in, 0))
	return m, d, in
}

// TestQWideProduct checks the plane-split product against int64 sums where
// the int32 kernels would overflow.
func TestQWideProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ m, k, n, a, b int }{
		{3, 300, 5, 16, 16}, {2, 65, 3, 32, 1}, {4, 257, 2, 20, 12}, {1, 1, 1, 32, 32},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d/a=%d/b=%d", tc.m, tc.k, tc.n, tc.a, tc.b), func(t *testing.T) {
			av := make([]int32, tc.m*tc.k)
			bv := make([]int32, tc.k*tc.n)
			for i := range av {
				av[i] = int32(r.Uint64() & (1<<tc.a - 1))
			}
			for i := range bv {
				bv[i] = int32(r.Uint64() & (1<<tc.b - 1))
			}
			a, err := bittensor.PackRows(av, tc.m, tc.k, tc.a)
			require.NoError(t, err)
			b, err := bittensor.PackCols(bv, tc.k, tc.n, tc.b)
			require.NoError(t, err)
			got, err := bmm.WideProduct(bmm.Generic{}, a, b)
			require.NoError(t, err)
			for i := 0; i < tc.m; i++ {
				for j := 0; j < tc.n; j++ {
					var want uint64
					for k := 0; k < tc.k; k++ {
						want += uint64(uint32(av[i*tc.k+k])) * uint64(uint32(bv[k*tc.n+j]))
					}
					if tc.a+tc.b < 50 {
						assert.Equal(t, float64(want), got[i*tc.n+j])
					} else {
						assert.InEpsilon(t, float64(want), got[i*tc.n+j]+1e-300, 1e-12)
					}
				}
			}
		})
	}
}

// TestQInferMatchesSimulation proves that inference on bit tensors gives
// exactly the codes and logits of the float64 simulation of the same
// integer math: every inter-layer tensor's codes and every logit bit.
func TestQInferMatchesSimulation(t *testing.T) {
	for _, c := range qCases {
		for _, bits := range [][2]int{{1, 1}, {2, 2}, {3, 5}, {4, 4}, {8, 8}, {16, 16}, {8, 2}, {20, 24}} {
			for _, binary := range []bool{true, false} {
				name := fmt.Sprintf("%s/a=%d/w=%d/binary=%v", c.name, bits[0], bits[1], binary)
				t.Run(name, func(t *testing.T) {
					m, d, in := preparedCase(t, c, bits[0], bits[1], 3, binary)
					plan, err := m.Compile(bmm.NewGenericBackend())
					require.NoError(t, err)
					requireSimExact(t, m, plan, d, in)
				})
			}
		}
	}
}

// requireSimExact checks that plan (m compiled) gives, on every batch of
// d, the simulation's codes of every inter-layer tensor and its logits bit
// for bit, with the dense and the sparse first product.
func requireSimExact(t *testing.T, m *Model, plan *Plan, d *Data, in *Input) {
	t.Helper()
	name := plan.Backend.Name()
	for _, b := range d.Eval {
		st, want, err := m.simForward(b, in, true, -1, 0, nil)
		require.NoError(t, err)
		x, err := in.Pack(b.Nodes)
		require.NoError(t, err)
		got, _, err := plan.Forward(b, x, func(op int, codes *bittensor.Tensor) {
			if codes != nil {
				require.Equal(t, st.codes[op], codes.Ints(), "%s: codes of op %d", name, op)
			}
		})
		require.NoError(t, err)
		require.Equal(t, len(want), len(got))
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: logit %d", name, i)
		}
		sp, _, err := plan.ForwardSparse(b, in, func(op int, codes *bittensor.Tensor) {
			if codes != nil {
				require.Equal(t, st.codes[op], codes.Ints(), "%s, sparse: codes of op %d", name, op)
			}
		})
		require.NoError(t, err)
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(sp[i]), "%s, sparse: logit %d", name, i)
		}
	}
}

// TestQZeroPointExact checks that the first product's epilogue output is
// the product of the dequantized features and weights (signed weights with
// per-channel zero points, features with a zero point when they need one).
func TestQZeroPointExact(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		t.Run(kind, func(t *testing.T) {
			m, d, in := qPrepared(t, kind, 4, 3, 1, false)
			b := d.Eval[0]
			st, _, err := m.simForward(b, in, true, 0, 0, nil)
			require.NoError(t, err)
			w := st.weights[0]
			l := &m.Layers[0].Lin1
			y := st.outs[0]
			for r := 0; r < b.N(); r++ {
				for j := 0; j < l.Out; j++ {
					var want, mag float64
					for p := st.input.indptr[r]; p < st.input.indptr[r+1]; p++ {
						h := dequant(st.input.vals[p], m.Input)
						v := h * w.deq[int(st.input.indices[p])*l.Out+j]
						want += v
						mag += math.Abs(v)
					}
					if rs := st.ops[0].scale(b); rs != nil {
						want *= float64(rs[r])
						mag *= float64(rs[r])
					}
					assert.InDelta(t, want, float64(y[r*l.Out+j]), 1e-5*(mag+1))
				}
			}
		})
	}
}

// planLogits compiles m for be (nil: the CPU backend) and returns the
// logits the plan computes on batch b.
func planLogits(t *testing.T, m *Model, be bmm.Backend, in *Input, b *Batch) []float32 {
	t.Helper()
	if be == nil {
		be = cpu.NewBackend(nil)
	}
	plan, err := m.Compile(be)
	require.NoError(t, err)
	defer plan.Close()
	return batchLogits(t, plan, b, in, false)
}

// TestQInfer32Bits checks 32-bit codes end to end: products beyond int64
// are summed in float64, so codes may differ in their last bits from the
// simulation, but the logits agree to float32 precision.
func TestQInfer32Bits(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		t.Run(kind, func(t *testing.T) {
			m, d, in := qPrepared(t, kind, 32, 32, 1, false)
			b := d.Eval[0]
			_, want, err := m.simForward(b, in, true, -1, 0, nil)
			require.NoError(t, err)
			_, fp, err := m.simForward(b, in, false, -1, 0, nil)
			require.NoError(t, err)
			got := planLogits(t, m, bmm.NewGenericBackend(), in, b)
			for i := range want {
				assert.InDelta(t, want[i], got[i], 1e-2*(1+math.Abs(float64(want[i]))), "logit %d", i)
				assert.InDelta(t, fp[i], got[i], 1e-2*(1+math.Abs(float64(fp[i]))), "logit %d vs fp32", i)
			}
		})
	}
}

// TestQATForwardIsInference proves the training forward pass (the one QAT
// differentiates) computes exactly what inference computes.
func TestQATForwardIsInference(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			kind := c.kind
			m, d, in := preparedCase(t, c, 3, 3, 1, false)
			before := m.Clone()
			// QAT's training pass is the evaluation pass: weights move, a
			// batch norm stays frozen.
			var losses []float64
			_, err := m.QAT(d, in, TrainConfig{Epochs: 3, LR: 0.005, Seed: 1, Progress: func(_ int, loss, _ float64) {
				losses = append(losses, loss)
			}})
			require.NoError(t, err)
			require.Len(t, losses, 3)
			// Epoch 1's loss comes from the starting weights: it is the
			// loss of the evaluation pass (one batch, every train node).
			_, logits0, err := before.simForward(d.Eval[0], in, true, -1, 0, nil)
			require.NoError(t, err)
			isTrain := map[int32]bool{}
			for _, v := range d.Train {
				isTrain[v] = true
			}
			var idx []int
			for i, v := range d.Eval[0].Nodes {
				if isTrain[v] {
					idx = append(idx, i)
				}
			}
			want, _ := crossEntropy(logits0, m.Classes, d.Labels, d.Eval[0].Nodes, idx)
			assert.InDelta(t, want, losses[0], 1e-12) // train scales by the count and back
			for i := range m.Layers {
				assert.Equal(t, before.Layers[i].BN, m.Layers[i].BN, "layer %d batch norm", i)
			}
			b := d.Eval[0]
			// The training pass: rng set and a dropout rate, as train uses them.
			st, train, err := m.simForward(b, in, true, -1, 0.5, rand.New(rand.NewPCG(1, 1)))
			require.NoError(t, err)
			// Its quantizers are package quantize's FakeQuant, value for value.
			for i, op := range st.ops {
				if op.out == nil {
					continue
				}
				fq, _, err := op.out.FakeQuant(st.outs[i])
				require.NoError(t, err)
				for j, q := range st.codes[i] {
					require.Equal(t, math.Float32bits(fq[j]), math.Float32bits(op.out.Value(uint32(q))), "op %d value %d", i, j)
				}
			}
			inf := planLogits(t, m, nil, in, b)
			// GIN's batch norm normalizes with the batch's statistics in
			// training; the evaluation pass (running statistics, folded
			// into the epilogue) is inference. GCN has no batch norm: its
			// training pass is inference too.
			_, eval, err := m.simForward(b, in, true, -1, 0, nil)
			require.NoError(t, err)
			for i := range inf {
				require.Equal(t, math.Float32bits(inf[i]), math.Float32bits(eval[i]), "logit %d", i)
				if m.Norm() == NormNone {
					require.Equal(t, math.Float32bits(inf[i]), math.Float32bits(train[i]), "logit %d", i)
				}
			}
			if m.Norm() == NormBatch {
				require.NotEqual(t, eval, train, "the training pass should use the batch's statistics")
			} else if kind == GIN {
				require.Equal(t, eval, train, "without batch norm the training pass is inference")
			}
		})
	}
}

// TestQTrainLearns checks full-precision training, calibration and QAT reach
// a useful accuracy on the planted partition, quantized at 4 bits.
func TestQTrainLearns(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		t.Run(kind, func(t *testing.T) {
			ds := qSynth(t, 400, 4, 40, true, 9)
			d, err := NewData(ds, nil, 1, 1)
			require.NoError(t, err)
			in, err := QuantizeInput(ds.Features, 4)
			require.NoError(t, err)
			m, err := NewModel(kind, 40, 16, 4, 2, 4, 4, 1)
			require.NoError(t, err)
			_, err = m.TrainFP32(d, in, TrainConfig{Epochs: 100, LR: 0.005, WeightDecay: 5e-4, Dropout: 0.3, Seed: 1})
			require.NoError(t, err)
			fp, err := m.Accuracy(d, in, false, d.Test)
			require.NoError(t, err)
			require.NoError(t, m.Calibrate(d, in, 0))
			_, err = m.QAT(d, in, TrainConfig{Epochs: 10, LR: 0.003, Seed: 1})
			require.NoError(t, err)
			q, err := m.Accuracy(d, in, true, d.Test)
			require.NoError(t, err)
			assert.Greater(t, fp, 0.55, "fp32 test accuracy (4 classes: chance is 0.25)")
			assert.Greater(t, q, fp-0.1, "4-bit test accuracy")
		})
	}
}

// TestQGradients checks the full-precision backward pass against central
// finite differences of the loss.
func TestQGradients(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			ds := qSynth(t, 60, 3, 12, false, 4)
			d, err := NewData(ds, nil, 1, 1)
			require.NoError(t, err)
			in, err := QuantizeInput(ds.Features, 8)
			require.NoError(t, err)
			m, err := NewModel(c.kind, 12, 8, 3, 2, 8, 8, 2)
			require.NoError(t, err)
			require.NoError(t, m.SetNorm(c.norm))
			m.Aggr = c.aggr
			for _, l := range m.linears() {
				for i := range l.B {
					l.B[i] = 0.1 * float32(i%3)
				}
			}
			if c.norm == NormBatch { // a batch norm that is not the identity at evaluation
				for _, ly := range m.Layers {
					for j := range ly.BN.Gamma {
						ly.BN.Gamma[j], ly.BN.Beta[j] = 1+0.1*float32(j%4), 0.05*float32(j%3)
						ly.BN.Mean[j], ly.BN.Var[j] = 0.1*float32(j%5), 0.5+0.2*float32(j%3)
					}
				}
			}
			b := d.Eval[0]
			idx := []int{}
			for i := range b.Nodes {
				idx = append(idx, i)
			}
			// rng set (dropout 0): the training pass, batch norm with the
			// batch's statistics; nil: the evaluation pass.
			for _, train := range []bool{false, true} {
				var rng *rand.Rand
				if train {
					rng = rand.New(rand.NewPCG(1, 1))
				}
				loss := func() float64 {
					_, logits, err := m.simForward(b, in, false, -1, 0, rng)
					require.NoError(t, err)
					l, _ := crossEntropy(logits, 3, ds.Labels, b.Nodes, idx)
					return l
				}
				st, logits, err := m.simForward(b, in, false, -1, 0, rng)
				require.NoError(t, err)
				_, dl := crossEntropy(logits, 3, ds.Labels, b.Nodes, idx)
				g := &simGrads{w: map[*Linear][]float32{}, b: map[*Linear][]float32{},
					gamma: map[*BatchNorm][]float32{}, beta: map[*BatchNorm][]float32{}}
				type param struct {
					name string
					v, g []float32
				}
				var ps []param
				for li, l := range m.linears() {
					g.w[l] = make([]float32, len(l.W))
					g.b[l] = make([]float32, len(l.B))
					ps = append(ps, param{fmt.Sprintf("linear %d weight", li), l.W, g.w[l]}, param{fmt.Sprintf("linear %d bias", li), l.B, g.b[l]})
				}
				for li, ly := range m.Layers {
					if bn := ly.BN; bn != nil && train {
						g.gamma[bn], g.beta[bn] = make([]float32, len(bn.Gamma)), make([]float32, len(bn.Beta))
						ps = append(ps, param{fmt.Sprintf("layer %d bn gamma", li), bn.Gamma, g.gamma[bn]}, param{fmt.Sprintf("layer %d bn beta", li), bn.Beta, g.beta[bn]})
					}
				}
				m.simBackward(st, dl, g)
				for _, p := range ps {
					for i := 0; i < len(p.v); i += max(1, len(p.v)/7) {
						old := p.v[i]
						const h = 2e-4 // small: batch norm moves every row, so a larger step can cross a ReLU kink
						p.v[i] = old + h
						up := loss()
						p.v[i] = old - h
						down := loss()
						p.v[i] = old
						num := (up - down) / (2 * h)
						assert.InDelta(t, num, float64(p.g[i]), 2e-3+0.05*math.Abs(num), "train %v %s entry %d", train, p.name, i)
					}
				}
			}
		})
	}
}

// TestQModelSaveLoad round-trips trained models (GIN with its batch norm)
// through safetensors and checks that a file of an older format is refused.
func TestQModelSaveLoad(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, _, _ := preparedCase(t, c, 4, 4, 1, false)
			var buf bytes.Buffer
			_, err := m.WriteTo(&buf)
			require.NoError(t, err)
			got, err := ReadModel(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			require.Equal(t, m, got)
			require.Equal(t, c.norm, got.Norm())
			// The metadata is JSON inside a JSON string: its quotes are escaped.
			old := regexp.MustCompile(`\\"format\\":\d`).ReplaceAll(buf.Bytes(), []byte(`\"format\":2`))
			require.False(t, bytes.Equal(buf.Bytes(), old), "format field not found")
			_, err = ReadModel(bytes.NewReader(old))
			require.ErrorIs(t, err, ErrModel)
		})
	}
}

// TestQSetNorm checks the GIN normalization option and its errors.
func TestQSetNorm(t *testing.T) {
	m, err := NewModel(GIN, 10, 8, 3, 2, 4, 4, 1)
	require.NoError(t, err)
	require.NoError(t, m.SetNorm(NormBatch))
	assert.Equal(t, NormBatch, m.Norm())
	for _, ly := range m.Layers {
		require.NotNil(t, ly.BN)
		scale, shift := ly.BN.fold()
		assert.InDelta(t, 1, scale[0], 1e-5, "a fresh batch norm is the identity at evaluation")
		assert.Zero(t, shift[0])
	}
	require.NoError(t, m.Validate(10))
	require.NoError(t, m.SetNorm(NormNone))
	assert.Equal(t, NormNone, m.Norm())
	require.NoError(t, m.Validate(10))
	for _, ly := range m.Layers {
		assert.Nil(t, ly.BN)
	}
	for _, c := range []struct{ kind, norm string }{{GIN, "layer"}, {GCN, NormBatch}, {GIN, ""}} {
		t.Run(c.kind+"/"+c.norm, func(t *testing.T) {
			m, err := NewModel(c.kind, 10, 8, 3, 2, 4, 4, 1)
			require.NoError(t, err)
			assert.ErrorIs(t, m.SetNorm(c.norm), ErrModel)
		})
	}
	g, err := NewModel(GCN, 10, 8, 3, 2, 4, 4, 1)
	require.NoError(t, err)
	require.NoError(t, g.SetNorm(NormNone))
	// A batch norm of the wrong width is refused.
	require.NoError(t, m.SetNorm(NormBatch))
	m.Layers[1].BN = newBatchNorm(5)
	assert.ErrorIs(t, m.Validate(10), ErrModel)
}

// TestQSimForwardUpTo checks the mixed pass calibration measures with: the
// ops before upTo see exactly the quantized model's values, the op at upTo
// gets their dequantized codes, and the ends are the two plain passes.
func TestQSimForwardUpTo(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 3, 4, 1, false)
			b := d.Eval[0]
			qs, q, err := m.simForward(b, in, true, -1, 0, nil)
			require.NoError(t, err)
			_, fp, err := m.simForward(b, in, false, -1, 0, nil)
			require.NoError(t, err)
			n := len(qs.ops)
			_, all, err := m.simForwardUpTo(b, in, n, -1, 0, nil)
			require.NoError(t, err)
			require.Equal(t, q, all)
			for upTo := 1; upTo < n; upTo++ {
				st, _, err := m.simForwardUpTo(b, in, upTo, -1, 0, nil)
				require.NoError(t, err)
				for i := 0; i < upTo; i++ {
					require.Equal(t, qs.outs[i], st.outs[i], "upTo %d: output of op %d", upTo, i)
				}
				// Every full-precision op reading a quantized value reads its
				// codes dequantized (in a chain: op upTo reads op upTo−1's).
				for i := upTo; i < n; i++ {
					v := qs.ops[i].in[0]
					if qs.ops[i].kind == qAdd || v == 0 || v > upTo || qs.ops[v-1].out == nil {
						continue
					}
					p := *qs.ops[v-1].out
					for k, code := range qs.codes[v-1] {
						require.Equal(t, dequant(float64(code), p), st.acts[i][k], "upTo %d: input %d of op %d", upTo, k, i)
					}
				}
			}
			_, none, err := m.simForwardUpTo(b, in, 0, -1, 0, nil)
			require.NoError(t, err)
			require.Equal(t, fp, none)
		})
	}
}

// TestQKL checks the divergence against values worked out by hand.
func TestQKL(t *testing.T) {
	assert.InDelta(t, 0, klDivergence([]float32{1, 2, 3}, []float32{1, 2, 3}), 1e-12)
	assert.InDelta(t, 0, klDivergence([]float32{1, 2, 3}, []float32{11, 12, 13}), 1e-12, "softmax ignores a shift")
	// p = (1/2, 1/2), q = softmax(0, ln 3) = (1/4, 3/4).
	want := 0.5*math.Log(0.5/0.25) + 0.5*math.Log(0.5/0.75)
	assert.InDelta(t, want, klDivergence([]float32{0, 0}, []float32{0, float32(math.Log(3))}), 1e-7)
}

// TestQCalibrateOutputAware checks that each activation range Calibrate
// keeps moves the logits no more than any other candidate, the range of
// least squared error included, given the ranges before it.
func TestQCalibrateOutputAware(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 2, 3, 3, false)
			batches := d.Eval
			ref := make([][]float32, len(batches))
			for bi, b := range batches {
				_, y, err := m.simForward(b, in, false, -1, 0, nil)
				require.NoError(t, err)
				ref[bi] = y
			}
			ops := m.ops()
			picked := 0
			for i := range ops {
				if ops[i].out == nil {
					continue
				}
				kept := *ops[i].out
				best, err := m.klTo(ref, batches, in, i+1)
				require.NoError(t, err)
				// The candidates, from the same sample Calibrate drew.
				var sample []float32
				for _, b := range batches {
					_, y, err := m.simForward(b, in, true, i, 0, nil)
					require.NoError(t, err)
					sample = append(sample, y...)
				}
				mse, cands := qRanges(sample, m.ABits, ops[i].relu)
				require.Contains(t, cands, kept, "op %d keeps one of the candidates", i)
				if kept != mse {
					picked++
				}
				var outs [][]float32
				var prefix [][]simVal
				for _, b := range batches {
					st, y, err := m.simForward(b, in, true, i, 0, nil)
					require.NoError(t, err)
					outs, prefix = append(outs, y), append(prefix, st.vals[:i+1])
				}
				for _, p := range cands {
					*ops[i].out = p
					kl, err := m.klTo(ref, batches, in, i+1)
					require.NoError(t, err)
					assert.GreaterOrEqual(t, kl, best, "op %d: candidate %+v", i, p)
					// Calibrate's shortcut computes the same divergence.
					fast, err := m.klFrom(ref, batches, in, i, outs, prefix, nil)
					require.NoError(t, err)
					require.Equal(t, kl, fast, "op %d: candidate %+v", i, p)
				}
				*ops[i].out = kept
			}
			t.Logf("%d of the ranges differ from the least-squares ones", picked)
		})
	}
}

// klTo, the reference klFrom is checked against, is the mean over the nodes of batches of KL(softmax(ref) ‖
// softmax(logits)), the logits of m with its first upTo ops quantized.
func (m *Model) klTo(ref [][]float32, batches []*Batch, in *Input, upTo int) (float64, error) {
	var kl float64
	var n int
	c := m.Classes
	for bi, b := range batches {
		_, y, err := m.simForwardUpTo(b, in, upTo, -1, 0, nil)
		if err != nil {
			return 0, err
		}
		for r := 0; r < b.N(); r++ {
			kl += klDivergence(ref[bi][r*c:(r+1)*c], y[r*c:(r+1)*c])
			n++
		}
	}
	return kl / float64(max(1, n)), nil
}

// TestQDropoutPlaces checks that training drops the input of each linear
// but GIN's MLP hidden units next to a batch norm.
func TestQDropoutPlaces(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 8, 8, 1, false)
			st, _, err := m.simForward(d.Eval[0], in, false, -1, 0.5, rand.New(rand.NewPCG(1, 2)))
			require.NoError(t, err)
			assert.NotNil(t, st.dropIn, "the features")
			for i, op := range st.ops {
				switch {
				case op.in[0] == 0 || op.kind != qLin || op.keep:
					assert.Nil(t, st.drops[i], "op %d", i)
				default:
					assert.Contains(t, st.drops[i], true, "op %d: a layer's input", i)
				}
				// Linears reading one value share its mask (SAGE's lin_l and
				// lin_r see the same dropped input).
				for j := range i {
					if op.kind == qLin && st.ops[j].kind == qLin && op.in[0] == st.ops[j].in[0] {
						assert.Equal(t, st.drops[j], st.drops[i], "ops %d and %d read value %d", j, i, op.in[0])
					}
				}
			}
			if c.kind == GIN {
				assert.Equal(t, c.norm == NormBatch, st.ops[2].keep, "GIN's hidden units are kept next to a batch norm")
			}
			// KeepInput: the features are whole, the layers' inputs drop as above.
			kst, _, err := m.simRun(d.Eval[0], in, 0, -1, 0.5, false, rand.New(rand.NewPCG(1, 2)), nil, nil)
			require.NoError(t, err)
			assert.Nil(t, kst.dropIn, "the features are kept")
			nst, _, err := m.simForward(d.Eval[0], in, false, -1, 0, nil)
			require.NoError(t, err)
			assert.Equal(t, nst.input.vals, kst.input.vals, "the features as without dropout")
			assert.NotEqual(t, nst.input.vals, st.input.vals, "dropout zeroes some features")
			for i := range st.ops {
				assert.Equal(t, st.drops[i] == nil, kst.drops[i] == nil, "op %d", i)
			}
		})
	}
}

// TestQScaleGrad checks the LSQ step-size gradient on values inside,
// below and above a 2-bit range, worked out by hand.
func TestQScaleGrad(t *testing.T) {
	p, err := quantize.FromRange(0, 3, 2) // step 1, Lower −0.5: levels 0, 1, 2, 3
	require.NoError(t, err)
	y := []float32{1.2, -2, 7, 2.5}
	q := make([]int32, len(y))
	for k, v := range y {
		q[k] = int32(p.Code(v))
	}
	require.Equal(t, []int32{1, 0, 3, 3}, q)
	// ∂x̂/∂s: inside q + c − y/s with c = Lower/s + 1/2 = 0; clipped q + c.
	d := []float64{1 - 1.2, 0, 3, 3 - 2.5}
	dOut := []float64{0.5, -1, 2, 4}
	var want float64
	for k := range d {
		want += dOut[k] * d[k]
	}
	want /= math.Sqrt(4 * 3)
	assert.InDelta(t, want, scaleGrad(p, y, q, dOut), 1e-6)
}

// TestQATLearnScales checks that QAT with learned step sizes moves the
// activation steps, keeps each zero point in units of its step, and stays
// bit for bit what inference computes.
func TestQATLearnScales(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 3, 3, 1, false)
			before := m.Clone()
			_, err := m.QAT(d, in, TrainConfig{Epochs: 3, LR: 0.01, Seed: 1, LearnScales: true})
			require.NoError(t, err)
			moved := 0
			for i, op := range m.ops() {
				if op.out == nil {
					continue
				}
				old := *before.ops()[i].out
				if op.out.Scale != old.Scale {
					moved++
				}
				assert.InDelta(t, old.Lower/old.Scale, op.out.Lower/op.out.Scale, 1e-5, "op %d zero point", i)
			}
			assert.Positive(t, moved, "no step size moved")
			b := d.Eval[0]
			_, want, err := m.simForward(b, in, true, -1, 0, nil)
			require.NoError(t, err)
			got := planLogits(t, m, bmm.NewGenericBackend(), in, b)
			for i := range want {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "logit %d", i)
			}
		})
	}
}

// BenchmarkQPredictWeightCache compares a quantized evaluation pass over 8
// batches with each linear's weights prepared once for the pass
// (weightCache, as Predict and Calibrate do) against prepared again for
// every batch (a nil cache, as training does).
func BenchmarkQPredictWeightCache(b *testing.B) {
	ds := qSynth(b, 4000, 8, 2000, true, 3)
	p := make([]int32, ds.Graph.N())
	for v := range p {
		p[v] = int32(v * 8 / len(p))
	}
	d, err := NewData(ds, p, 8, 1)
	require.NoError(b, err)
	in, err := QuantizeInput(ds.Features, 4)
	require.NoError(b, err)
	m, err := NewModel(GCN, 2000, 64, 8, 2, 4, 4, 5)
	require.NoError(b, err)
	require.NoError(b, m.Calibrate(d, in, 0))
	for _, cached := range []bool{true, false} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			for b.Loop() {
				var wc weightCache
				if cached {
					wc = weightCache{}
				}
				for _, bt := range d.Eval {
					_, _, err := m.simRun(bt, in, qUpTo(true), -1, 0, true, nil, nil, wc)
					require.NoError(b, err)
				}
			}
		})
	}
}

// TestQGINMean checks GIN's mean aggregation: with zero biases and no
// batch norm a one-layer GIN's logits are the summing GIN's divided by
// each node's count (itself and its neighbours); the model file keeps the
// aggregation (format 6), and the wrong uses are refused.
func TestQGINMean(t *testing.T) {
	ds := qSynth(t, 80, 3, 12, false, 6)
	d, err := NewData(ds, nil, 1, 1)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, 8)
	require.NoError(t, err)
	sum, err := NewModel(GIN, 12, 8, 3, 1, 8, 8, 3)
	require.NoError(t, err)
	for _, l := range sum.linears() {
		clear(l.B)
	}
	mean := sum.Clone()
	mean.Aggr = AggrMean
	require.True(t, mean.GINMean())
	require.False(t, sum.GINMean())
	b := d.Eval[0]
	_, ls, err := sum.simForward(b, in, false, -1, 0, nil)
	require.NoError(t, err)
	_, lm, err := mean.simForward(b, in, false, -1, 0, nil)
	require.NoError(t, err)
	require.Len(t, lm, len(ls))
	moved := 0
	for v := range b.Nodes {
		deg := float64(b.Indptr[v+1] - b.Indptr[v])
		require.Greater(t, deg, 1.0, "node %d: the test wants neighbours", v)
		for c := range 3 {
			i := v*3 + c
			assert.InDelta(t, float64(ls[i])/deg, float64(lm[i]), 1e-5*(1+math.Abs(float64(ls[i]))), "node %d class %d", v, c)
			if ls[i] != lm[i] {
				moved++
			}
		}
	}
	require.Greater(t, moved, len(ls)/2, "the mean must differ from the sum")

	var buf bytes.Buffer
	_, err = mean.WriteTo(&buf)
	require.NoError(t, err)
	require.Contains(t, buf.String(), `\"format\":6`)
	got, err := ReadModel(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, AggrMean, got.Aggr)
	require.Equal(t, AggrMean, got.AggrOf())
	buf.Reset()
	_, err = sum.WriteTo(&buf)
	require.NoError(t, err)
	require.NotContains(t, buf.String(), `aggr`, "a summing GIN's file is readable by earlier versions")
	got, err = ReadModel(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, AggrSum, got.AggrOf())

	for _, c := range []struct {
		kind, aggr string
	}{{GIN, "max"}, {GCN, AggrMean}, {SAGE, AggrSum}} {
		m, err := NewModel(c.kind, 12, 8, 3, 2, 8, 8, 3)
		require.NoError(t, err)
		m.Aggr = c.aggr
		assert.ErrorIs(t, m.Validate(12), ErrModel, "%s with aggregation %q", c.kind, c.aggr)
	}
	gcn, err := NewModel(GCN, 12, 8, 3, 2, 8, 8, 3)
	require.NoError(t, err)
	assert.Empty(t, gcn.AggrOf())
}
