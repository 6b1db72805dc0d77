package templates

import "fmt"

// SpMMBackward computes the gradients of SpMM's inputs from gout (rows×f),
// the gradient of its output. gx (like x), ge (like e) and gy (like y) are
// overwritten, each skipped when nil or when the message does not use it.
// For Max and Min, arg must be what the forward call recorded; the gradient
// flows to the winning edge only.
//
// The gradient of x is an SpMM on the reverse graph gT (g.Transpose(nsrc);
// pass the zero CSR to have it built here, a model should build it once),
// the gradient of e an SDDMM-like pass over g, the gradient of y a pass over
// g; all pull-style and atomic-free.
func SpMMBackward(gx, ge, gy []float32, g, gT CSR, msg Msg, red Reduce, x, e, y, gout []float32, f int, arg []int32, s *Schedule) error {
	a, err := checkSpMM(gout, g, msg, red, x, e, y, f, arg)
	if err != nil {
		return fmt.Errorf("SpMMBackward: %w", err)
	}
	if (red == Max || red == Min) && arg == nil {
		return fmt.Errorf("%w: %v backward needs the arg recorded by the forward call", ErrOperand, red)
	}
	if !msg.usesX() {
		gx = nil
	}
	if !msg.usesE() {
		ge = nil
	}
	if !msg.usesY() {
		gy = nil
	}
	for _, c := range []struct {
		name     string
		got, ref []float32
	}{{"gx", gx, x}, {"ge", ge, e}, {"gy", gy, y}} {
		if c.got != nil && len(c.got) != len(c.ref) {
			return fmt.Errorf("%w: %s has %d values, want %d", ErrOperand, c.name, len(c.got), len(c.ref))
		}
	}
	rows := g.Rows()
	// G is the gradient reaching each message: gout, divided by the degree
	// for Mean.
	G := gout
	if red == Mean {
		G = make([]float32, len(gout))
		for v := 0; v < rows; v++ {
			deg := g.Indptr[v+1] - g.Indptr[v]
			if deg == 0 {
				continue
			}
			inv := 1 / float32(deg)
			for k := v * f; k < (v+1)*f; k++ {
				G[k] = gout[k] * inv
			}
		}
	}
	sch := resolve(s, g, a.nsrc, f)
	if gx != nil {
		if gT.Indptr == nil {
			gT = g.Transpose(a.nsrc)
		}
		if gT.Rows() != a.nsrc || gT.NNZ() != g.NNZ() {
			return fmt.Errorf("%w: transpose has %d rows and %d edges, want %d and %d", ErrCSR, gT.Rows(), gT.NNZ(), a.nsrc, g.NNZ())
		}
		if err := spmmGradX(gx, gT, &a, G, sch); err != nil {
			return err
		}
	}
	if ge != nil {
		spmmGradE(ge, &a, G, sch)
	}
	if gy != nil {
		if err := spmmGradY(gy, &a, G, sch); err != nil {
			return err
		}
	}
	return nil
}

// spmmGradX: gx[u] = Σ over edges u→v (id e) of ∂msg/∂x[u] · G[v], only
// the winning edges for Max/Min.
func spmmGradX(gx []float32, gT CSR, a *spmmArgs, G []float32, s Schedule) error {
	f := a.f
	if a.red == Sum || a.red == Mean {
		switch a.msg {
		case CopyU, UAddV, USubV:
			return SpMM(gx, gT, CopyU, Sum, G, nil, nil, f, nil, &s)
		case UMulE:
			return SpMM(gx, gT, UMulE, Sum, G, a.e, nil, f, nil, &s)
		case UMulV:
			gy := make([]float32, len(G))
			for i := range gy {
				gy[i] = G[i] * a.y[i]
			}
			return SpMM(gx, gT, CopyU, Sum, gy, nil, nil, f, nil, &s)
		}
	}
	// Max/Min: pull over gT, keeping the columns whose winner is this edge.
	s = splitHeavyOff(s)
	pl := makePlan(gT, s, f)
	pl.run(s, func(_ *spanWorker, sp rowSpan) {
		for u := int(sp.r0); u < int(sp.r1); u++ {
			acc := gx[u*f : (u+1)*f]
			clear(acc)
			for q := gT.Indptr[u]; q < gT.Indptr[u+1]; q++ {
				v := int(gT.Indices[q])
				e := gT.eid(int(q))
				win := a.arg[v*f : (v+1)*f]
				gv := G[v*f : (v+1)*f]
				for k, w := range win {
					if int(w) != e {
						continue
					}
					c := gv[k]
					switch a.msg {
					case UMulE:
						c *= a.e[e*a.fe+k/a.d]
					case UMulV:
						c *= a.y[v*f+k]
					}
					acc[k] += c
				}
			}
		}
	})
	return nil
}

// splitHeavyOff is the schedule of the per-row passes that write to edge or
// row outputs directly: splitting rows gains nothing there.
func splitHeavyOff(s Schedule) Schedule {
	s.NoSplit = true
	s.FeatTile, s.Partitions = 0, 0
	return s
}

// spmmGradE: ge[e, h] = Σ_{k in h} ∂msg/∂e · G[v,k] for edge e into v.
func spmmGradE(ge []float32, a *spmmArgs, G []float32, s Schedule) {
	f, g := a.f, a.g
	s = splitHeavyOff(s)
	pl := makePlan(g, s, f)
	pl.run(s, func(_ *spanWorker, sp rowSpan) {
		for v := int(sp.r0); v < int(sp.r1); v++ {
			gv := G[v*f : (v+1)*f]
			var win []int32
			if a.arg != nil {
				win = a.arg[v*f : (v+1)*f]
			}
			for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
				e := g.eid(int(p))
				u := int(g.Indices[p])
				o := ge[e*a.fe : (e+1)*a.fe]
				clear(o)
				var xs []float32
				if a.msg == UMulE {
					xs = a.x[u*f : (u+1)*f]
				}
				if win == nil && a.d >= 8 && xs != nil {
					for h := range o {
						o[h] = sdot(xs[h*a.d:(h+1)*a.d], gv[h*a.d:(h+1)*a.d])
					}
					continue
				}
				for k, c := range gv {
					if win != nil && int(win[k]) != e {
						continue
					}
					if xs != nil {
						c *= xs[k]
					}
					o[k/a.d] += c
				}
			}
		}
	})
}

// spmmGradY: gy[v] = Σ over edges u→v of ∂msg/∂y[v] · G[v].
func spmmGradY(gy []float32, a *spmmArgs, G []float32, s Schedule) error {
	f, g := a.f, a.g
	if a.red == Sum || a.red == Mean {
		if a.msg == UMulV {
			// Σ_u x[u]·G[v] = G[v] · (copy_u sum)[v].
			if err := SpMM(gy, g, CopyU, Sum, a.x, nil, nil, f, nil, &s); err != nil {
				return err
			}
			for i := range gy {
				gy[i] *= G[i]
			}
			return nil
		}
		sign := float32(1)
		if a.msg == USubV {
			sign = -1
		}
		for v := 0; v < g.Rows(); v++ {
			c := sign * float32(g.Indptr[v+1]-g.Indptr[v])
			for k := v * f; k < (v+1)*f; k++ {
				gy[k] = c * G[k]
			}
		}
		return nil
	}
	s = splitHeavyOff(s)
	pl := makePlan(g, s, f)
	pl.run(s, func(_ *spanWorker, sp rowSpan) {
		for v := int(sp.r0); v < int(sp.r1); v++ {
			o := gy[v*f : (v+1)*f]
			win := a.arg[v*f : (v+1)*f]
			gv := G[v*f : (v+1)*f]
			for k := range o {
				switch {
				case win[k] < 0:
					o[k] = 0
				case a.msg == UAddV:
					o[k] = gv[k]
				case a.msg == USubV:
					o[k] = -gv[k]
				}
			}
			if a.msg != UMulV {
				continue
			}
			for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
				e := g.eid(int(p))
				u := int(g.Indices[p])
				for k, w := range win {
					if int(w) == e {
						o[k] = gv[k] * a.x[u*f+k]
					}
				}
			}
		}
	})
	return nil
}
