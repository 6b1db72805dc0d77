package layers

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/qgtc/qgtc/subgraph"
)

// pygFixture is a state dict under the exact names and shapes PyG 2.x's
// BasicGNN models save (torch_geometric.nn.models.GCN, GraphSAGE, GIN;
// in → hid → out over two convolutions), with random float32 values.
// ginNorm adds the MLPs' batch norms (norm="batch_norm" inside GINConv's
// MLP, as a custom GIN of GINConv(MLP(..., norm="batch_norm")) has them).
func pygFixture(kind string, in, hid, out int, ginNorm bool, seed uint64) map[string]*safetensors.Tensor {
	r := rand.New(rand.NewPCG(seed, 3))
	ts := map[string]*safetensors.Tensor{}
	put := func(name string, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.5)
		}
		ts[name] = safetensors.F32(v, shape...)
	}
	for i, w := range [][2]int{{in, hid}, {hid, out}} {
		p := "convs." + string(rune('0'+i)) + "."
		switch kind {
		case GCN:
			put(p+"lin.weight", w[1], w[0])
			put(p+"bias", w[1])
		case SAGE:
			put(p+"lin_l.weight", w[1], w[0])
			put(p+"lin_l.bias", w[1])
			put(p+"lin_r.weight", w[1], w[0])
		case GIN: // MLP([in, out, out]); eps is a buffer, saved without train_eps
			ts[p+"eps"] = safetensors.F32([]float32{0}, 1)
			put(p+"nn.lins.0.weight", w[1], w[0])
			put(p+"nn.lins.0.bias", w[1])
			put(p+"nn.lins.1.weight", w[1], w[1])
			put(p+"nn.lins.1.bias", w[1])
			if ginNorm {
				q := p + "nn.norms.0.module."
				put(q+"weight", w[1])
				put(q+"bias", w[1])
				put(q+"running_mean", w[1])
				put(q+"running_var", w[1])
				v := ts[q+"running_var"]
				f, _ := v.Float32s()
				for j := range f {
					f[j] = 0.5 + f[j]*f[j] // a variance is positive
				}
				ts[q+"running_var"] = safetensors.F32(f, w[1])
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], 200)
				ts[q+"num_batches_tracked"] = &safetensors.Tensor{DType: "I64", Shape: []int{}, Data: b[:]}
			}
		}
	}
	return ts
}

func pygFile(t *testing.T, ts map[string]*safetensors.Tensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, safetensors.Write(&buf, ts, map[string]string{"format": "pt"}))
	return buf.Bytes()
}

func f32s(t *testing.T, ts map[string]*safetensors.Tensor, name string) []float32 {
	t.Helper()
	v, err := ts[name].Float32s()
	require.NoError(t, err)
	return v
}

// TestReadPyG: each kind's state dict becomes the model whose tensors are
// the file's, in qgtc's places, uncalibrated; ReadModelOrPyG takes the
// same file.
func TestReadPyG(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		norm       bool
	}{{"gcn", GCN, false}, {"sage", SAGE, false}, {"gin", GIN, false}, {"gin-bn", GIN, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := pygFixture(tc.kind, 7, 5, 3, tc.norm, 1)
			file := pygFile(t, ts)
			m, err := ReadPyG(bytes.NewReader(file))
			require.NoError(t, err)
			assert.Equal(t, tc.kind, m.Kind)
			assert.Equal(t, 3, m.Classes)
			assert.False(t, m.Calibrated)
			assert.True(t, m.NormRows)
			require.Len(t, m.Layers, 2)
			for i, ly := range m.Layers {
				p := "convs." + string(rune('0'+i)) + "."
				switch tc.kind {
				case GCN:
					assert.Equal(t, f32s(t, ts, p+"lin.weight"), ly.Lin1.W)
					assert.Equal(t, f32s(t, ts, p+"bias"), ly.Lin1.B)
				case SAGE:
					assert.Equal(t, f32s(t, ts, p+"lin_l.weight"), ly.Lin1.W)
					assert.Equal(t, f32s(t, ts, p+"lin_l.bias"), ly.Lin1.B)
					assert.Equal(t, f32s(t, ts, p+"lin_r.weight"), ly.Lin2.W)
					assert.Nil(t, ly.Lin2.B)
				case GIN:
					assert.Equal(t, f32s(t, ts, p+"nn.lins.0.weight"), ly.Lin1.W)
					assert.Equal(t, f32s(t, ts, p+"nn.lins.1.bias"), ly.Lin2.B)
					if tc.norm {
						require.NotNil(t, ly.BN)
						assert.Equal(t, f32s(t, ts, p+"nn.norms.0.module.running_var"), ly.BN.Var)
					} else {
						assert.Nil(t, ly.BN)
					}
				}
			}
			m2, o, err := ReadModelOrPyG(bytes.NewReader(file))
			require.NoError(t, err)
			assert.Nil(t, o)
			assert.Equal(t, m, m2)
		})
	}
}

// TestReadPyGRejects: a layout qgtc's models do not compute is one error
// naming what is wrong, never a model that computes something else.
func TestReadPyGRejects(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		edit       func(ts map[string]*safetensors.Tensor)
		want       string
	}{
		{"gin trained eps", GIN, func(ts map[string]*safetensors.Tensor) {
			ts["convs.1.eps"] = safetensors.F32([]float32{0.25}, 1)
		}, "eps 0.25"},
		{"jk", GCN, func(ts map[string]*safetensors.Tensor) {
			ts["lin.weight"] = safetensors.F32(make([]float32, 9), 3, 3)
		}, "tensor lin.weight"},
		{"norm between layers", GIN, func(ts map[string]*safetensors.Tensor) {
			ts["norms.0.module.weight"] = safetensors.F32(make([]float32, 5), 5)
		}, "tensor norms.0.module.weight"},
		{"three-linear GIN MLP", GIN, func(ts map[string]*safetensors.Tensor) {
			ts["convs.0.nn.lins.2.weight"] = safetensors.F32(make([]float32, 25), 5, 5)
		}, "tensor convs.0.nn.lins.2.weight"},
		{"sage without root weight", SAGE, func(ts map[string]*safetensors.Tensor) {
			delete(ts, "convs.1.lin_r.weight")
		}, "root_weight=False"},
		{"widths that do not chain", GCN, func(ts map[string]*safetensors.Tensor) {
			ts["convs.1.lin.weight"] = safetensors.F32(make([]float32, 12), 3, 4)
		}, "convs.1.lin.weight has shape [3 4], want [out, 5]"},
		{"bias of the wrong width", SAGE, func(ts map[string]*safetensors.Tensor) {
			ts["convs.0.lin_l.bias"] = safetensors.F32(make([]float32, 4), 4)
		}, "convs.0.lin_l.bias has shape [4], want [5]"},
		{"batch norm of a weight only", GIN, func(ts map[string]*safetensors.Tensor) {
			ts["convs.0.nn.norms.0.module.weight"] = safetensors.F32(make([]float32, 5), 5)
		}, "no tensor convs.0.nn.norms.0.module.bias"},
		{"integer weights", GCN, func(ts map[string]*safetensors.Tensor) {
			ts["convs.0.bias"] = &safetensors.Tensor{DType: "I32", Shape: []int{5}, Data: make([]byte, 20)}
		}, "convs.0.bias"},
		{"missing layer", GCN, func(ts map[string]*safetensors.Tensor) {
			delete(ts, "convs.0.lin.weight")
		}, "not a PyG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := pygFixture(tc.kind, 7, 5, 3, false, 2)
			tc.edit(ts)
			_, err := ReadPyG(bytes.NewReader(pygFile(t, ts)))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrModel)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
	// A safetensors file that is neither a qgtc model nor a PyG state dict.
	_, _, err := ReadModelOrPyG(bytes.NewReader(pygFile(t, map[string]*safetensors.Tensor{"w": safetensors.F32([]float32{1}, 1)})))
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "qgtc.qmodel"), err.Error())
}

// TestPyGLogits: a PyG state dict run in qgtc's fp32 path gives the logits
// of PyG's formulas, written out here in float64 on the whole graph (GCNConv:
// D^-1/2 (A+I) D^-1/2 X Wᵀ + b with degrees counting the self-loop;
// SAGEConv: lin_l(mean of the neighbours) + lin_r(x); GINConv: MLP(x + Σ
// neighbours), the MLP's batch norm on its running statistics with ε 1e-5;
// ReLU between convolutions; features rows scaled to sum 1, PyG's
// NormalizeFeatures). qgtc applies the linears before the aggregations, so
// the two agree up to float32 rounding.
func TestPyGLogits(t *testing.T) {
	ds := qSynth(t, 90, 3, 12, false, 4)
	d, err := NewDataScaled(ds, nil, 1, 1, ScaleRows)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, 8)
	require.NoError(t, err)
	b := d.Eval[0]
	for _, tc := range []struct {
		name, kind string
		norm       bool
	}{{"gcn", GCN, false}, {"sage", SAGE, false}, {"gin", GIN, false}, {"gin-bn", GIN, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := pygFixture(tc.kind, 12, 6, 3, tc.norm, 5)
			m, err := ReadPyG(bytes.NewReader(pygFile(t, ts)))
			require.NoError(t, err)
			_, got, err := m.simForward(b, in, false, -1, 0, nil)
			require.NoError(t, err)
			want := pygReference(t, ds, ts, tc.kind)
			for r, v := range b.Nodes {
				for c := range 3 {
					w := want[int(v)][c]
					assert.InDelta(t, w, got[r*3+c], 1e-5*math.Max(1, math.Abs(w)), "node %d class %d", v, c)
				}
			}
		})
	}
}

// pygReference is PyG's forward of state dict ts on ds (see TestPyGLogits).
func pygReference(t *testing.T, ds *subgraph.Dataset, ts map[string]*safetensors.Tensor, kind string) [][]float64 {
	g, f := ds.Graph, ds.Features
	n := g.N()
	x := make([][]float64, n)
	for v := range n {
		x[v] = make([]float64, f.Cols)
		var s float64
		for p := f.Indptr[v]; p < f.Indptr[v+1]; p++ {
			x[v][f.Indices[p]] = float64(f.Values[p])
			s += float64(f.Values[p])
		}
		for j := range x[v] {
			if s != 0 {
				x[v][j] /= s
			}
		}
	}
	lin := func(h [][]float64, w string, bias string) [][]float64 {
		wt := ts[w]
		W := f32s(t, ts, w)
		out, inW := wt.Shape[0], wt.Shape[1]
		var B []float32
		if bias != "" {
			B = f32s(t, ts, bias)
		}
		y := make([][]float64, len(h))
		for v := range h {
			y[v] = make([]float64, out)
			for o := range out {
				var s float64
				for k := range inW {
					s += h[v][k] * float64(W[o*inW+k])
				}
				if B != nil {
					s += float64(B[o])
				}
				y[v][o] = s
			}
		}
		return y
	}
	add := func(a, b [][]float64) [][]float64 {
		for v := range a {
			for j := range a[v] {
				a[v][j] += b[v][j]
			}
		}
		return a
	}
	agg := func(h [][]float64, each func(v, u int) float64, self func(v int) float64) [][]float64 {
		y := make([][]float64, n)
		for v := range n {
			y[v] = make([]float64, len(h[v]))
			nb := g.Indices[g.Indptr[v]:g.Indptr[v+1]]
			for _, u := range nb {
				for j := range y[v] {
					y[v][j] += each(v, int(u)) * h[u][j]
				}
			}
			for j := range y[v] {
				y[v][j] += self(v) * h[v][j]
			}
		}
		return y
	}
	deg := func(v int) float64 { return float64(g.Indptr[v+1] - g.Indptr[v]) }
	h := x
	for i := range 2 {
		p := "convs." + string(rune('0'+i)) + "."
		switch kind {
		case GCN:
			z := lin(agg(h, func(v, u int) float64 { return 1 / math.Sqrt((deg(v)+1)*(deg(u)+1)) },
				func(v int) float64 { return 1 / (deg(v) + 1) }), p+"lin.weight", "")
			bias := f32s(t, ts, p+"bias")
			for v := range z {
				for j := range z[v] {
					z[v][j] += float64(bias[j])
				}
			}
			h = z
		case SAGE:
			mean := agg(h, func(v, u int) float64 { return 1 / deg(v) }, func(int) float64 { return 0 })
			h = add(lin(mean, p+"lin_l.weight", p+"lin_l.bias"), lin(h, p+"lin_r.weight", ""))
		case GIN:
			z := lin(agg(h, func(int, int) float64 { return 1 }, func(int) float64 { return 1 }), p+"nn.lins.0.weight", p+"nn.lins.0.bias")
			if q := p + "nn.norms.0.module."; ts[q+"weight"] != nil {
				gm, bt, mu, vr := f32s(t, ts, q+"weight"), f32s(t, ts, q+"bias"), f32s(t, ts, q+"running_mean"), f32s(t, ts, q+"running_var")
				for v := range z {
					for j := range z[v] {
						z[v][j] = (z[v][j]-float64(mu[j]))/math.Sqrt(float64(vr[j])+1e-5)*float64(gm[j]) + float64(bt[j])
					}
				}
			}
			for v := range z {
				for j := range z[v] {
					z[v][j] = math.Max(0, z[v][j])
				}
			}
			h = lin(z, p+"nn.lins.1.weight", p+"nn.lins.1.bias")
		}
		if i == 0 {
			for v := range h {
				for j := range h[v] {
					h[v][j] = math.Max(0, h[v][j])
				}
			}
		}
	}
	return h
}

// FuzzReadPyG: any bytes give a model that validates or an error, never a
// panic.
func FuzzReadPyG(f *testing.F) {
	for i, kind := range []string{GCN, SAGE, GIN} {
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, pygFixture(kind, 3, 2, 2, i == 2, 1), nil); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadPyG(bytes.NewReader(b))
		if err == nil {
			require.NoError(t, m.Validate(m.Layers[0].Lin1.In))
		}
	})
}
