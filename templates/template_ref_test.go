package templates

import (
	"math"
	"math/rand/v2"
)

// Naive float64 references of the sparse templates, written straight from
// the definitions, and the random graphs the tests run them on.

// testGraph is a random pull CSR on rows destination and nsrc source rows,
// with empty rows, self-loops, repeated edges, one hub row (to make the
// planner split it) and permuted edge ids.
func tplGraph(rng *rand.Rand, rows, nsrc, avgDeg int, hub, sorted bool) CSR {
	indptr := make([]int32, rows+1)
	var idx []int32
	for v := 0; v < rows; v++ {
		deg := rng.IntN(2*avgDeg + 1)
		if v%5 == 1 {
			deg = 0 // empty rows
		}
		if hub && v == rows/2 {
			deg = 40 * avgDeg
		}
		row := make([]int32, 0, deg+1)
		for range deg {
			row = append(row, int32(rng.IntN(nsrc)))
		}
		if v%3 == 0 && v < nsrc {
			row = append(row, int32(v)) // self-loop
		}
		if sorted {
			for i := 1; i < len(row); i++ { // insertion sort keeps it dependency-free
				for j := i; j > 0 && row[j] < row[j-1]; j-- {
					row[j], row[j-1] = row[j-1], row[j]
				}
			}
		}
		idx = append(idx, row...)
		indptr[v+1] = int32(len(idx))
	}
	ids := make([]int32, len(idx))
	for i, p := range rng.Perm(len(idx)) {
		ids[i] = int32(p)
	}
	return CSR{Indptr: indptr, Indices: idx, EdgeIDs: ids}
}

func tplRandVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func tplTo64(v []float32) []float64 {
	o := make([]float64, len(v))
	for i, x := range v {
		o[i] = float64(x)
	}
	return o
}

// tplRefMessage is msg(u, e, v)[k] in float64.
func tplRefMessage(msg Msg, x, e, y []float64, f, fe, u, eid, v, k int) float64 {
	d := f / fe
	switch msg {
	case CopyU:
		return x[u*f+k]
	case CopyE:
		return e[eid*fe+k/d]
	case UMulE:
		return x[u*f+k] * e[eid*fe+k/d]
	case UAddV:
		return x[u*f+k] + y[v*f+k]
	case USubV:
		return x[u*f+k] - y[v*f+k]
	case UMulV:
		return x[u*f+k] * y[v*f+k]
	}
	panic("unknown message")
}

// tplRefSpMM returns out and Σ|message| per element (the scale of the
// rounding error a float32 sum may carry).
func tplRefSpMM(g CSR, msg Msg, red Reduce, x, e, y []float64, f, fe int) (out, mag []float64) {
	rows := g.Rows()
	out = make([]float64, rows*f)
	mag = make([]float64, rows*f)
	for v := 0; v < rows; v++ {
		p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
		for k := 0; k < f; k++ {
			var acc, ab float64
			switch red {
			case Max:
				acc = math.Inf(-1)
			case Min:
				acc = math.Inf(1)
			}
			for p := p0; p < p1; p++ {
				m := tplRefMessage(msg, x, e, y, f, fe, int(g.Indices[p]), g.eid(p), v, k)
				ab += math.Abs(m)
				switch red {
				case Sum, Mean:
					acc += m
				case Max:
					acc = math.Max(acc, m)
				case Min:
					acc = math.Min(acc, m)
				}
			}
			if p1 == p0 {
				acc = 0
			} else if red == Mean {
				acc /= float64(p1 - p0)
				ab /= float64(p1 - p0)
			}
			out[v*f+k], mag[v*f+k] = acc, ab
		}
	}
	return out, mag
}

// tplRefSDDMM is SDDMM in float64.
func tplRefSDDMM(g CSR, op SDDMMOp, x, y []float64, f, heads int) (out, mag []float64) {
	width, d := f, 1
	if op == UDotV {
		width, d = heads, f/heads
	}
	out = make([]float64, g.NNZ()*width)
	mag = make([]float64, len(out))
	for v := 0; v < g.Rows(); v++ {
		for p := int(g.Indptr[v]); p < int(g.Indptr[v+1]); p++ {
			u, e := int(g.Indices[p]), g.eid(p)
			for c := 0; c < width; c++ {
				var s, ab float64
				for k := c * d; k < (c+1)*d; k++ {
					a, b := x[u*f+k], y[v*f+k]
					var t float64
					switch op {
					case UDotV, UMulVOp:
						t = a * b
					case UAddVOp:
						t = a + b
					case USubVOp:
						t = a - b
					}
					s += t
					ab += math.Abs(a*b) + math.Abs(a) + math.Abs(b)
				}
				out[e*width+c], mag[e*width+c] = s, ab
			}
		}
	}
	return out, mag
}

// tplRefEdgeSoftmax is EdgeSoftmax in float64.
func tplRefEdgeSoftmax(g CSR, logits []float64, heads int) []float64 {
	out := make([]float64, len(logits))
	for v := 0; v < g.Rows(); v++ {
		p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
		for h := 0; h < heads; h++ {
			m := math.Inf(-1)
			for p := p0; p < p1; p++ {
				m = math.Max(m, logits[g.eid(p)*heads+h])
			}
			var z float64
			for p := p0; p < p1; p++ {
				z += math.Exp(logits[g.eid(p)*heads+h] - m)
			}
			for p := p0; p < p1; p++ {
				i := g.eid(p)*heads + h
				out[i] = math.Exp(logits[i]-m) / z
			}
		}
	}
	return out
}

// tplRefGAT is GATAggregate in float64: the dropout reference with P = 0,
// where every weight is kept and scaled by exactly 1.
func tplRefGAT(g CSR, feat, el, er []float64, heads, d int, slope float64) []float64 {
	return tplRefGATDrop(g, feat, el, er, heads, d, slope, Dropout{})
}

// tplDotLoss is Σ out·r, the scalar whose gradient the backward tests check.
func tplDotLoss(out, r []float64) float64 {
	var s float64
	for i := range out {
		s += out[i] * r[i]
	}
	return s
}

// tplNumGrad is the central finite difference of loss with respect to every
// element of in (modified in place and restored).
func tplNumGrad(in []float64, loss func() float64) []float64 {
	g := make([]float64, len(in))
	for i := range in {
		old := in[i]
		h := 1e-6 * math.Max(1, math.Abs(old))
		in[i] = old + h
		lp := loss()
		in[i] = old - h
		lm := loss()
		in[i] = old
		g[i] = (lp - lm) / (2 * h)
	}
	return g
}
