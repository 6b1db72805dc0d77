package fp

import (
	"bytes"
	"testing"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stFile writes tensors and metadata as a safetensors file (the codec's
// byte layout is internal/safetensors' to test).
func stFile(t *testing.T, ts map[string]*safetensors.Tensor, meta map[string]string) []byte {
	var b bytes.Buffer
	require.NoError(t, safetensors.Write(&b, ts, meta))
	return b.Bytes()
}

// TestLoadParamsPyG loads the state dict of
// torch_geometric.nn.models.GCN(3, 2, num_layers=1, out_channels=2) as
// safetensors.torch.save_file writes it (names, shapes, "format": "pt"),
// and checks the values land in the right places, in PyTorch's [out, in]
// order.
func TestLoadParamsPyG(t *testing.T) {
	w := []float32{1, 2, 3, 4, 5, 6} // [[1,2,3],[4,5,6]]
	file := stFile(t, map[string]*safetensors.Tensor{
		"convs.0.bias": safetensors.F32([]float32{0.5, -0.5}), "convs.0.lin.weight": safetensors.F32(w, 2, 3),
	}, map[string]string{"format": "pt"})
	m, err := New(Config{Model: "gcn", In: 3, Out: 2, Layers: 1}, 1)
	require.NoError(t, err)
	require.NoError(t, LoadParams(m, bytes.NewReader(file)))
	ps := m.Params()
	assert.Equal(t, "convs.0.lin.weight", ps[0].Name)
	assert.Equal(t, w, ps[0].Data)
	assert.Equal(t, []float32{0.5, -0.5}, ps[1].Data)
	// x·Wᵀ for x = [1, 0, 0] picks W's first column.
	x := nn.FromData(1, 3, []float32{1, 0, 0})
	y := nn.NewTape(false, nil).MatMulT(x, ps[0].Tensor)
	assert.Equal(t, []float32{1, 4}, y.Data)

	bad := stFile(t, map[string]*safetensors.Tensor{"convs.0.bias": safetensors.F32([]float32{1, 2})}, nil)
	assert.ErrorIs(t, LoadParams(m, bytes.NewReader(bad)), ErrSafetensors, "missing weight")
	wrong := stFile(t, map[string]*safetensors.Tensor{
		"convs.0.bias": safetensors.F32([]float32{1, 2, 3}), "convs.0.lin.weight": safetensors.F32(w, 2, 3),
	}, nil)
	assert.ErrorIs(t, LoadParams(m, bytes.NewReader(wrong)), ErrSafetensors, "wrong shape")
}

func TestSaveLoadRoundTrip(t *testing.T) {
	d := synthData(t, 40, 3, 10, 4)
	for _, c := range testConfigs {
		t.Run(name(c), func(t *testing.T) {
			c.In, c.Out = 10, 3
			m, err := New(c, 9)
			require.NoError(t, err)
			_, err = Train(m, d, TrainConfig{Epochs: 3, LR: 0.01, Seed: 1}) // move BN statistics
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, Save(&buf, m))
			m2, err := Load(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			assert.Equal(t, m.Config(), m2.Config())
			for i, p := range m.Params() {
				assert.Equal(t, p.Data, m2.Params()[i].Data, p.Name)
			}
			a := m.Forward(nn.NewTape(false, nil), d.Input)
			b := m2.Forward(nn.NewTape(false, nil), d.Input)
			assert.Equal(t, a.Data, b.Data)
		})
	}
}

func TestLoadMetadataErrors(t *testing.T) {
	a := map[string]*safetensors.Tensor{"a": safetensors.F32([]float32{1, 2})}
	_, err := Load(bytes.NewReader(stFile(t, a, nil)))
	assert.ErrorIs(t, err, ErrSafetensors, "no model metadata")
	_, err = Load(bytes.NewReader(stFile(t, nil, map[string]string{"qgtc.model": "gcn", "qgtc.in": "x"})))
	assert.ErrorIs(t, err, ErrSafetensors, "bad metadata value")
	_, err = Load(bytes.NewReader(stFile(t, nil, map[string]string{"qgtc.model": "gcn", "qgtc.in": "0"})))
	assert.ErrorIs(t, err, ErrSafetensors, "metadata of an impossible model")
}

// TestLoadParamsGATLegacyName: PyG before 2.3 saved GATConv's projection as
// lin_src.weight; it loads as lin.weight.
func TestLoadParamsGATLegacyName(t *testing.T) {
	m, err := New(Config{Model: "gat", In: 2, Hidden: 4, Heads: 2, Out: 3, Layers: 1}, 1)
	require.NoError(t, err)
	ts := map[string]*safetensors.Tensor{}
	var want [][]float32
	for i, p := range m.Params() {
		vals := make([]float32, len(p.Data))
		for j := range vals {
			vals[j] = float32(10*i + j)
		}
		want = append(want, vals)
		name := p.Name
		if name == "convs.0.lin.weight" {
			name = "convs.0.lin_src.weight"
		}
		ts[name] = safetensors.F32(vals, p.Shape...)
	}
	var buf bytes.Buffer
	require.NoError(t, safetensors.Write(&buf, ts, nil))
	require.NoError(t, LoadParams(m, &buf))
	for i, p := range m.Params() {
		assert.Equal(t, want[i], p.Data, p.Name)
	}
}

// TestSaveIsPyGStateDict: Save writes exactly the tensors (names, shapes,
// dtypes) of PyG 2.x's BasicGNN state dict, so load_state_dict (strict)
// takes the file: GCN(6, 4, 2, out_channels=3), GraphSAGE(...), and
// GIN(...) (its eps a buffer without train_eps, a parameter with it; saved
// either way). The names are PyG's gcn_conv.py, sage_conv.py, gin_conv.py
// and mlp.py.
func TestSaveIsPyGStateDict(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  map[string][]int
	}{
		{"gcn", map[string][]int{"convs.0.lin.weight": {4, 6}, "convs.0.bias": {4}, "convs.1.lin.weight": {3, 4}, "convs.1.bias": {3}}},
		{"sage", map[string][]int{"convs.0.lin_l.weight": {4, 6}, "convs.0.lin_l.bias": {4}, "convs.0.lin_r.weight": {4, 6},
			"convs.1.lin_l.weight": {3, 4}, "convs.1.lin_l.bias": {3}, "convs.1.lin_r.weight": {3, 4}}},
		{"gin", map[string][]int{"convs.0.eps": {1}, "convs.0.nn.lins.0.weight": {4, 6}, "convs.0.nn.lins.0.bias": {4},
			"convs.0.nn.lins.1.weight": {4, 4}, "convs.0.nn.lins.1.bias": {4},
			"convs.1.eps": {1}, "convs.1.nn.lins.0.weight": {3, 4}, "convs.1.nn.lins.0.bias": {3},
			"convs.1.nn.lins.1.weight": {3, 3}, "convs.1.nn.lins.1.bias": {3}}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, err := New(Config{Model: tc.model, In: 6, Hidden: 4, Out: 3, Layers: 2}, 1)
			require.NoError(t, err)
			var buf bytes.Buffer
			require.NoError(t, Save(&buf, m))
			ts, _, err := safetensors.Read(&buf)
			require.NoError(t, err)
			got := map[string][]int{}
			for name, tn := range ts {
				got[name] = tn.Shape
				assert.Equal(t, "F32", tn.DType, name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
