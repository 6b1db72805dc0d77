package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/qgtc/qgtc/templates"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randTensor(r *rand.Rand, rows, cols int, scale float32) *Tensor {
	t := New(rows, cols)
	for i := range t.Data {
		t.Data[i] = float32(r.NormFloat64()) * scale
	}
	return t.SetRequiresGrad(true)
}

// smallGraph is a directed graph on 5 nodes with a self-loop, a node
// without in-edges (4) and a node without out-edges.
func smallGraph() *Graph {
	// in-lists: 0<-{1,2}, 1<-{0,1,3}, 2<-{0}, 3<-{0,1,2}, 4<-{}
	return NewGraph([]int32{0, 2, 5, 6, 9, 9}, []int32{1, 2, 0, 1, 3, 0, 0, 1, 2})
}

// gradCheck compares the tape's gradients of L = Σ f(inputs)·R with
// central finite differences for every element of every input.
func gradCheck(t *testing.T, inputs []*Tensor, f func(tp *Tape) *Tensor) {
	t.Helper()
	eval := func() (*Tape, *Tensor, *Tensor) {
		tp := NewTape(true, rand.New(rand.NewPCG(7, 9)))
		out := f(tp)
		r := New(out.Rows, out.Cols)
		rr := rand.New(rand.NewPCG(3, 4))
		for i := range r.Data {
			r.Data[i] = float32(rr.NormFloat64())
		}
		loss := dotLoss(tp, out, r.Data)
		return tp, loss, out
	}
	for _, in := range inputs {
		in.Grad = nil
	}
	tp, loss, out := eval()
	require.True(t, out.requires, "output does not depend on the inputs")
	tp.Backward(loss)
	const h = 1e-2
	for k, in := range inputs {
		require.NotNil(t, in.Grad, "input %d got no gradient", k)
		for i := range in.Data {
			orig := in.Data[i]
			in.Data[i] = orig + h
			_, lp, _ := eval()
			in.Data[i] = orig - h
			_, lm, _ := eval()
			in.Data[i] = orig
			num := (float64(lp.Data[0]) - float64(lm.Data[0])) / (2 * h)
			got := float64(in.Grad[i])
			tol := 2e-2 * math.Max(1, math.Abs(num))
			assert.InDelta(t, num, got, tol, "input %d element %d", k, i)
		}
	}
}

func TestGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	g := smallGraph()
	x := randTensor(r, 5, 6, 1)
	x1 := randTensor(r, 1, 6, 1) // one row: batch norm falls back on the running statistics
	w := randTensor(r, 4, 6, 1)
	b := randTensor(r, 1, 4, 1)
	eps := randTensor(r, 1, 1, 0.3)
	gamma, beta := randTensor(r, 1, 6, 1), randTensor(r, 1, 6, 1)
	rm, rv := New(1, 6), New(1, 6)
	for i := range rv.Data {
		rv.Data[i] = 1
	}
	labels := []int32{0, 3, 1, 2, 3}
	gw := make([]float32, g.NumEdges())
	for i := range gw {
		gw[i] = float32(r.Float64()) + 0.5
	}
	sparse := NewSparse(5, 6, []int32{0, 2, 2, 5, 6, 8}, []int32{0, 3, 1, 2, 5, 4, 0, 5}, []float32{1, 2, 0.5, -1, 3, 1, 1, 2})
	hx := randTensor(r, 5, 6, 1) // 2 heads × 3
	att := randTensor(r, 1, 6, 1)
	src, dst := randTensor(r, 5, 2, 1), randTensor(r, 5, 2, 1)

	cases := []struct {
		name   string
		inputs []*Tensor
		f      func(tp *Tape) *Tensor
	}{
		{"MatMulT", []*Tensor{x, w}, func(tp *Tape) *Tensor { return tp.MatMulT(x, w) }},
		{"MatMulT/sparse", []*Tensor{w}, func(tp *Tape) *Tensor { return tp.MatMulT(sparse, w) }},
		{"MatMulT/sparse-dropout", []*Tensor{w}, func(tp *Tape) *Tensor { return tp.MatMulT(tp.Dropout(sparse, 0.5), w) }},
		{"AddBias", []*Tensor{x, b}, func(tp *Tape) *Tensor { return tp.AddBias(tp.MatMulT(x, w), b) }},
		{"Add", []*Tensor{x, hx}, func(tp *Tape) *Tensor { return tp.Add(x, hx) }},
		{"AddScaled", []*Tensor{x, hx, eps}, func(tp *Tape) *Tensor { return tp.AddScaled(hx, x, eps) }},
		{"ReLU", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.ReLU(x) }},
		{"LeakyReLU", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.LeakyReLU(x, 0.2) }},
		{"ELU", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.ELU(x, 1) }},
		{"Dropout", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Dropout(x, 0.4) }},
		{"LogSoftmax", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.LogSoftmax(x) }},
		{"CrossEntropy", []*Tensor{w, x}, func(tp *Tape) *Tensor {
			return tp.CrossEntropy(tp.MatMulT(x, w), labels, []int32{0, 2, 3})
		}},
		{"BatchNorm", []*Tensor{x, gamma, beta}, func(tp *Tape) *Tensor { return tp.BatchNorm(x, gamma, beta, rm, rv, 0.1, 1e-5) }},
		{"BatchNorm/one-row", []*Tensor{x1, gamma, beta}, func(tp *Tape) *Tensor { return tp.BatchNorm(x1, gamma, beta, rm, rv, 0.1, 1e-5) }},
		{"MeanHeads", []*Tensor{hx}, func(tp *Tape) *Tensor { return tp.MeanHeads(hx, 2) }},
		{"Propagate", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Propagate(g, nil, x) }},
		{"Propagate/weighted", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Propagate(g, gw, x) }},
		{"Aggregate/sum", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Aggregate(g, x, templates.Sum) }},
		{"Aggregate/mean", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Aggregate(g, x, templates.Mean) }},
		{"Aggregate/max", []*Tensor{x}, func(tp *Tape) *Tensor { return tp.Aggregate(g, x, templates.Max) }},
		{"EdgeAdd", []*Tensor{src, dst}, func(tp *Tape) *Tensor { return tp.EdgeAdd(g, src, dst) }},
		{"EdgeSoftmax", []*Tensor{src, dst}, func(tp *Tape) *Tensor { return tp.EdgeSoftmax(g, tp.EdgeAdd(g, src, dst)) }},
		{"WeightedAggregate", []*Tensor{hx, src, dst}, func(tp *Tape) *Tensor {
			return tp.WeightedAggregate(g, hx, tp.EdgeAdd(g, src, dst))
		}},
		{"HeadDot", []*Tensor{hx, att}, func(tp *Tape) *Tensor { return tp.HeadDot(hx, att, 2) }},
		{"GATAggregate", []*Tensor{hx, src, dst}, func(tp *Tape) *Tensor { return tp.GATAggregate(g, hx, src, dst, 2, 0.2) }},
		{"GAT/full", []*Tensor{hx, att}, func(tp *Tape) *Tensor {
			return tp.GATAggregate(g, hx, tp.HeadDot(hx, att, 2), tp.HeadDot(hx, att, 2), 2, 0.2)
		}},
		{"GAT/composed-dropout", []*Tensor{hx, src, dst}, func(tp *Tape) *Tensor {
			a := tp.Dropout(tp.EdgeSoftmax(g, tp.LeakyReLU(tp.EdgeAdd(g, src, dst), 0.2)), 0.5)
			return tp.WeightedAggregate(g, hx, a)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { gradCheck(t, c.inputs, c.f) })
	}
}

// dotLoss records L = Σ out·r as a 1×1 tensor.
func dotLoss(tp *Tape, out *Tensor, r []float32) *Tensor {
	loss := New(1, 1)
	var sum float64
	for i, v := range out.Data {
		sum += float64(v * r[i])
	}
	loss.Data[0] = float32(sum)
	tp.Custom(loss, func() {
		g := GradOf(out)
		for i := range g {
			g[i] += loss.Grad[0] * r[i]
		}
	}, out)
	return loss
}

// TestGATFusedMatchesComposed: the fused op and the composition of edge ops
// agree, forward and backward.
func TestGATFusedMatchesComposed(t *testing.T) {
	g := smallGraph()
	run := func(fused bool) [][]float32 {
		r := rand.New(rand.NewPCG(5, 5))
		x := randTensor(r, 5, 6, 1)
		src, dst := randTensor(r, 5, 2, 1), randTensor(r, 5, 2, 1)
		tp := NewTape(true, nil)
		var y *Tensor
		if fused {
			y = tp.GATAggregate(g, x, src, dst, 2, 0.2)
		} else {
			y = tp.WeightedAggregate(g, x, tp.EdgeSoftmax(g, tp.LeakyReLU(tp.EdgeAdd(g, src, dst), 0.2)))
		}
		w := make([]float32, len(y.Data))
		for i := range w {
			w[i] = float32(i%7) - 3
		}
		tp.Backward(dotLoss(tp, y, w))
		return [][]float32{y.Data, x.Grad, src.Grad, dst.Grad}
	}
	a, b := run(true), run(false)
	for i := range a {
		require.NotNil(t, a[i])
		assert.InDeltaSlice(t, b[i], a[i], 1e-5, "output %d", i)
	}
}
