package fp

import (
	"fmt"
	"math/rand/v2"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/internal/nn"
)

// GIN is Xu et al.'s graph isomorphism network with a learnable ε: per
// layer h = MLP((1+ε)·x + Σ_{u→v} x_u) with MLP = Linear, ReLU, Linear
// (Norm "batch": Linear, BatchNorm, ReLU, Linear); ReLU and dropout between
// layers. Parameters (torch_geometric.nn.models.GIN(..., train_eps=True),
// whose GINConv MLPs are MLP([in, out, out], norm=None); the batch-norm
// variant is a ModuleList convs of GINConv(MLP([in, out, out]),
// train_eps=True) with the MLP's default batch norm):
//
//	convs.{i}.eps [1]
//	convs.{i}.nn.lins.0.weight [hid, in]   convs.{i}.nn.lins.0.bias [hid]
//	convs.{i}.nn.norms.0.module.{weight,bias,running_mean,running_var} [hid] (Norm "batch")
//	convs.{i}.nn.lins.1.weight [out, hid]  convs.{i}.nn.lins.1.bias [out]
//
// On the Cora split batch norm costs accuracy (its eval-mode statistics
// swing from epoch to epoch with 140 labels), hence the default.
//
// where hid is the layer's output width. The
// first Linear runs before the aggregation, which is exact because both
// are linear, so sparse input features never need densifying.
type GIN struct {
	fpModel
	layers []ginLayer
}

type ginLayer struct {
	eps, w0, b0, w1, b1 *nn.Param
	bn                  *batchNorm // nil without batch norm
}

// batchNorm is a BatchNorm1d's parameters, buffers and batch counter.
type batchNorm struct {
	gamma, beta, mean, vr *nn.Param
	tracked               int64
}

func (m *fpModel) newBatchNorm(prefix string, n int) batchNorm {
	bn := batchNorm{
		gamma: m.add(nn.NewParam(prefix+".weight", 1, n, n)),
		beta:  m.add(nn.NewParam(prefix+".bias", 1, n, n)),
		mean:  m.add(nn.NewBuffer(prefix+".running_mean", n)),
		vr:    m.add(nn.NewBuffer(prefix+".running_var", n)),
	}
	for i := range n {
		bn.gamma.Data[i], bn.vr.Data[i] = 1, 1
	}
	return bn
}

func (bn *batchNorm) forward(tp *nn.Tape, x *nn.Tensor) *nn.Tensor {
	if tp.Train {
		bn.tracked++
	}
	return tp.BatchNorm(x, bn.gamma.Tensor, bn.beta.Tensor, bn.mean.Tensor, bn.vr.Tensor, learn.BNMomentum, learn.BNEps)
}

func newGIN(cfg Config, r *rand.Rand) *GIN {
	m := &GIN{fpModel: fpModel{cfg: cfg}}
	for i := range cfg.Layers {
		in, out := cfg.widths(i)
		p := fmt.Sprintf("convs.%d.", i)
		l := ginLayer{eps: m.add(nn.NewParam(p+"eps", 1, 1, 1))}
		l.w0 = m.add(nn.NewParam(p+"nn.lins.0.weight", out, in))
		l.b0 = m.add(nn.NewParam(p+"nn.lins.0.bias", 1, out, out))
		kaiming(r, l.w0, in)
		kaiming(r, l.b0, in)
		if cfg.Norm == "batch" {
			bn := m.newBatchNorm(p+"nn.norms.0.module", out)
			l.bn = &bn
		}
		l.w1 = m.add(nn.NewParam(p+"nn.lins.1.weight", out, out))
		l.b1 = m.add(nn.NewParam(p+"nn.lins.1.bias", 1, out, out))
		kaiming(r, l.w1, out)
		kaiming(r, l.b1, out)
		m.layers = append(m.layers, l)
	}
	return m
}

// Forward implements Model.
func (m *GIN) Forward(tp *nn.Tape, in *Input) *nn.Tensor {
	x := in.X
	for i := range m.layers {
		l := &m.layers[i]
		if i > 0 {
			x = tp.ReLU(x)
		}
		x = tp.Dropout(x, m.cfg.Dropout)
		h := m.hooks.linear(tp, i, x, l.w0, nil)
		h = tp.AddScaled(tp.Propagate(in.Graph, nil, h), h, l.eps.Tensor)
		h = tp.AddBias(h, l.b0.Tensor)
		if l.bn != nil {
			h = l.bn.forward(tp, h)
		}
		h = tp.ReLU(h)
		x = m.hooks.linear(tp, i, h, l.w1, l.b1)
	}
	return x
}
