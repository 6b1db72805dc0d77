package learn

import "math"

// Adam's constants, torch.optim.Adam's defaults. Untyped, so that 1−β is
// exact before it is rounded to float64 (0.1, not 1−0.9 in float64): the
// device's Adam (tcu) is given the same float64 values.
const (
	AdamBeta1 = 0.9
	AdamBeta2 = 0.999
	AdamEps   = 1e-8
)

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
	bc1, bc2 := o.Next()
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
			m[k] = AdamBeta1*m[k] + (1-AdamBeta1)*g
			v[k] = AdamBeta2*v[k] + (1-AdamBeta2)*g*g
			p[k] -= float32(o.LR * (m[k] / bc1) / (math.Sqrt(v[k]/bc2) + AdamEps))
		}
	}
}

// Next counts a step and returns its bias corrections 1−β1ᵗ and 1−β2ᵗ:
// Step's, for an optimizer whose update runs elsewhere (the device's).
func (o *Adam) Next() (bc1, bc2 float64) {
	o.t++
	return 1 - math.Pow(AdamBeta1, float64(o.t)), 1 - math.Pow(AdamBeta2, float64(o.t))
}
