package fp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stFile assembles a safetensors file by hand from a header and data.
func stFile(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func f32le(v ...float32) []byte { return safetensors.F32(v).Data }

// TestLoadParamsPyG loads a hand-written file laid out the way
// safetensors.torch.save_file writes torch_geometric.nn.models.GCN(3, 2,
// num_layers=1, out_channels=2)'s state dict, and checks the values land
// in the right places, in PyTorch's [out, in] order.
func TestLoadParamsPyG(t *testing.T) {
	w := []float32{1, 2, 3, 4, 5, 6} // [[1,2,3],[4,5,6]]
	hdr := `{"__metadata__":{"format":"pt"},"convs.0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"convs.0.lin.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]}}`
	file := stFile(hdr, append(f32le(0.5, -0.5), f32le(w...)...))
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

	bad := stFile(`{"convs.0.bias":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32le(1, 2))
	assert.ErrorIs(t, LoadParams(m, bytes.NewReader(bad)), ErrSafetensors, "missing weight")
	wrong := stFile(`{"convs.0.bias":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},`+
		`"convs.0.lin.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[12,36]}}`, append(f32le(1, 2, 3), f32le(w...)...))
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
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	_, err := Load(bytes.NewReader(stFile(ok, f32le(1, 2))))
	assert.ErrorIs(t, err, ErrSafetensors, "no model metadata")
	_, err = Load(bytes.NewReader(stFile(`{"__metadata__":{"qgtc.model":"gcn","qgtc.in":"x"}}`, nil)))
	assert.ErrorIs(t, err, ErrSafetensors, "bad metadata value")
	_, err = Load(bytes.NewReader(stFile(`{"__metadata__":{"qgtc.model":"gcn","qgtc.in":"0"}}`, nil)))
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
