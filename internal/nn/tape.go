package nn

import "math/rand/v2"

// Tape records the backward closures of the ops run through it. A tape
// with Train false records nothing and makes dropout the identity; batch
// norm then uses its running statistics.
type Tape struct {
	Train bool
	rng   *rand.Rand
	ops   []func()
}

// NewTape returns a tape; rng draws dropout seeds and may be nil when
// train is false.
func NewTape(train bool, rng *rand.Rand) *Tape {
	if train && rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	return &Tape{Train: train, rng: rng}
}

// record keeps f for the backward pass when out needs a gradient, which it
// does when any input does.
func (tp *Tape) record(out *Tensor, f func(), inputs ...*Tensor) {
	if !tp.Train {
		return
	}
	for _, in := range inputs {
		if in != nil && in.requires {
			out.requires = true
			tp.ops = append(tp.ops, f)
			return
		}
	}
}

// Seed draws a 64-bit seed from the tape's generator (0 when not training).
func (tp *Tape) Seed() uint64 {
	if tp.rng == nil {
		return 0
	}
	return tp.rng.Uint64()
}

// Custom records an op implemented outside this package: back runs in the
// backward pass when out needs a gradient (it does when any input does).
// back reads out.Grad and accumulates into the inputs' Grad (use GradOf).
func (tp *Tape) Custom(out *Tensor, back func(), inputs ...*Tensor) {
	tp.record(out, back, inputs...)
}

// GradOf returns t's gradient buffer, allocating it, for Custom ops.
func GradOf(t *Tensor) []float32 { return t.grad() }

// Backward seeds loss (a 1×1 tensor) with gradient 1 and runs the recorded
// closures in reverse. Gradients accumulate into leaves' Grad.
func (tp *Tape) Backward(loss *Tensor) {
	if len(loss.Data) != 1 {
		shapePanic("Backward", "loss is %d×%d, want 1×1", loss.Rows, loss.Cols)
	}
	loss.grad()[0] = 1
	for i := len(tp.ops) - 1; i >= 0; i-- {
		tp.ops[i]()
	}
	tp.ops = tp.ops[:0]
}
