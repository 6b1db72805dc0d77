package fp

import (
	"fmt"
	"math/rand/v2"

	"github.com/qgtc/qgtc/internal/nn"
)

// GAT is Veličković et al.'s graph attention network with self-loops:
// per layer h = x·Wᵀ split into heads, e_uv = LeakyReLU(a_srcᵀh_u +
// a_dstᵀh_v), α = softmax over v's in-edges, x'_v = Σ α_uv h_u; hidden
// layers concatenate Heads heads of Hidden/Heads features, the output layer
// averages OutHeads heads; ELU and dropout between layers, attention
// dropout on α. Parameters (torch_geometric.nn.models.GAT):
//
//	convs.{i}.lin.weight [heads·out, in]
//	convs.{i}.att_src [1, heads, out]  convs.{i}.att_dst [1, heads, out]
//	convs.{i}.bias [heads·out] (hidden layers) or [out] (output layer)
//
// The attention projections run per vertex (O(N·H)) before the scatter
// (propagation-postponed reorganization), and the scatter, edge softmax
// and aggregation are one fused op that keeps no O(E) values for the
// backward pass (templates.GATAggregate). Attention dropout runs inside it too
// (templates.GATAggregateDropout): its mask is hashed from a seed and each
// edge's id and head, and the backward pass hashes it again rather than
// storing it, so training with AttnDropout > 0 stays O(N·H) as well.
type GAT struct {
	fpModel
	layers []gatLayer
}

type gatLayer struct {
	w, src, dst, b *nn.Param
	heads          int
	concat         bool
}

func newGAT(cfg Config, r *rand.Rand) *GAT {
	m := &GAT{fpModel: fpModel{cfg: cfg}}
	for i := range cfg.Layers {
		in, out := cfg.widths(i)
		l := gatLayer{heads: cfg.Heads, concat: i < cfg.Layers-1}
		if l.concat {
			out /= cfg.Heads
		} else {
			l.heads = cfg.OutHeads
		}
		h := l.heads
		p := fmt.Sprintf("convs.%d.", i)
		l.w = m.add(nn.NewParam(p+"lin.weight", h*out, in))
		glorot(r, l.w, in, h*out)
		l.src = m.add(nn.NewParam(p+"att_src", 1, h*out, 1, h, out))
		l.dst = m.add(nn.NewParam(p+"att_dst", 1, h*out, 1, h, out))
		glorot(r, l.src, h, out)
		glorot(r, l.dst, h, out)
		bw := out
		if l.concat {
			bw = h * out
		}
		l.b = m.add(nn.NewParam(p+"bias", 1, bw, bw))
		m.layers = append(m.layers, l)
	}
	return m
}

// Forward implements Model.
func (m *GAT) Forward(tp *nn.Tape, in *Input) *nn.Tensor {
	g, _ := in.gcn()
	x := in.X
	for i, l := range m.layers {
		if i > 0 {
			x = tp.ELU(x, 1)
		}
		x = tp.Dropout(x, m.cfg.Dropout)
		h := m.hooks.linear(tp, i, x, l.w, nil)
		src := tp.HeadDot(h, l.src.Tensor, l.heads)
		dst := tp.HeadDot(h, l.dst.Tensor, l.heads)
		// Attention dropout applies only when training (the tape knows).
		x = tp.GATAggregateDropout(g, h, src, dst, l.heads, m.cfg.Slope, m.cfg.AttnDropout)
		if !l.concat && l.heads > 1 {
			x = tp.MeanHeads(x, l.heads)
		}
		x = tp.AddBias(x, l.b.Tensor)
	}
	return x
}
