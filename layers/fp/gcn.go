package fp

import (
	"fmt"
	"math/rand/v2"

	"github.com/qgtc/qgtc/internal/nn"
)

// fpModel holds what every full-precision model shares.
type fpModel struct {
	cfg    Config
	params []*nn.Param
	hooks  Hooks
}

func (m *fpModel) Config() Config      { return m.cfg }
func (m *fpModel) Params() []*nn.Param { return m.params }
func (m *fpModel) SetHooks(h Hooks)    { m.hooks = h }
func (m *fpModel) add(p *nn.Param) *nn.Param {
	m.params = append(m.params, p)
	return p
}

// GCN is Kipf & Welling's graph convolutional network: per layer
// X' = D^-1/2 (A+I) D^-1/2 X Wᵀ + b, ReLU and dropout between layers.
// Parameters (torch_geometric.nn.models.GCN):
//
//	convs.{i}.lin.weight [out, in]   convs.{i}.bias [out]
//
// Weight decay applies to the first layer only, as in Kipf's code.
type GCN struct {
	fpModel
	w, b []*nn.Param
}

func newGCN(cfg Config, r *rand.Rand) *GCN {
	m := &GCN{fpModel: fpModel{cfg: cfg}}
	for i := range cfg.Layers {
		in, out := cfg.widths(i)
		w := m.add(nn.NewParam(fmt.Sprintf("convs.%d.lin.weight", i), out, in))
		glorot(r, w, in, out)
		b := m.add(nn.NewParam(fmt.Sprintf("convs.%d.bias", i), 1, out, out))
		w.Decay, b.Decay = i == 0, i == 0
		m.w, m.b = append(m.w, w), append(m.b, b)
	}
	return m
}

// Forward implements Model.
func (m *GCN) Forward(tp *nn.Tape, in *Input) *nn.Tensor {
	g, w := in.gcn()
	x := in.X
	for i := range m.cfg.Layers {
		if i > 0 {
			x = tp.ReLU(x)
		}
		x = tp.Dropout(x, m.cfg.Dropout)
		x = m.hooks.linear(tp, i, x, m.w[i], nil)
		x = tp.AddBias(tp.Propagate(g, w, x), m.b[i].Tensor)
	}
	return x
}
