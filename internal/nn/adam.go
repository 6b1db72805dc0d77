package nn

import "math"

// Param is a named model tensor. Name is the PyTorch state_dict key and
// Shape the shape stored in files (the Tensor's Rows×Cols is how ops see
// it, e.g. GAT's att_src is [1, H, F] on file and 1×(H·F) here).
type Param struct {
	*Tensor
	Name   string
	Shape  []int
	Decay  bool // weight decay applies
	Buffer bool // state, not trained (batch-norm running statistics)
}

// NewParam returns a trainable parameter of the given file shape, seen by
// ops as rows×cols.
func NewParam(name string, rows, cols int, shape ...int) *Param {
	t := New(rows, cols).SetRequiresGrad(true)
	if len(shape) == 0 {
		shape = []int{rows, cols}
	}
	return &Param{Tensor: t, Name: name, Shape: shape, Decay: true}
}

// NewBuffer returns an untrained state tensor (no gradient, no decay).
func NewBuffer(name string, n int) *Param {
	return &Param{Tensor: New(1, n), Name: name, Shape: []int{n}, Buffer: true}
}

// Adam is PyTorch's Adam with L2 weight decay added to the gradient
// (torch.optim.Adam's weight_decay, as in the GCN and GAT papers' code).
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32

	step int
	m, v map[*Param][]float32
}

// NewAdam returns Adam with β = (0.9, 0.999) and ε = 1e-8.
func NewAdam(lr, weightDecay float32) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay,
		m: map[*Param][]float32{}, v: map[*Param][]float32{}}
}

// Step updates every trainable parameter from its gradient, then clears
// the gradients.
func (o *Adam) Step(params []*Param) {
	o.step++
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(o.step))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(o.step))
	lr := float64(o.LR) / bc1
	for _, p := range params {
		if p.Buffer || p.Grad == nil {
			continue
		}
		m, ok := o.m[p]
		if !ok {
			m = make([]float32, len(p.Data))
			o.m[p] = m
			o.v[p] = make([]float32, len(p.Data))
		}
		v := o.v[p]
		wd := float32(0)
		if p.Decay {
			wd = o.WeightDecay
		}
		for i, g := range p.Grad {
			g += wd * p.Data[i]
			m[i] = o.Beta1*m[i] + (1-o.Beta1)*g
			v[i] = o.Beta2*v[i] + (1-o.Beta2)*g*g
			den := math.Sqrt(float64(v[i])/bc2) + float64(o.Eps)
			p.Data[i] -= float32(lr * float64(m[i]) / den)
		}
		p.ZeroGrad()
	}
}
