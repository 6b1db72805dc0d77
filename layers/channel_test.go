package layers

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/safetensors"
)

// channelModel is preparedNorm's model calibrated again with ChannelZ.
func channelModel(t *testing.T, c qCase, abits, wbits int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	m, d, in := preparedCase(t, c, abits, wbits, 3, binary)
	m.ChannelZ = true
	m.SetSignWeights(true)
	require.NoError(t, m.Calibrate(d, in, 0))
	for i, ly := range m.Layers {
		require.Len(t, ly.ZScale, ly.Lin1.Out, "layer %d", i)
		require.NotEqual(t, float32(1), ly.ZScale[0], "layer %d: the test must cover a scale that is not the identity", i)
		require.NotEqual(t, float32(0), ly.ZShift[0], "layer %d", i)
	}
	return m, d, in
}

// TestChannelZExact: with per-channel Z ranges the bit kernels' codes and
// logits (bit planes or sparse codes; dense or edge-list aggregations on
// the CPU backend) equal the simulation QAT trains, bit for bit.
func TestChannelZExact(t *testing.T) {
	for _, c := range qCases {
		for _, bits := range [][2]int{{1, 1}, {2, 2}, {4, 4}, {8, 2}} {
			binary := bits[0] == 1
			t.Run(fmt.Sprintf("%s/a=%d/w=%d", c.name, bits[0], bits[1]), func(t *testing.T) {
				m, d, in := channelModel(t, c, bits[0], bits[1], binary)
				plan, err := m.Compile(bmm.NewGenericBackend())
				require.NoError(t, err)
				for _, b := range d.Eval {
					st, want, err := m.simForward(b, in, true, -1, 0, nil)
					require.NoError(t, err)
					x, err := in.Pack(b.Nodes)
					require.NoError(t, err)
					trace := func(op int, codes *bittensor.Tensor) {
						if codes != nil {
							require.Equal(t, st.codes[op], codes.Ints(), "codes of op %d", op)
						}
					}
					got, _, err := plan.Forward(b, x, trace)
					require.NoError(t, err)
					sp, _, err := plan.ForwardSparse(b, in, trace)
					require.NoError(t, err)
					for i := range want {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "logit %d", i)
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(sp[i]), "sparse: logit %d", i)
					}
				}
				pred, err := m.Predict(d, in, true)
				require.NoError(t, err)
				for _, mode := range []AggMode{AggDense, AggSparse} {
					p, err := m.Compile(cpu.NewBackend(nil))
					require.NoError(t, err)
					p.Agg = mode
					r, err := p.Run(d, in, false, nil)
					require.NoError(t, err)
					assert.Equal(t, pred, r.Pred, "cpu backend, %v", mode)
					p.Close()
				}
			})
		}
	}
}

// TestChannelZMixed: a full-precision op reading per-channel codes (the
// mixed passes calibration weighs ranges with) sees the values the
// quantized aggregation sums: the logits of the pass quantized up to Z
// match the fully quantized aggregation's within float rounding at 8 bits.
func TestChannelZMixed(t *testing.T) {
	m, d, in := channelModel(t, qCase{kind: GCN, norm: NormNone}, 8, 8, false)
	b := d.Eval[0]
	_, q, err := m.simForwardUpTo(b, in, 2, 1, 0, nil) // Z and its aggregation quantized
	require.NoError(t, err)
	_, f, err := m.simForwardUpTo(b, in, 1, 1, 0, nil) // Z quantized, its aggregation not
	require.NoError(t, err)
	require.Equal(t, len(q), len(f))
	_, ref, err := m.simForwardUpTo(b, in, 0, 1, 0, nil) // full precision
	require.NoError(t, err)
	var diffQF, diffRef float64
	for i := range q {
		diffQF = max(diffQF, math.Abs(float64(q[i]-f[i])))
		diffRef = max(diffRef, math.Abs(float64(ref[i]-f[i])))
	}
	assert.Less(t, diffQF, 1e-4, "the aggregation of the same codes, quantized epilogue or dequantized values")
	assert.Greater(t, diffRef, 0.0, "the quantized pass differs from full precision")
}

// TestChannelZFile: a model with per-channel Z ranges and sign weights
// saves as format 4 and loads back the same; either in a format 3 file is
// refused, and a model with neither is still format 3.
func TestChannelZFile(t *testing.T) {
	m, d, in := channelModel(t, qCase{kind: GIN, norm: NormBatch}, 2, 2, false)
	var buf bytes.Buffer
	_, err := m.WriteTo(&buf)
	require.NoError(t, err)
	raw := buf.Bytes()
	back, err := ReadModel(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.True(t, back.ChannelZ)
	assert.True(t, back.SignWeights())
	for i := range m.Layers {
		assert.Equal(t, m.Layers[i].ZScale, back.Layers[i].ZScale)
		assert.Equal(t, m.Layers[i].ZShift, back.Layers[i].ZShift)
	}
	want, err := m.Predict(d, in, true)
	require.NoError(t, err)
	got, err := back.Predict(d, in, true)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	ts, meta, err := safetensors.Read(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.Contains(t, meta["qgtc.qmodel"], `"format":4`)
	_, err = modelFrom(ts, strings.Replace(meta["qgtc.qmodel"], `"format":4`, `"format":3`, 1))
	assert.ErrorIs(t, err, ErrModel)

	plain := m.Clone()
	plain.ChannelZ = false
	plain.SetSignWeights(false)
	require.NoError(t, plain.Calibrate(d, in, 0))
	assert.Nil(t, plain.Layers[0].ZScale, "Calibrate without ChannelZ clears the ranges")
	buf.Reset()
	_, err = plain.WriteTo(&buf)
	require.NoError(t, err)
	_, meta, err = safetensors.Read(&buf)
	require.NoError(t, err)
	assert.Contains(t, meta["qgtc.qmodel"], `"format":3`)
}

// TestPreciseBN: after full-precision training with PreciseBN on one
// batch, the running statistics are the batch's own, so inference (the
// folded running statistics) gives the logits of a training-mode pass
// without dropout; the moving average does not.
func TestPreciseBN(t *testing.T) {
	ds := qSynth(t, 300, 4, 40, false, 3)
	d, err := NewData(ds, nil, 1, 1)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, 8)
	require.NoError(t, err)
	gap := func(precise bool) float64 {
		m, err := NewModel(GIN, 40, 16, 4, 2, 8, 8, 5)
		require.NoError(t, err)
		require.NoError(t, m.SetNorm(NormBatch))
		_, err = m.TrainFP32(d, in, TrainConfig{Epochs: 8, LR: 0.01, Dropout: 0.5, Seed: 1, PreciseBN: precise})
		require.NoError(t, err)
		b := d.Eval[0]
		_, eval, err := m.simForward(b, in, false, -1, 0, nil)
		require.NoError(t, err)
		c := m.Clone() // the training-mode pass moves the running statistics
		_, train, err := c.simForward(b, in, false, -1, 0, rand.New(rand.NewPCG(0, 0)))
		require.NoError(t, err)
		var g float64
		for i := range eval {
			g = max(g, math.Abs(float64(eval[i]-train[i])))
		}
		return g
	}
	assert.Less(t, gap(true), 1e-3)
	assert.Greater(t, gap(false), 1e-2)
}

// TestChannelZQAT: QAT (with learned step sizes) trains a model with
// per-channel Z ranges, which stay fixed, and its bit-kernel inference
// still predicts what the simulation does.
func TestChannelZQAT(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := channelModel(t, c, 1, 1, true)
			scale := m.Layers[0].ZScale
			_, err := m.QAT(d, in, TrainConfig{Epochs: 2, LR: 0.01, Seed: 2, LearnScales: true})
			require.NoError(t, err)
			assert.Equal(t, scale, m.Layers[0].ZScale)
			pred, err := m.Predict(d, in, true)
			require.NoError(t, err)
			p, err := m.Compile(cpu.NewBackend(nil))
			require.NoError(t, err)
			defer p.Close()
			r, err := p.Run(d, in, true, nil)
			require.NoError(t, err)
			assert.Equal(t, pred, r.Pred)
		})
	}
}
