package nn

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAdamMatchesTorch replays torch.optim.Adam's update rule (L2 decay
// added to the gradient, bias-corrected moments) in float64 for three
// steps and compares.
func TestAdamMatchesTorch(t *testing.T) {
	p := NewParam("w", 1, 2)
	p.Data[0], p.Data[1] = 1, -2
	frozen := NewParam("f", 1, 1)
	frozen.Decay = false
	frozen.Data[0] = 3
	buf := NewBuffer("b", 1)
	buf.Data[0] = 7
	opt := NewAdam(0.1, 0.01)
	ref := []float64{1, -2}
	m, v := []float64{0, 0}, []float64{0, 0}
	for step := 1; step <= 3; step++ {
		grads := []float64{0.5 * float64(step), -1}
		p.Grad = []float32{float32(grads[0]), float32(grads[1])}
		frozen.Grad = []float32{0}
		opt.Step([]*Param{p, frozen, buf})
		for i := range ref {
			g := grads[i] + 0.01*ref[i]
			m[i] = 0.9*m[i] + 0.1*g
			v[i] = 0.999*v[i] + 0.001*g*g
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			ref[i] -= 0.1 * mh / (math.Sqrt(vh) + 1e-8)
			assert.InDelta(t, ref[i], float64(p.Data[i]), 1e-5, "step %d element %d", step, i)
		}
		assert.Equal(t, []float32{0, 0}, p.Grad, "gradients cleared")
	}
	assert.Equal(t, float32(3), frozen.Data[0], "no decay and zero gradient: unchanged")
	assert.Equal(t, float32(7), buf.Data[0], "buffers are not trained")
}
