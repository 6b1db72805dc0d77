package fp

import (
	"fmt"
	"math/rand/v2"

	"github.com/qgtc/qgtc/templates"

	"github.com/qgtc/qgtc/internal/nn"
)

// SAGE is GraphSAGE with mean or max aggregation: per layer
// x' = lin_l(agg_{u→v} x_u) + lin_r(x_v), ReLU and dropout between layers.
// Parameters (torch_geometric.nn.models.GraphSAGE):
//
//	convs.{i}.lin_l.weight [out, in]  convs.{i}.lin_l.bias [out]
//	convs.{i}.lin_r.weight [out, in]
//
// Mean aggregation is linear, so it runs after lin_l (exact, and sparse
// features stay sparse); max aggregation runs on the features themselves,
// densifying sparse ones.
type SAGE struct {
	fpModel
	wl, bl, wr []*nn.Param
}

func newSAGE(cfg Config, r *rand.Rand) *SAGE {
	m := &SAGE{fpModel: fpModel{cfg: cfg}}
	for i := range cfg.Layers {
		in, out := cfg.widths(i)
		p := fmt.Sprintf("convs.%d.", i)
		wl := m.add(nn.NewParam(p+"lin_l.weight", out, in))
		bl := m.add(nn.NewParam(p+"lin_l.bias", 1, out, out))
		wr := m.add(nn.NewParam(p+"lin_r.weight", out, in))
		kaiming(r, wl, in)
		kaiming(r, bl, in)
		kaiming(r, wr, in)
		m.wl, m.bl, m.wr = append(m.wl, wl), append(m.bl, bl), append(m.wr, wr)
	}
	return m
}

// Forward implements Model.
func (m *SAGE) Forward(tp *nn.Tape, in *Input) *nn.Tensor {
	x := in.X
	for i := range m.cfg.Layers {
		if i > 0 {
			x = tp.ReLU(x)
		}
		x = tp.Dropout(x, m.cfg.Dropout)
		var nb *nn.Tensor
		if m.cfg.Aggr == "max" {
			nb = m.hooks.linear(tp, i, tp.Aggregate(in.Graph, x.Dense(), templates.Max), m.wl[i], m.bl[i])
		} else {
			nb = tp.AddBias(tp.Aggregate(in.Graph, m.hooks.linear(tp, i, x, m.wl[i], nil), templates.Mean), m.bl[i].Tensor)
		}
		x = tp.Add(nb, m.hooks.linear(tp, i, x, m.wr[i], nil))
	}
	return x
}
