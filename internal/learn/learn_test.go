package learn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdamMatchesTorch replays torch.optim.Adam's update rule (L2 decay
// added to the gradient, bias-corrected moments) in float64 for three
// steps: with float64 moments only the rounding of each update to float32
// is left, so the values are equal.
func TestAdamMatchesTorch(t *testing.T) {
	w := []float32{1, -2}
	frozen := []float32{3}
	opt := NewAdam(0.1, 0.01)
	ref := []float64{1, -2}
	m, v := []float64{0, 0}, []float64{0, 0}
	for step := 1; step <= 3; step++ {
		grads := []float64{0.5 * float64(step), -1}
		g32 := []float32{float32(grads[0]), float32(grads[1])}
		opt.Step([][]float32{w, frozen, nil}, [][]float32{g32, {0}, nil}, []bool{true, false, true})
		for i := range ref {
			g := grads[i] + 0.01*float64(float32(ref[i]))
			m[i] = 0.9*m[i] + 0.1*g
			v[i] = 0.999*v[i] + 0.001*g*g
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			ref[i] = float64(float32(ref[i]) - float32(0.1*mh/(math.Sqrt(vh)+1e-8)))
			assert.Equal(t, float32(ref[i]), w[i], "step %d element %d", step, i)
		}
	}
	assert.Equal(t, float32(3), frozen[0], "no decay and zero gradient: unchanged")
}

// TestArgmaxFirstLargest checks Argmax against the running-best scan it
// stands for: ties go to the first, NaNs are never taken, a NaN first is
// kept.
func TestArgmaxFirstLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	nan := float32(math.NaN())
	for it := 0; it < 20000; it++ {
		row := make([]float32, 1+r.IntN(12))
		for j := range row {
			row[j] = float32(r.IntN(5))
			if r.IntN(8) == 0 {
				row[j] = nan
			}
		}
		bv, want := row[0], 0
		for j, x := range row {
			if x > bv {
				bv, want = x, j
			}
		}
		require.Equal(t, want, Argmax(row), "%v", row)
	}
}

func TestAccuracy(t *testing.T) {
	pred, labels := []int32{0, 1, 2, 2}, []int32{0, 1, 1, 2}
	assert.Equal(t, 0.75, Accuracy(pred, labels, []int32{0, 1, 2, 3}))
	assert.Equal(t, 1.0, Accuracy(pred, labels, []int32{3}))
	assert.True(t, math.IsNaN(Accuracy(pred, labels, nil)), "no nodes: NaN")
}

// TestFoldBN: the folded affine map equals the batch norm's evaluation
// formula γ(x − μ)/√(σ² + ε) + β.
func TestFoldBN(t *testing.T) {
	gamma, beta := []float32{1, 2, -0.5}, []float32{0, -1, 3}
	mean, vr := []float32{0, 0.5, -2}, []float32{1, 4, 0.25}
	scale, shift := FoldBN(gamma, beta, mean, vr)
	require.Len(t, scale, 3)
	require.Len(t, shift, 3)
	for j := range gamma {
		for _, x := range []float64{-3, 0, 1.5} {
			want := float64(gamma[j])*(x-float64(mean[j]))/math.Sqrt(float64(vr[j])+BNEps) + float64(beta[j])
			assert.InDelta(t, want, float64(scale[j])*x+float64(shift[j]), 1e-5, "channel %d x %v", j, x)
		}
	}
}
