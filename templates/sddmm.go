package templates

import "fmt"

// SDDMMOp is the per-edge function of SDDMM.
type SDDMMOp uint8

// SDDMM operations on the edge u→v: x is a source-node feature, y a
// destination-node feature, both f wide.
const (
	UDotV   SDDMMOp = iota // Σ_k x[u,k]·y[v,k], one value per head
	UAddVOp                // x[u] + y[v], f values
	USubVOp                // x[u] − y[v], f values
	UMulVOp                // x[u] · y[v], f values
	numSDDMM
)

var sddmmNames = [...]string{"u_dot_v", "u_add_v", "u_sub_v", "u_mul_v"}

func (o SDDMMOp) String() string {
	if o < numSDDMM {
		return sddmmNames[o]
	}
	return fmt.Sprintf("SDDMMOp(%d)", o)
}

type sddmmArgs struct {
	g          CSR
	op         SDDMMOp
	x, y, out  []float32
	f, heads   int
	width, dim int // values per edge in out; columns per head
	nsrc       int
}

func checkSDDMM(out []float32, g CSR, op SDDMMOp, x, y []float32, f, heads int) (sddmmArgs, error) {
	a := sddmmArgs{g: g, op: op, x: x, y: y, out: out, f: f, heads: heads}
	if op >= numSDDMM {
		return a, fmt.Errorf("%w: unknown SDDMM op %d", ErrOperand, op)
	}
	if f <= 0 {
		return a, fmt.Errorf("%w: feature width %d", ErrOperand, f)
	}
	if a.heads <= 0 {
		a.heads = 1
	}
	if op != UDotV && a.heads != 1 {
		return a, fmt.Errorf("%w: %v takes no heads (got %d)", ErrOperand, op, heads)
	}
	if f%a.heads != 0 {
		return a, fmt.Errorf("%w: %d heads do not divide f = %d", ErrOperand, a.heads, f)
	}
	if len(g.Indptr) == 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return a, fmt.Errorf("%w: indptr does not end at the %d indices", ErrCSR, len(g.Indices))
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return a, fmt.Errorf("%w: %d edge ids for %d edges", ErrCSR, len(g.EdgeIDs), len(g.Indices))
	}
	if len(x)%f != 0 {
		return a, fmt.Errorf("%w: x has %d values, not a multiple of f = %d", ErrOperand, len(x), f)
	}
	a.nsrc = len(x) / f
	if len(y) != g.Rows()*f {
		return a, fmt.Errorf("%w: y has %d values, want rows·f = %d·%d", ErrOperand, len(y), g.Rows(), f)
	}
	a.width, a.dim = f, 1
	if op == UDotV {
		a.width, a.dim = a.heads, f/a.heads
	}
	if len(out) != g.NNZ()*a.width {
		return a, fmt.Errorf("%w: out has %d values, want nnz·%d = %d·%d", ErrOperand, len(out), a.width, g.NNZ(), a.width)
	}
	return a, nil
}

// SDDMM computes one value (or vector) per edge u→v with id e:
//
//	UDotV:  out[e,h] = Σ_{k in head h} x[u,k]·y[v,k]   (out is nnz×heads)
//	others: out[e,k] = x[u,k] op y[v,k]               (out is nnz×f)
//
// with x (nsrc×f) and y (rows×f) row-major; heads ≤ 1 means one head and
// must be for the element-wise ops. It is the sampled dense-dense product
// of GNNs: attention logits, edge features from node pairs. The schedule
// tiles the feature axis and partitions the sources as SpMM does; each edge
// is written by the worker owning its row.
func SDDMM(out []float32, g CSR, op SDDMMOp, x, y []float32, f, heads int, s *Schedule) error {
	a, err := checkSDDMM(out, g, op, x, y, f, heads)
	if err != nil {
		return err
	}
	runSDDMM(&a, resolve(s, g, a.nsrc, f))
	return nil
}

func runSDDMM(a *sddmmArgs, s Schedule) {
	f, g := a.f, a.g
	tile := s.tile(f)
	if a.op == UDotV && tile < f {
		// A tile must not cut a head, or partial dots would need another pass.
		tile = max(a.dim, tile/a.dim*a.dim)
	}
	pl := makePlan(g, s, f)
	pl.runTiles(s, f, tile, func(w *spanWorker, sp rowSpan, k0, k1 int) {
		buf := w.scratch(sp.maxDeg(g))
		if sp.seg >= 0 {
			a.edges(int(sp.r0), int(sp.p0), int(sp.p1), k0, k1, buf)
			return
		}
		if pc := w.partitions(g, s, int(sp.r0), int(sp.r1), a.nsrc); pc.np > 1 {
			pc.each(func(v, p0, p1 int) { a.edges(v, p0, p1, k0, k1, buf) })
			return
		}
		for v := int(sp.r0); v < int(sp.r1); v++ {
			a.edges(v, int(g.Indptr[v]), int(g.Indptr[v+1]), k0, k1, buf)
		}
	})
}

// edges computes columns [k0, k1) of the values of the edges at positions
// [p0, p1) of row v (for UDotV: the heads inside [k0, k1)). buf is scratch
// of at least p1−p0 floats.
func (a *sddmmArgs) edges(v, p0, p1, k0, k1 int, buf []float32) {
	f, g := a.f, a.g
	ys := a.y[v*f+k0 : v*f+k1]
	if a.op == UDotV {
		d := a.dim
		idx := g.Indices[p0:p1]
		for h := k0 / d; h < k1/d; h++ {
			c := h * d
			if g.EdgeIDs == nil && a.width == 1 {
				dotRows(a.out[p0:p1], a.x[c:], idx, f, ys[c-k0:c-k0+d])
				continue
			}
			tmp := buf[:p1-p0]
			dotRows(tmp, a.x[c:], idx, f, ys[c-k0:c-k0+d])
			for j, t := range tmp {
				a.out[g.eid(p0+j)*a.width+h] = t
			}
		}
		return
	}
	for p := p0; p < p1; p++ {
		u := int(g.Indices[p])
		e := g.eid(p)
		xs := a.x[u*f+k0 : u*f+k1]
		o := a.out[e*f+k0 : e*f+k1]
		switch a.op {
		case UAddVOp:
			for k := range o {
				o[k] = xs[k] + ys[k]
			}
		case USubVOp:
			for k := range o {
				o[k] = xs[k] - ys[k]
			}
		case UMulVOp:
			for k := range o {
				o[k] = xs[k] * ys[k]
			}
		}
	}
}

// SDDMMBackward computes the gradients of SDDMM's inputs from gout, the
// gradient of its output (nnz×heads for UDotV, nnz×f otherwise). Each of
// gx (nsrc×f) and gy (rows×f) is overwritten, or skipped when nil. SDDMM's
// backward is SpMM: gy pulls over g, gx over its transpose gT (pass the
// zero CSR to have it computed here; a model should compute it once).
func SDDMMBackward(gx, gy []float32, g, gT CSR, op SDDMMOp, x, y, gout []float32, f, heads int, s *Schedule) error {
	a, err := checkSDDMM(gout, g, op, x, y, f, heads)
	if err != nil {
		return fmt.Errorf("SDDMMBackward: %w", err)
	}
	if gx != nil && len(gx) != len(x) {
		return fmt.Errorf("%w: gx has %d values, want %d like x", ErrOperand, len(gx), len(x))
	}
	if gy != nil && len(gy) != len(y) {
		return fmt.Errorf("%w: gy has %d values, want %d like y", ErrOperand, len(gy), len(y))
	}
	if gx != nil {
		if gT.Indptr == nil {
			gT = g.Transpose(a.nsrc)
		}
		if gT.Rows() != a.nsrc || gT.NNZ() != g.NNZ() {
			return fmt.Errorf("%w: transpose has %d rows and %d edges, want %d and %d", ErrCSR, gT.Rows(), gT.NNZ(), a.nsrc, g.NNZ())
		}
		var err error
		switch op {
		case UDotV, UMulVOp: // gx[u] = Σ_{u→v} gout[e]·y[v]
			err = SpMM(gx, gT, UMulE, Sum, y, gout, nil, f, nil, s)
		case UAddVOp, USubVOp: // gx[u] = Σ_{u→v} gout[e]
			err = SpMM(gx, gT, CopyE, Sum, nil, gout, nil, f, nil, s)
		}
		if err != nil {
			return err
		}
	}
	if gy != nil {
		var err error
		switch op {
		case UDotV, UMulVOp: // gy[v] = Σ_{u→v} gout[e]·x[u]
			err = SpMM(gy, g, UMulE, Sum, x, gout, nil, f, nil, s)
		case UAddVOp, USubVOp:
			err = SpMM(gy, g, CopyE, Sum, nil, gout, nil, f, nil, s)
			if op == USubVOp {
				for i := range gy {
					gy[i] = -gy[i]
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
