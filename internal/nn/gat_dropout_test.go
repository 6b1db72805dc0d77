package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGATAggregateDropoutGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	g := smallGraph()
	hx := randTensor(r, 5, 6, 1)
	src, dst := randTensor(r, 5, 2, 1), randTensor(r, 5, 2, 1)
	// gradCheck's tape has a fixed generator, so every evaluation draws the
	// same seed and hence the same attention mask.
	gradCheck(t, []*Tensor{hx, src, dst}, func(tp *Tape) *Tensor {
		return tp.GATAggregateDropout(g, hx, src, dst, 2, 0.2, 0.5)
	})
}

// TestGATFusedDropoutMatchesComposed: with the same tape seed the fused op
// draws the mask that Dropout draws on the composed α, forward and
// backward; outside training it is GATAggregate.
func TestGATFusedDropoutMatchesComposed(t *testing.T) {
	g := smallGraph()
	run := func(fused, train bool, p float32) [][]float32 {
		r := rand.New(rand.NewPCG(5, 5))
		x := randTensor(r, 5, 6, 1)
		src, dst := randTensor(r, 5, 2, 1), randTensor(r, 5, 2, 1)
		tp := NewTape(train, rand.New(rand.NewPCG(8, 1)))
		var y *Tensor
		if fused {
			y = tp.GATAggregateDropout(g, x, src, dst, 2, 0.2, p)
		} else {
			y = tp.WeightedAggregate(g, x, tp.Dropout(tp.EdgeSoftmax(g, tp.LeakyReLU(tp.EdgeAdd(g, src, dst), 0.2)), p))
		}
		w := make([]float32, len(y.Data))
		for i := range w {
			w[i] = float32(i%7) - 3
		}
		if !train {
			return [][]float32{y.Data} // an inference tape records no backward
		}
		tp.Backward(dotLoss(tp, y, w))
		return [][]float32{y.Data, x.Grad, src.Grad, dst.Grad}
	}
	for _, c := range []struct {
		name  string
		train bool
		p     float32
	}{{"train/p=0.5", true, 0.5}, {"train/p=0.6", true, 0.6}, {"eval/p=0.6", false, 0.6}, {"train/p=0", true, 0}} {
		t.Run(c.name, func(t *testing.T) {
			a, b := run(true, c.train, c.p), run(false, c.train, c.p)
			for i := range a {
				require.NotNil(t, a[i])
				assert.InDeltaSlice(t, b[i], a[i], 1e-5, "output %d", i)
			}
		})
	}
}
