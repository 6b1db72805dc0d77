package templates

import "fmt"

// MsgFunc writes the message of the edge u→v with id e into m (len f): the
// Go path of SpMM for messages the builtins do not cover.
type MsgFunc func(m []float32, u, v, e int)

// EdgeFunc writes the value of the edge u→v with id e into o (len width):
// the Go path of SDDMM.
type EdgeFunc func(o []float32, u, v, e int)

// SpMMFunc is SpMM with a Go message function: out[v] = reduce over the
// edges u→v of msg(u, v, e). It runs on the same edge-balanced parallel
// schedule (without feature tiling or source partitions: the function sees
// whole rows) and records arg for Max and Min as SpMM does. msg is called
// concurrently from several goroutines, each with its own m.
//
// Its backward starts from SpMMMsgGrad, the gradient of every edge's
// message; the chain rule through the message function is then an
// SDDMMFunc (per-edge products) and an SpMM with CopyE over g.Transpose
// (summing them per source), as TestUDFBackward shows.
func SpMMFunc(out []float32, g CSR, msg MsgFunc, red Reduce, f int, arg []int32, s *Schedule) error {
	if msg == nil {
		return fmt.Errorf("%w: nil message function", ErrOperand)
	}
	a, err := checkSpMM(out, g, CopyU, red, nil, nil, nil, f, arg)
	if err != nil {
		return err
	}
	a.udf = msg
	sc := resolve(s, g, 0, f)
	sc.FeatTile, sc.Partitions = 0, 0
	runSpMM(&a, sc)
	return nil
}

// SDDMMFunc writes fn(u, v, e) for every edge into out (nnz×width, by edge
// id), in parallel over rows; fn is called concurrently.
func SDDMMFunc(out []float32, g CSR, fn EdgeFunc, width int, s *Schedule) error {
	if fn == nil {
		return fmt.Errorf("%w: nil edge function", ErrOperand)
	}
	if err := checkEdgeValues("out", out, g, width); err != nil {
		return err
	}
	sc := resolve(s, g, 0, width)
	sc.FeatTile, sc.Partitions = 0, 0
	pl := makePlan(g, sc, width)
	pl.run(sc, func(_ *spanWorker, sp rowSpan) {
		v0, v1, p0, p1 := int(sp.r0), int(sp.r1), -1, -1
		if sp.seg >= 0 {
			p0, p1 = int(sp.p0), int(sp.p1)
		}
		for v := v0; v < v1; v++ {
			a, b := int(g.Indptr[v]), int(g.Indptr[v+1])
			if p0 >= 0 {
				a, b = p0, p1
			}
			for p := a; p < b; p++ {
				e := g.eid(p)
				fn(out[e*width:(e+1)*width], int(g.Indices[p]), v, e)
			}
		}
	})
	return nil
}

// SpMMMsgGrad writes into gmsg (nnz×f, by edge id) the gradient of every
// edge's message in an SpMM (builtin or SpMMFunc) reducing with red, given
// gout (rows×f), the gradient of its output: gout[v] for Sum, gout[v]/deg(v)
// for Mean, and for Max and Min gout[v,k] where the edge won element k
// (arg, from the forward call) and 0 elsewhere.
func SpMMMsgGrad(gmsg []float32, g CSR, red Reduce, gout []float32, f int, arg []int32, s *Schedule) error {
	a, err := checkSpMM(gout, g, CopyU, red, nil, nil, nil, f, arg)
	if err != nil {
		return fmt.Errorf("SpMMMsgGrad: %w", err)
	}
	if (red == Max || red == Min) && a.arg == nil {
		return fmt.Errorf("%w: %v message gradient needs the arg recorded by the forward call", ErrOperand, red)
	}
	if len(gmsg) != g.NNZ()*f {
		return fmt.Errorf("%w: gmsg has %d values, want nnz·f = %d·%d", ErrOperand, len(gmsg), g.NNZ(), f)
	}
	sc := resolve(s, g, 0, f)
	sc.FeatTile, sc.Partitions, sc.NoSplit = 0, 0, true
	pl := makePlan(g, sc, f)
	pl.run(sc, func(_ *spanWorker, sp rowSpan) {
		for v := int(sp.r0); v < int(sp.r1); v++ {
			p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
			gv := gout[v*f : (v+1)*f]
			scale := float32(1)
			if red == Mean && p1 > p0 {
				scale = 1 / float32(p1-p0)
			}
			for p := p0; p < p1; p++ {
				e := g.eid(p)
				o := gmsg[e*f : (e+1)*f]
				switch red {
				case Sum:
					copy(o, gv)
				case Mean:
					for k, x := range gv {
						o[k] = x * scale
					}
				default:
					win := a.arg[v*f : (v+1)*f]
					for k, x := range gv {
						o[k] = 0
						if int(win[k]) == e {
							o[k] = x
						}
					}
				}
			}
		}
	})
	return nil
}
