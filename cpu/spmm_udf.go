package cpu

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
// A UDF has no automatic backward; compose it from SDDMMFunc (edge
// gradients) and SpMMFunc over g.Transpose (source gradients).
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
