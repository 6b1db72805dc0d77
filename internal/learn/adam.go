package learn

import "math"

// Adam is torch.optim.Adam (β = (0.9, 0.999), ε = 1e-8, bias-corrected
// moments) with L2 weight decay added to the gradient of the parameters
// that take it, as in the GCN and GAT papers' code. The moments are kept in
// float64: an update then differs from the float64 reference by the final
// rounding to float32 only.
type Adam struct {
	LR, WeightDecay float64

	t    int
	m, v map[*float32][]float64 // keyed by a parameter's first element
}

// NewAdam returns Adam with learning rate lr and L2 weight decay wd.
func NewAdam(lr, wd float64) *Adam {
	return &Adam{LR: lr, WeightDecay: wd, m: map[*float32][]float64{}, v: map[*float32][]float64{}}
}

// Step updates every params[i] from grads[i] (of the same length), adding
// the weight decay where decay[i]. A parameter is known by its backing
// array, so the same slices must be passed at every step; empty ones are
// skipped.
func (o *Adam) Step(params, grads [][]float32, decay []bool) {
	o.t++
	bc1 := 1 - math.Pow(0.9, float64(o.t))
	bc2 := 1 - math.Pow(0.999, float64(o.t))
	for i, p := range params {
		if len(p) == 0 {
			continue
		}
		m, ok := o.m[&p[0]]
		if !ok {
			m = make([]float64, len(p))
			o.m[&p[0]] = m
			o.v[&p[0]] = make([]float64, len(p))
		}
		v := o.v[&p[0]]
		for k, g32 := range grads[i] {
			g := float64(g32)
			if decay[i] {
				g += o.WeightDecay * float64(p[k])
			}
			m[k] = 0.9*m[k] + 0.1*g
			v[k] = 0.999*v[k] + 0.001*g*g
			p[k] -= float32(o.LR * (m[k] / bc1) / (math.Sqrt(v[k]/bc2) + 1e-8))
		}
	}
}
