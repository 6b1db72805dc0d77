package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDistillGradient: distill adds the gradient of w·mean KL(teacher ‖
// student) over the rows, checked against central differences of
// klDivergence, on top of what dl held.
func TestDistillGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, c, w = 5, 4, 3.0
	teacher, student := make([]float32, n*c), make([]float32, n*c)
	for i := range teacher {
		teacher[i], student[i] = float32(4*r.NormFloat64()), float32(4*r.NormFloat64())
	}
	dl := make([]float64, n*c)
	for i := range dl {
		dl[i] = 0.5
	}
	distill(teacher, student, c, w, dl)
	loss := func(s []float32) float64 {
		var l float64
		for i := range n {
			l += klDivergence(teacher[i*c:(i+1)*c], s[i*c:(i+1)*c])
		}
		return w * l / n
	}
	const h = 1e-2
	for k := range student {
		s := append([]float32(nil), student...)
		s[k] += h
		up := loss(s)
		s[k] -= 2 * h
		num := (up - loss(s)) / (2 * h)
		assert.InDelta(t, 0.5+num, dl[k], 2e-3*math.Max(1, math.Abs(num)), "logit %d", k)
	}
	same := make([]float64, n*c)
	distill(teacher, teacher, c, w, same)
	for _, g := range same {
		assert.InDelta(t, 0, g, 1e-12, "a student equal to its teacher has no gradient")
	}
}
