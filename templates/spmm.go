package templates

// The sparse templates (this file, spmm_*.go, sddmm.go, sched*.go,
// edgesoftmax.go) are the float32 graph kernels of the full-precision path,
// after DGL's: SpMM sends a message along every edge and reduces the
// messages at each destination row; SDDMM computes a value per edge from
// its two endpoints; EdgeSoftmax normalises edge values per row; and
// GATAggregate fuses GAT's attention with its aggregation. Every one has a
// backward. All are pull-style over a CSR of in-edges: one worker owns each
// output row, so no atomics are needed, and the work is split by edges
// (Schedule). SampleCSR and SpMMFunc/SDDMMFunc cover sampling and messages
// the builtins lack.

import (
	"errors"
	"fmt"
	"math"
)

// Errors of the sparse templates; wrapped with the value at fault.
var (
	ErrCSR     = errors.New("templates: bad CSR graph")
	ErrOperand = errors.New("templates: bad sparse template operand")

	// errGatherRange is the panic value of a kernel handed a CSR whose
	// indices reach past its operand (see CSR).
	errGatherRange = fmt.Errorf("%w: source index out of range of the features (run CSR.Validate)", ErrCSR)
)

// CSR is a pull-style sparse graph: row v lists, in
// Indices[Indptr[v]:Indptr[v+1]], the sources u of the edges u→v. EdgeIDs
// gives each stored edge its id, which indexes edge features (e, SDDMM
// outputs, softmax weights); nil means the id of the edge at position p is p.
// Edge ids must be a permutation of 0..NNZ-1.
//
// The kernels trust the CSR's content (they check lengths only, per call):
// run Validate once on a graph read from outside; an out-of-range index
// makes a kernel panic.
type CSR struct{ Indptr, Indices, EdgeIDs []int32 }

// Rows is the number of destination rows.
func (g CSR) Rows() int {
	if len(g.Indptr) == 0 {
		return 0
	}
	return len(g.Indptr) - 1
}

// NNZ is the number of edges.
func (g CSR) NNZ() int { return len(g.Indices) }

func (g CSR) eid(p int) int {
	if g.EdgeIDs == nil {
		return p
	}
	return int(g.EdgeIDs[p])
}

// Validate checks that Indptr is monotone from 0 to NNZ, that every source
// is in [0, nsrc) and that EdgeIDs, when given, is a permutation of
// 0..NNZ-1.
func (g CSR) Validate(nsrc int) error {
	if len(g.Indptr) == 0 {
		return fmt.Errorf("%w: empty indptr (want rows+1 entries)", ErrCSR)
	}
	if g.Indptr[0] != 0 {
		return fmt.Errorf("%w: indptr[0] = %d, want 0", ErrCSR, g.Indptr[0])
	}
	n := g.Rows()
	if int(g.Indptr[n]) != len(g.Indices) {
		return fmt.Errorf("%w: indptr[%d] = %d but %d indices", ErrCSR, n, g.Indptr[n], len(g.Indices))
	}
	for v := 0; v < n; v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return fmt.Errorf("%w: indptr decreases at row %d", ErrCSR, v)
		}
	}
	for p, u := range g.Indices {
		if u < 0 || int(u) >= nsrc {
			return fmt.Errorf("%w: index %d at position %d outside [0, %d)", ErrCSR, u, p, nsrc)
		}
	}
	if g.EdgeIDs != nil {
		if len(g.EdgeIDs) != len(g.Indices) {
			return fmt.Errorf("%w: %d edge ids for %d edges", ErrCSR, len(g.EdgeIDs), len(g.Indices))
		}
		seen := make([]bool, len(g.Indices))
		for p, e := range g.EdgeIDs {
			if e < 0 || int(e) >= len(seen) || seen[e] {
				return fmt.Errorf("%w: edge id %d at position %d is out of range or repeated", ErrCSR, e, p)
			}
			seen[e] = true
		}
	}
	return nil
}

// Transpose returns the reverse graph on nsrc rows: row u lists the
// destinations v of the edges u→v, each keeping its edge id, so edge
// features are shared between g and its transpose. Rows come out sorted.
// The backward passes pull over it.
func (g CSR) Transpose(nsrc int) CSR {
	indptr := make([]int32, nsrc+1)
	for _, u := range g.Indices {
		indptr[u+1]++
	}
	for u := 0; u < nsrc; u++ {
		indptr[u+1] += indptr[u]
	}
	fill := make([]int32, nsrc)
	copy(fill, indptr[:nsrc])
	idx := make([]int32, len(g.Indices))
	ids := make([]int32, len(g.Indices))
	for v := 0; v < g.Rows(); v++ {
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := g.Indices[p]
			idx[fill[u]] = int32(v)
			ids[fill[u]] = int32(g.eid(int(p)))
			fill[u]++
		}
	}
	return CSR{Indptr: indptr, Indices: idx, EdgeIDs: ids}
}

// Msg is the message an edge u→v (id e) sends in SpMM.
type Msg uint8

// Messages. x is a source-node feature, y a destination-node feature, e an
// edge feature that may be narrower than x (see SpMM).
const (
	CopyU Msg = iota // x[u]
	CopyE            // e[e]
	UMulE            // x[u] · e[e]
	UAddV            // x[u] + y[v]
	USubV            // x[u] − y[v]
	UMulV            // x[u] · y[v]
)

var msgNames = [...]string{"copy_u", "copy_e", "u_mul_e", "u_add_v", "u_sub_v", "u_mul_v"}

func (m Msg) String() string {
	if int(m) < len(msgNames) {
		return msgNames[m]
	}
	return fmt.Sprintf("Msg(%d)", m)
}

func (m Msg) usesX() bool { return m != CopyE }
func (m Msg) usesE() bool { return m == CopyE || m == UMulE }
func (m Msg) usesY() bool { return m == UAddV || m == USubV || m == UMulV }

// Reduce combines the messages arriving at a row.
type Reduce uint8

// Reductions. A row without edges gets 0 for every reduction.
const (
	Sum Reduce = iota
	Mean
	Max
	Min
)

var reduceNames = [...]string{"sum", "mean", "max", "min"}

func (r Reduce) String() string {
	if int(r) < len(reduceNames) {
		return reduceNames[r]
	}
	return fmt.Sprintf("Reduce(%d)", r)
}

// spmmArgs holds one checked SpMM call.
type spmmArgs struct {
	g       CSR
	msg     Msg
	red     Reduce
	x, e, y []float32
	out     []float32
	arg     []int32
	udf     MsgFunc // SpMMFunc's message, replacing msg when set
	f       int     // feature width of out (and x, y)
	fe      int     // edge feature width: f, or a divisor of f (one value per head)
	d       int     // f / fe: columns sharing one edge value
	nsrc    int
}

// checkSpMM validates the shapes of an SpMM-like call.
func checkSpMM(out []float32, g CSR, msg Msg, red Reduce, x, e, y []float32, f int, arg []int32) (spmmArgs, error) {
	a := spmmArgs{g: g, msg: msg, red: red, x: x, e: e, y: y, out: out, arg: arg, f: f}
	if int(msg) >= len(msgNames) {
		return a, fmt.Errorf("%w: unknown message %d", ErrOperand, msg)
	}
	if int(red) >= len(reduceNames) {
		return a, fmt.Errorf("%w: unknown reduction %d", ErrOperand, red)
	}
	if f <= 0 {
		return a, fmt.Errorf("%w: feature width %d", ErrOperand, f)
	}
	if len(g.Indptr) == 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return a, fmt.Errorf("%w: indptr does not end at the %d indices", ErrCSR, len(g.Indices))
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return a, fmt.Errorf("%w: %d edge ids for %d edges", ErrCSR, len(g.EdgeIDs), len(g.Indices))
	}
	rows, nnz := g.Rows(), g.NNZ()
	if len(out) != rows*f {
		return a, fmt.Errorf("%w: out has %d values, want rows·f = %d·%d", ErrOperand, len(out), rows, f)
	}
	if msg.usesX() {
		if len(x)%f != 0 {
			return a, fmt.Errorf("%w: x has %d values, not a multiple of f = %d", ErrOperand, len(x), f)
		}
		a.nsrc = len(x) / f
	}
	a.fe, a.d = f, 1
	if msg.usesE() {
		switch {
		case nnz == 0:
		case len(e) == 0 || len(e)%nnz != 0:
			return a, fmt.Errorf("%w: e has %d values, want nnz·fe for %d edges", ErrOperand, len(e), nnz)
		default:
			a.fe = len(e) / nnz
			if f%a.fe != 0 {
				return a, fmt.Errorf("%w: edge width %d does not divide f = %d", ErrOperand, a.fe, f)
			}
			a.d = f / a.fe
		}
	}
	if msg.usesY() && len(y) != rows*f {
		return a, fmt.Errorf("%w: y has %d values, want rows·f = %d·%d", ErrOperand, len(y), rows, f)
	}
	if red == Max || red == Min {
		if arg != nil && len(arg) != rows*f {
			return a, fmt.Errorf("%w: arg has %d values, want rows·f = %d·%d", ErrOperand, len(arg), rows, f)
		}
	} else {
		a.arg = nil
	}
	return a, nil
}

// SpMM computes, for every row v and feature column k,
//
//	out[v,k] = reduce over the edges u→v (id e) of msg(u, e, v)[k]
//
// with x (nsrc×f), y (rows×f) and e (nnz×fe, indexed by edge id) row-major.
// e may be narrower than x: with fe = len(e)/nnz dividing f, column k uses
// e[e, k/(f/fe)], which is how per-head attention weights scale per-head
// features. Operands the message does not use may be nil. Rows without
// edges get 0. For Max and Min a non-nil arg (rows×f) receives the id of
// the winning edge per element (−1 for an empty row); SpMMBackward needs
// it. A nil s uses the schedule TuneSchedule cached for this shape, or a
// heuristic one. The work is pull-style (each output row written by one
// worker, no atomics) over all of the schedule's workers. out must not
// overlap the inputs.
func SpMM(out []float32, g CSR, msg Msg, red Reduce, x, e, y []float32, f int, arg []int32, s *Schedule) error {
	a, err := checkSpMM(out, g, msg, red, x, e, y, f, arg)
	if err != nil {
		return err
	}
	runSpMM(&a, resolve(s, g, a.nsrc, f))
	return nil
}

// identity is the starting value of a reduction.
func (r Reduce) identity() float32 {
	switch r {
	case Max:
		return float32(math.Inf(-1))
	case Min:
		return float32(math.Inf(1))
	}
	return 0
}

// initRow sets one output row (or partial) to the reduction's identity.
func (a *spmmArgs) initRow(acc []float32, arg []int32) {
	if a.red == Sum || a.red == Mean {
		clear(acc)
		return
	}
	id := a.red.identity()
	for k := range acc {
		acc[k] = id
	}
	for k := range arg {
		arg[k] = -1
	}
}

// finishRow turns an accumulated row into the reduction's value: mean
// divides by the degree, max/min of nothing become 0.
func (a *spmmArgs) finishRow(acc []float32, arg []int32, deg int) {
	switch a.red {
	case Mean:
		if deg > 0 {
			inv := 1 / float32(deg)
			for k := range acc {
				acc[k] *= inv
			}
		}
	case Max, Min:
		if deg == 0 {
			for k := range acc {
				acc[k] = 0
			}
		}
	}
}

// combine merges a partial result (of a row split across workers) into acc.
func (a *spmmArgs) combine(acc []float32, arg []int32, part []float32, parg []int32) {
	switch a.red {
	case Sum, Mean:
		addTo(acc, part)
	case Max:
		for k, p := range part {
			if p > acc[k] {
				acc[k] = p
				if arg != nil {
					arg[k] = parg[k]
				}
			}
		}
	case Min:
		for k, p := range part {
			if p < acc[k] {
				acc[k] = p
				if arg != nil {
					arg[k] = parg[k]
				}
			}
		}
	}
}

// accumulate reduces the messages of the edges at positions [p0, p1) of row
// v, feature columns [k0, k1), into acc (len k1−k0; arg likewise or nil).
// buf is scratch of at least max(k1−k0, p1−p0) floats.
func (a *spmmArgs) accumulate(acc []float32, arg []int32, v, p0, p1, k0, k1 int, buf []float32) {
	if p0 >= p1 {
		return
	}
	f := a.f
	idx := a.g.Indices[p0:p1]
	if a.udf == nil && (a.red == Sum || a.red == Mean) {
		switch {
		case a.msg == CopyU:
			gatherSum(acc, a.x[k0:], idx, f)
			return
		case a.msg == UMulE && a.fe == 1:
			w := a.e[p0:p1] // edge id = position: the weights are in place
			if a.g.EdgeIDs != nil {
				w = buf[:p1-p0]
				for j := range w {
					w[j] = a.e[a.g.EdgeIDs[p0+j]]
				}
			}
			gatherAxpy(acc, a.x[k0:], idx, w, f)
			return
		case a.msg == UMulE && a.d >= 8:
			// One weighted gather per head the tile overlaps.
			w := buf[:p1-p0]
			for h := k0 / a.d; h*a.d < k1; h++ {
				c0, c1 := max(k0, h*a.d), min(k1, (h+1)*a.d)
				for j := range w {
					w[j] = a.e[a.g.eid(p0+j)*a.fe+h]
				}
				gatherAxpy(acc[c0-k0:c1-k0], a.x[c0:], idx, w, f)
			}
			return
		}
	}
	if a.msg == CopyU && a.udf == nil && arg != nil && (a.red == Max || a.red == Min) {
		var eids []int32
		if a.g.EdgeIDs != nil {
			eids = a.g.EdgeIDs[p0:p1]
		}
		gatherArgMax(acc, arg, a.x[k0:], idx, eids, p0, f, a.red == Min)
		return
	}
	m := buf[:k1-k0]
	for p := p0; p < p1; p++ {
		u := int(a.g.Indices[p])
		e := a.g.eid(p)
		if a.msg == CopyU && a.udf == nil {
			m = a.x[u*f+k0 : u*f+k1] // the message is the row itself
		} else {
			a.message(m, u, e, v, k0, k1)
		}
		switch a.red {
		case Sum, Mean:
			addTo(acc, m)
		case Max:
			for k, x := range m {
				if x > acc[k] {
					acc[k] = x
					if arg != nil {
						arg[k] = int32(e)
					}
				}
			}
		case Min:
			for k, x := range m {
				if x < acc[k] {
					acc[k] = x
					if arg != nil {
						arg[k] = int32(e)
					}
				}
			}
		}
	}
}

// message writes columns [k0, k1) of the message of edge u→v (id e) to m.
func (a *spmmArgs) message(m []float32, u, e, v, k0, k1 int) {
	if a.udf != nil { // SpMMFunc runs untiled: k0 = 0, k1 = f
		a.udf(m, u, v, e)
		return
	}
	f := a.f
	var xs, ys []float32
	if a.msg.usesX() {
		xs = a.x[u*f+k0 : u*f+k1]
	}
	if a.msg.usesY() {
		ys = a.y[v*f+k0 : v*f+k1]
	}
	switch a.msg {
	case CopyU:
		copy(m, xs)
	case CopyE:
		if a.d == 1 {
			copy(m, a.e[e*f+k0:e*f+k1])
			return
		}
		for k := range m {
			m[k] = a.e[e*a.fe+(k0+k)/a.d]
		}
	case UMulE:
		if a.d == 1 {
			es := a.e[e*f+k0 : e*f+k1]
			for k := range m {
				m[k] = xs[k] * es[k]
			}
			return
		}
		for k := range m {
			m[k] = xs[k] * a.e[e*a.fe+(k0+k)/a.d]
		}
	case UAddV:
		for k := range m {
			m[k] = xs[k] + ys[k]
		}
	case USubV:
		for k := range m {
			m[k] = xs[k] - ys[k]
		}
	case UMulV:
		for k := range m {
			m[k] = xs[k] * ys[k]
		}
	}
}

// runSpMM executes a checked SpMM under schedule s.
func runSpMM(a *spmmArgs, s Schedule) {
	f, g := a.f, a.g
	tile := s.tile(f)
	pl := makePlan(g, s, f)
	part := make([]float32, pl.nseg*f)
	var parg []int32
	if a.arg != nil {
		parg = make([]int32, pl.nseg*f)
	}
	pl.runTiles(s, f, tile, func(w *spanWorker, sp rowSpan, k0, k1 int) {
		buf := w.scratch(max(k1-k0, sp.maxDeg(g)))
		if sp.seg >= 0 { // a slice of a heavy row, into its own partial
			v := int(sp.r0)
			acc := part[int(sp.seg)*f+k0 : int(sp.seg)*f+k1]
			var pa []int32
			if parg != nil {
				pa = parg[int(sp.seg)*f+k0 : int(sp.seg)*f+k1]
			}
			a.initRow(acc, pa)
			a.accumulate(acc, pa, v, int(sp.p0), int(sp.p1), k0, k1, buf)
			return
		}
		r0, r1 := int(sp.r0), int(sp.r1)
		if pc := w.partitions(g, s, r0, r1, a.nsrc); pc.np > 1 {
			for v := r0; v < r1; v++ {
				a.initRow(a.out[v*f+k0:v*f+k1], a.argRow(v, k0, k1))
			}
			pc.each(func(v, p0, p1 int) {
				a.accumulate(a.out[v*f+k0:v*f+k1], a.argRow(v, k0, k1), v, p0, p1, k0, k1, buf)
			})
			for v := r0; v < r1; v++ {
				a.finishRow(a.out[v*f+k0:v*f+k1], a.argRow(v, k0, k1), int(g.Indptr[v+1]-g.Indptr[v]))
			}
			return
		}
		// One partition: each row start to finish while it is in L1.
		for v := r0; v < r1; v++ {
			o, ar := a.out[v*f+k0:v*f+k1], a.argRow(v, k0, k1)
			p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
			a.initRow(o, ar)
			a.accumulate(o, ar, v, p0, p1, k0, k1, buf)
			a.finishRow(o, ar, p1-p0)
		}
	})
	// Merge the partials of split rows; each heavy row is owned by one worker.
	pl.runHeavy(s, func(h heavyRow) {
		v := int(h.v)
		acc, ar := a.out[v*f:(v+1)*f], a.argRow(v, 0, f)
		a.initRow(acc, ar)
		for sg := h.seg0; sg < h.seg0+h.nseg; sg++ {
			var pa []int32
			if parg != nil {
				pa = parg[int(sg)*f : int(sg+1)*f]
			}
			a.combine(acc, ar, part[int(sg)*f:int(sg+1)*f], pa)
		}
		a.finishRow(acc, ar, int(g.Indptr[v+1]-g.Indptr[v]))
	})
}

func (a *spmmArgs) argRow(v, k0, k1 int) []int32 {
	if a.arg == nil {
		return nil
	}
	return a.arg[v*a.f+k0 : v*a.f+k1]
}
