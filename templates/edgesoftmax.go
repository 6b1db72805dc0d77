package templates

import (
	"fmt"
	"math"
)

func checkEdgeValues(name string, v []float32, g CSR, heads int) error {
	if len(g.Indptr) == 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return fmt.Errorf("%w: indptr does not end at the %d indices", ErrCSR, len(g.Indices))
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return fmt.Errorf("%w: %d edge ids for %d edges", ErrCSR, len(g.EdgeIDs), len(g.Indices))
	}
	if heads <= 0 {
		return fmt.Errorf("%w: %d heads", ErrOperand, heads)
	}
	if len(v) != g.NNZ()*heads {
		return fmt.Errorf("%w: %s has %d values, want nnz·heads = %d·%d", ErrOperand, name, len(v), g.NNZ(), heads)
	}
	return nil
}

// rowsOnly is a schedule whose spans are whole rows: the softmax of a row
// needs all of its edges.
func rowsOnly(s *Schedule, g CSR, heads int) Schedule {
	sc := resolve(s, g, 0, heads)
	sc.NoSplit = true
	sc.FeatTile, sc.Partitions = 0, 0
	return sc
}

// EdgeSoftmax normalises logits (nnz×heads, by edge id) over the edges
// entering each row, per head:
//
//	out[e,h] = exp(logits[e,h] − m) / Σ_{e' into v} exp(logits[e',h] − m)
//
// with m the row's maximum. out may alias logits.
func EdgeSoftmax(out []float32, g CSR, logits []float32, heads int, s *Schedule) error {
	if err := checkEdgeValues("logits", logits, g, heads); err != nil {
		return err
	}
	if err := checkEdgeValues("out", out, g, heads); err != nil {
		return err
	}
	sc := rowsOnly(s, g, heads)
	pl := makePlan(g, sc, heads)
	pl.run(sc, func(w *spanWorker, sp rowSpan) {
		buf := w.scratch(sp.maxDeg(g))
		for v := int(sp.r0); v < int(sp.r1); v++ {
			p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
			ex := buf[:p1-p0]
			for h := 0; h < heads; h++ {
				m := float32(math.Inf(-1))
				for j := range ex {
					ex[j] = logits[g.eid(p0+j)*heads+h]
					m = max(m, ex[j])
				}
				for j := range ex {
					ex[j] -= m
				}
				expInPlace(ex)
				var z float32
				for _, x := range ex {
					z += x
				}
				inv := 1 / z
				for j, x := range ex {
					out[g.eid(p0+j)*heads+h] = x * inv
				}
			}
		}
	})
	return nil
}

// EdgeSoftmaxBackward computes the gradient of the logits from out (what
// EdgeSoftmax returned) and gout, its gradient:
//
//	glogits[e,h] = out[e,h]·(gout[e,h] − Σ_{e' into v} out[e',h]·gout[e',h])
//
// glogits may alias gout.
func EdgeSoftmaxBackward(glogits []float32, g CSR, out, gout []float32, heads int, s *Schedule) error {
	for _, c := range []struct {
		n string
		v []float32
	}{{"glogits", glogits}, {"out", out}, {"gout", gout}} {
		if err := checkEdgeValues(c.n, c.v, g, heads); err != nil {
			return err
		}
	}
	sc := rowsOnly(s, g, heads)
	pl := makePlan(g, sc, heads)
	pl.run(sc, func(_ *spanWorker, sp rowSpan) {
		for v := int(sp.r0); v < int(sp.r1); v++ {
			p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
			for h := 0; h < heads; h++ {
				var c float32
				for p := p0; p < p1; p++ {
					i := g.eid(p)*heads + h
					c += out[i] * gout[i]
				}
				for p := p0; p < p1; p++ {
					i := g.eid(p)*heads + h
					glogits[i] = out[i] * (gout[i] - c)
				}
			}
		}
	})
	return nil
}

// gatArgs is one checked fused GAT call.
type gatArgs struct {
	g            CSR
	feat, el, er []float32
	heads, d     int
	slope        float32
	nsrc         int
}

func checkGAT(g CSR, feat, el, er []float32, heads, d int) (gatArgs, error) {
	a := gatArgs{g: g, feat: feat, el: el, er: er, heads: heads, d: d}
	if heads <= 0 || d <= 0 {
		return a, fmt.Errorf("%w: %d heads of width %d", ErrOperand, heads, d)
	}
	if len(g.Indptr) == 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return a, fmt.Errorf("%w: indptr does not end at the %d indices", ErrCSR, len(g.Indices))
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return a, fmt.Errorf("%w: %d edge ids for %d edges", ErrCSR, len(g.EdgeIDs), len(g.Indices))
	}
	f := heads * d
	if len(feat)%f != 0 {
		return a, fmt.Errorf("%w: feat has %d values, not a multiple of heads·d = %d", ErrOperand, len(feat), f)
	}
	a.nsrc = len(feat) / f
	if len(el) != a.nsrc*heads {
		return a, fmt.Errorf("%w: el has %d values, want nsrc·heads = %d·%d", ErrOperand, len(el), a.nsrc, heads)
	}
	if len(er) != g.Rows()*heads {
		return a, fmt.Errorf("%w: er has %d values, want rows·heads = %d·%d", ErrOperand, len(er), g.Rows(), heads)
	}
	return a, nil
}

func leaky(z, slope float32) float32 {
	if z > 0 {
		return z
	}
	return z * slope
}

// GATAggregate is GAT's attention and aggregation fused in one pass over
// the edges: for every row v, head h and edge u→v,
//
//	a_e = softmax over the edges into v of LeakyReLU(el[u,h] + er[v,h])
//	out[v,h,:] = Σ_e a_e · feat[u,h,:]
//
// with feat nsrc×heads×d, el nsrc×heads, er rows×heads and out
// rows×heads×d. The attention weights live only in a per-row scratch;
// stats (rows×heads×2) receives each (v,h)'s maximum score and 1/Σexp,
// from which GATAggregateBackward recomputes them. A row without edges
// gets 0.
func GATAggregate(out, stats []float32, g CSR, feat, el, er []float32, heads, d int, slope float32, s *Schedule) error {
	return GATAggregateDropout(out, stats, g, feat, el, er, heads, d, slope, Dropout{}, s)
}

// GATAggregateDropout is GATAggregate with attention dropout: the weight
// a_e of edge e (id g's EdgeIDs[p], or its position p) in head h is kept
// when DropKeep(drop.Seed, e·heads+h, drop.P) and scaled by 1/(1−P),
// otherwise zeroed, before the aggregation. The element index is that of
// an edges×heads tensor, so the mask is the one the tape's Dropout draws
// on the unfused attention for the same seed. No mask is stored: the
// backward pass (GATAggregateDropoutBackward with the same drop) hashes
// it again. stats holds the softmax's maximum and 1/Σexp before dropout.
func GATAggregateDropout(out, stats []float32, g CSR, feat, el, er []float32, heads, d int, slope float32, drop Dropout, s *Schedule) error {
	a, err := checkGAT(g, feat, el, er, heads, d)
	if err != nil {
		return err
	}
	a.slope = slope
	rows, f := g.Rows(), heads*d
	if len(out) != rows*f {
		return fmt.Errorf("%w: out has %d values, want rows·heads·d = %d·%d", ErrOperand, len(out), rows, f)
	}
	if len(stats) != rows*heads*2 {
		return fmt.Errorf("%w: stats has %d values, want rows·heads·2 = %d", ErrOperand, len(stats), rows*heads*2)
	}
	dropping, dm := drop.P > 0, drop.mask()
	sc := rowsOnly(s, g, f)
	pl := makePlan(g, sc, f)
	pl.run(sc, func(w *spanWorker, sp rowSpan) {
		buf := w.scratch(heads * sp.maxDeg(g))
		for v := int(sp.r0); v < int(sp.r1); v++ {
			p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
			idx := g.Indices[p0:p1]
			n := len(idx)
			o := out[v*f : (v+1)*f]
			clear(o)
			// Scores of every head in one pass over the sources' el rows;
			// buf holds head h's weights at [h·n, (h+1)·n).
			erv := er[v*heads : (v+1)*heads]
			for j, u := range idx {
				elu := el[int(u)*heads : (int(u)+1)*heads]
				for h, e := range elu {
					buf[h*n+j] = leaky(e+erv[h], slope)
				}
			}
			// Shift each head by its maximum, then one exp over all heads.
			for h := 0; h < heads; h++ {
				wt := buf[h*n : (h+1)*n]
				m := float32(math.Inf(-1))
				for _, x := range wt {
					m = max(m, x)
				}
				for j := range wt {
					wt[j] -= m
				}
				stats[(v*heads+h)*2] = m
			}
			expInPlace(buf[:heads*n])
			for h := 0; h < heads; h++ {
				wt := buf[h*n : (h+1)*n]
				var z float32
				for _, x := range wt {
					z += x
				}
				var inv float32
				if z > 0 {
					inv = 1 / z
				}
				for j := range wt {
					wt[j] *= inv
				}
				stats[(v*heads+h)*2+1] = inv
				if dropping {
					// Mask the weights here, in Go, so gatherAxpy (asm
					// or not) aggregates the dropped-out attention.
					for j := range wt {
						wt[j] *= dm.factor(g.eid(p0+j)*heads + h)
					}
				}
				gatherAxpy(o[h*d:(h+1)*d], feat[h*d:], idx, wt, f)
			}
		}
	})
	return nil
}

// attentionIn recomputes into att the weights a_e of head h of the edges
// from the sources idx into v.
func (a *gatArgs) attentionIn(att []float32, idx []int32, v, h int, stats []float32) {
	erv := a.er[v*a.heads+h]
	i := (v*a.heads + h) * 2
	m, inv := stats[i], stats[i+1]
	for j, u := range idx {
		att[j] = leaky(a.el[int(u)*a.heads+h]+erv, a.slope) - m
	}
	expInPlace(att)
	for j := range att {
		att[j] *= inv
	}
}

// attentionOut recomputes into att the weights a_e of head h of the edges
// from u to the destinations dst.
func (a *gatArgs) attentionOut(att []float32, dst []int32, u, h int, stats []float32) {
	elu := a.el[u*a.heads+h]
	for j, v := range dst {
		att[j] = leaky(elu+a.er[int(v)*a.heads+h], a.slope) - stats[(int(v)*a.heads+h)*2]
	}
	expInPlace(att)
	for j, v := range dst {
		att[j] *= stats[(int(v)*a.heads+h)*2+1]
	}
}

// GATAggregateBackward computes the gradients of feat, el and er (each
// overwritten, skipped when nil) from gout (rows×heads×d), the gradient of
// GATAggregate's out, and the out and stats it returned. It stores no
// per-edge values: each of its two passes (over g for er, over the reverse
// graph gT for feat and el) recomputes the attention weights from stats.
// With c[v,h] = <gout[v,h], out[v,h]>:
//
//	g_a(e)    = <gout[v,h], feat[u,h]>
//	g_z(e)    = a_e·(g_a(e) − c[v,h]) · (1 if z > 0 else slope)
//	ger[v,h]  = Σ_{e into v} g_z(e),   gel[u,h] = Σ_{e out of u} g_z(e)
//	gfeat[u,h] = Σ_{e out of u} a_e · gout[v,h]
//
// Pass the zero CSR as gT to have the transpose built here.
func GATAggregateBackward(gfeat, gel, ger []float32, g, gT CSR, feat, el, er, out, stats, gout []float32, heads, d int, slope float32, s *Schedule) error {
	return GATAggregateDropoutBackward(gfeat, gel, ger, g, gT, feat, el, er, out, stats, gout, heads, d, slope, Dropout{}, s)
}

// GATAggregateDropoutBackward is GATAggregateBackward for
// GATAggregateDropout's out and stats under the same drop: it regenerates
// the mask k_e (0 or 1/(1−P)) from the seed. With a'_e = k_e·a_e the
// weights that were aggregated, c[v,h] = <gout[v,h], out[v,h]> is still
// Σ_e a_e·k_e·g_a(e), so
//
//	g_z(e)     = a_e·(k_e·g_a(e) − c[v,h]) · (1 if z > 0 else slope)
//	gfeat[u,h] = Σ_{e out of u} a'_e · gout[v,h]
//
// A gT passed in must carry EdgeIDs into g (as CSR.Transpose builds it)
// when P > 0, since the mask is keyed by g's edge ids.
func GATAggregateDropoutBackward(gfeat, gel, ger []float32, g, gT CSR, feat, el, er, out, stats, gout []float32, heads, d int, slope float32, drop Dropout, s *Schedule) error {
	a, err := checkGAT(g, feat, el, er, heads, d)
	if err != nil {
		return err
	}
	dropping, dm := drop.P > 0, drop.mask()
	a.slope = slope
	rows, f := g.Rows(), heads*d
	for _, c := range []struct {
		n    string
		v    []float32
		want int
		opt  bool
	}{{"out", out, rows * f, false}, {"gout", gout, rows * f, false}, {"stats", stats, rows * heads * 2, false},
		{"gfeat", gfeat, len(feat), true}, {"gel", gel, len(el), true}, {"ger", ger, len(er), true}} {
		if (c.v != nil || !c.opt) && len(c.v) != c.want {
			return fmt.Errorf("%w: %s has %d values, want %d", ErrOperand, c.n, len(c.v), c.want)
		}
	}
	// c[v,h] = <gout[v,h], out[v,h]>.
	cvh := make([]float32, rows*heads)
	for v := 0; v < rows; v++ {
		for h := 0; h < heads; h++ {
			i := v*f + h*d
			cvh[v*heads+h] = sdot(gout[i:i+d], out[i:i+d])
		}
	}
	sc := rowsOnly(s, g, f)
	if ger != nil {
		pl := makePlan(g, sc, f)
		pl.run(sc, func(w *spanWorker, sp rowSpan) {
			deg := sp.maxDeg(g) + 8 // att may run 8 past its end (expInPlace)
			buf := w.scratch(2 * deg)
			for v := int(sp.r0); v < int(sp.r1); v++ {
				p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
				idx := g.Indices[p0:p1]
				att, ga := buf[:len(idx)], buf[deg:deg+len(idx)]
				for h := 0; h < heads; h++ {
					a.attentionIn(att, idx, v, h, stats)
					dotRows(ga, feat[h*d:], idx, f, gout[v*f+h*d:v*f+(h+1)*d])
					c := cvh[v*heads+h]
					erv := er[v*heads+h]
					if dropping {
						for j := range ga {
							ga[j] *= dm.factor(g.eid(p0+j)*heads + h)
						}
					}
					var acc float32
					for j, u := range idx {
						gz := att[j] * (ga[j] - c)
						if el[int(u)*heads+h]+erv <= 0 {
							gz *= slope
						}
						acc += gz
					}
					ger[v*heads+h] = acc
				}
			}
		})
	}
	if gfeat == nil && gel == nil {
		return nil
	}
	if gT.Indptr == nil {
		gT = g.Transpose(a.nsrc)
	}
	if gT.Rows() != a.nsrc || gT.NNZ() != g.NNZ() {
		return fmt.Errorf("%w: transpose has %d rows and %d edges, want %d and %d", ErrCSR, gT.Rows(), gT.NNZ(), a.nsrc, g.NNZ())
	}
	if dropping && gT.EdgeIDs == nil && g.NNZ() > 0 {
		return fmt.Errorf("%w: transpose has no EdgeIDs, which attention dropout (p = %g) needs to key its mask", ErrCSR, drop.P)
	}
	sc = rowsOnly(s, gT, f)
	pl := makePlan(gT, sc, f)
	pl.run(sc, func(w *spanWorker, sp rowSpan) {
		deg := sp.maxDeg(gT) + 8 // wt may run 8 past its end (expInPlace)
		buf := w.scratch(3 * deg)
		for u := int(sp.r0); u < int(sp.r1); u++ {
			q0, q1 := int(gT.Indptr[u]), int(gT.Indptr[u+1])
			idx := gT.Indices[q0:q1]
			wt, ga, km := buf[:len(idx)], buf[deg:deg+len(idx)], buf[2*deg:2*deg+len(idx)]
			if gfeat != nil {
				clear(gfeat[u*f : (u+1)*f])
			}
			for h := 0; h < heads; h++ {
				fu := feat[u*f+h*d : u*f+(h+1)*d]
				if gel != nil {
					dotRows(ga, gout[h*d:], idx, f, fu)
				}
				a.attentionOut(wt, idx, u, h, stats)
				if dropping {
					// The mask scales g_a in g_z (against the unmasked
					// a_e) and the weights gfeat aggregates with.
					for j := range km {
						km[j] = dm.factor(gT.eid(q0+j)*heads + h)
					}
					if gel != nil {
						for j, k := range km {
							ga[j] *= k
						}
					}
				}
				if gel != nil {
					var acc float32
					elu := el[u*heads+h]
					for j, v32 := range idx {
						v := int(v32)
						gz := wt[j] * (ga[j] - cvh[v*heads+h])
						if elu+er[v*heads+h] <= 0 {
							gz *= slope
						}
						acc += gz
					}
					gel[u*heads+h] = acc
				}
				if gfeat != nil {
					if dropping {
						for j, k := range km {
							wt[j] *= k
						}
					}
					gatherAxpy(gfeat[u*f+h*d:u*f+(h+1)*d], gout[h*d:], idx, wt, f)
				}
			}
		}
	})
	return nil
}

// expf is e^x in float32, within 2 ulp: Cody–Waite reduction x = n·ln2 + r
// and Cephes' degree-6 polynomial for e^r, about five times faster than
// math.Exp. The softmax arguments (≤ 0) take the fast path; anything that
// could overflow or go subnormal, and NaN, falls back to math.Exp.
func expf(x float32) float32 {
	if !(x > -87 && x < 88) {
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	// Round x·log2(e) to nearest with a truncating conversion (cheaper
	// than math.Floor); |t| < 128 here, so int32 cannot overflow.
	t := x * log2e
	if t < 0 {
		t -= 0.5
	} else {
		t += 0.5
	}
	n := float32(int32(t))
	r := x - n*c1 - n*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}
