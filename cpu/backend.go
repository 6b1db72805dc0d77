package cpu

import (
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// Backend is the CPU bmm.Backend: operands are host memory, wrapped
// without copying (UploadBits keeps the tensor, UploadVector the slice,
// UploadGraph the CSR slices, UploadCodes the bytes when a row is a whole
// number of CodesAlign groups), and ops run synchronously on a Kernel's
// products (bmm.WideProduct past int32) and the Agg* functions. Ops split
// their rows over GOMAXPROCS goroutines; a fork's (Fork) run on the caller.
type Backend struct {
	bmm.Host
	k *Kernel
	// lane is a fork's aggregation scratch, kept from op to op; nil on a
	// root, whose ops run in parallel.
	lane *aggScratch
}

// NewBackend returns a backend on kernel k (nil: the best path this CPU has).
func NewBackend(k *Kernel) *Backend {
	if k == nil {
		k = &Kernel{impl: bitImpls[0]}
	}
	return &Backend{k: k}
}

// Kernel is the bit kernel the backend's products run on.
func (b *Backend) Kernel() *Kernel { return b.k }

// Fork implements bmm.Forker: a backend on the same operands whose ops run
// on the calling goroutine, with scratch of its own.
func (b *Backend) Fork() (bmm.Backend, error) {
	if b.Closed() {
		return nil, bmm.Foreign("backend (closed)")
	}
	k := *b.k
	k.serial = true
	f := &Backend{k: &k, lane: &aggScratch{}}
	b.ForkInto(&f.Host)
	return f, nil
}

// codesOperand and graphOperand are the operands only the CPU has: Codes
// with their row stride, and an Adj checked once.
type codesOperand struct {
	bmm.HostOperand
	c Codes
}

func (x *codesOperand) Rows() int { return x.c.Rows }
func (x *codesOperand) Cols() int { return x.c.Cols }
func (x *codesOperand) Bits() int { return x.c.Bits }

type graphOperand struct {
	bmm.HostOperand
	a      Adj
	maxSum int64 // bmm.CheckGraph's weight bound
}

func (x *graphOperand) Rows() int { return x.a.Rows() }

// Name implements bmm.Backend: the kernel's name, e.g. "cpu/avx2".
func (b *Backend) Name() string { return b.k.Name() }

// UploadCodes implements bmm.Backend. Rows of a multiple of CodesAlign
// codes are wrapped as they are; others are copied to padded rows.
func (b *Backend) UploadCodes(vals []uint8, rows, cols, nbits int) (bmm.Codes, error) {
	if err := bmm.CheckCodes(vals, rows, cols, nbits); err != nil {
		return nil, err
	}
	c, err := NewCodes(0, cols, nbits) // the stride, with no storage
	if err != nil {
		return nil, err
	}
	c.Rows = rows
	if c.Stride == cols {
		c.data = vals[: rows*cols : rows*cols]
	} else {
		c.data = make([]uint8, rows*c.Stride)
		for r := 0; r < rows; r++ {
			copy(c.data[r*c.Stride:], vals[r*cols:(r+1)*cols])
		}
	}
	return &codesOperand{b.Operand(), c}, nil
}

// WrapCodes makes c an operand without copying (codes a caller already
// holds, such as a compiled plan's weights).
func (b *Backend) WrapCodes(c Codes) (bmm.Codes, error) {
	if !c.valid() {
		return nil, fmt.Errorf("%w: codes %d×%d of %d bits not made by NewCodes", bmm.ErrShape, c.Rows, c.Cols, c.Bits)
	}
	return &codesOperand{b.Operand(), c}, nil
}

// UploadGraph implements bmm.Backend: an Adj over g's slices (not copied).
// NewAdj checks what bmm.CheckGraph checks, so a good graph is read once;
// CheckGraph words the error of a bad one as every backend does.
func (b *Backend) UploadGraph(g *bmm.Graph, srcRows int) (bmm.GraphOperand, error) {
	if g != nil {
		a, err := newAdj(CSR{Indptr: g.Indptr, Indices: g.Indices}, g.Weights, g.WeightBits, srcRows, b.lane == nil)
		if err == nil {
			return &graphOperand{b.Operand(), a, a.maxDeg * a.wmax}, nil
		}
	}
	if _, err := bmm.CheckGraph(g, srcRows); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: graph that bmm.CheckGraph passes and NewAdj refuses", bmm.ErrShape) // not expected
}

// NewCodes implements bmm.Backend.
func (b *Backend) NewCodes(rows, cols, nbits int) (bmm.Codes, error) {
	if err := bmm.CheckCodes(nil, rows, cols, nbits); err != nil {
		return nil, err
	}
	c, err := NewCodes(rows, cols, nbits)
	if err != nil {
		return nil, err
	}
	touch(b.lane != nil, c.data)
	return &codesOperand{b.Operand(), c}, nil
}

// NewBits implements bmm.Backend (bmm.Host's, touched).
func (b *Backend) NewBits(rows, cols, nbits int, packing bittensor.Packing) (bmm.Bits, error) {
	o, err := b.Host.NewBits(rows, cols, nbits, packing)
	if err == nil {
		touch(b.lane != nil, o.(*bmm.HostBits).T.Words())
	}
	return o, err
}

// NewVector implements bmm.Backend (bmm.Host's, touched).
func (b *Backend) NewVector(n int) (bmm.Vector, error) {
	o, err := b.Host.NewVector(n)
	if err == nil {
		touch(b.lane != nil, o.(*bmm.HostVector).V)
	}
	return o, err
}

// touch writes the pages of a fresh output of 64 KiB or more where it is
// allocated, on every core (a fork: on its goroutine), rather than in the
// op that first writes it: a plan allocates its outputs ahead of its first
// pass (layers.Plan.Prepare), which then takes no page fault of its own.
func touch[E any](fork bool, s []E) {
	var e E
	grain := clearWordsGrain * 8 / int(unsafe.Sizeof(e))
	chunks := len(s) / grain
	switch {
	case chunks < 1:
	case fork || chunks < 2 || runtime.GOMAXPROCS(0) == 1:
		clear(s)
	default:
		par.For(chunks, runtime.GOMAXPROCS(0), func(i int) {
			hi := (i + 1) * grain
			if i == chunks-1 {
				hi = len(s)
			}
			clear(s[i*grain : hi])
		})
	}
}

func (b *Backend) codes(o bmm.Codes, what string) (Codes, error) {
	if x, ok := o.(*codesOperand); ok && x.Alive(&b.Host) {
		return x.c, nil
	}
	return Codes{}, bmm.Foreign(what)
}

func (b *Backend) graph(o bmm.GraphOperand) (*graphOperand, error) {
	if x, ok := o.(*graphOperand); ok && x.Alive(&b.Host) {
		return x, nil
	}
	return nil, bmm.Foreign("graph")
}

func fits(a, w *bittensor.Tensor) bool { return bmm.Fits(a.Cols(), a.Bits(), w.Bits()) }

// MulBit implements bmm.Backend with the kernel's fused MulBit.
func (b *Backend) MulBit(dst bmm.Bits, a, w bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	at, wt, e, err := b.Product(a, w, ep)
	if err != nil {
		return err
	}
	d, err := b.Tensor(dst, "destination")
	if err != nil {
		return err
	}
	if err := bmm.CheckDst(d, at.Rows(), wt.Cols()); err != nil {
		return err
	}
	b.CountOp()
	if fits(at, wt) {
		return b.k.MulBit(d, at, wt, e, rq)
	}
	return bmm.WideMulBit(b.k, d, at, wt, e, rq)
}

// MulCodes implements bmm.Backend with Kernel.MulCodes.
func (b *Backend) MulCodes(dst bmm.Codes, a, w bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	at, wt, e, err := b.Product(a, w, ep)
	if err != nil {
		return err
	}
	d, err := b.codes(dst, "destination")
	if err != nil {
		return err
	}
	m, n := at.Rows(), wt.Cols()
	if d.Rows != m || d.Cols != n {
		return fmt.Errorf("%w: destination is %d×%d, product is %d×%d", bmm.ErrShape, d.Rows, d.Cols, m, n)
	}
	b.CountOp()
	if fits(at, wt) {
		return b.k.MulCodes(d, at, wt, e, rq)
	}
	y := make([]float32, m*n)
	if err := bmm.WideMulFloat(b.k, y, at, wt, e); err != nil {
		return err
	}
	for r := 0; r < m; r++ {
		d.QuantizeRow(r, y[r*n:(r+1)*n], rq)
	}
	return nil
}

// MulFloat implements bmm.Backend with the kernel's MulFloat.
func (b *Backend) MulFloat(dst bmm.Vector, a, w bmm.Bits, ep *bmm.Epi) error {
	at, wt, e, err := b.Product(a, w, ep)
	if err != nil {
		return err
	}
	d, err := b.Floats(dst, "destination")
	if err != nil {
		return err
	}
	if len(d) != at.Rows()*wt.Cols() {
		return fmt.Errorf("%w: destination has %d values, product is %d×%d", bmm.ErrShape, len(d), at.Rows(), wt.Cols())
	}
	b.CountOp()
	if fits(at, wt) {
		return b.k.MulFloat(d, at, wt, e)
	}
	return bmm.WideMulFloat(b.k, d, at, wt, e)
}

// agg resolves and checks an aggregation's operands.
func (b *Backend) agg(g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi) (Adj, Codes, *bmm.Epilogue, error) {
	gg, err := b.graph(g)
	if err != nil {
		return Adj{}, Codes{}, nil, err
	}
	xc, err := b.codes(x, "X")
	if err != nil {
		return Adj{}, Codes{}, nil, err
	}
	if err := bmm.CheckAgg(gg.Rows(), gg.a.nsrc, gg.maxSum, xc.Rows, xc.Cols, xc.Bits); err != nil {
		return Adj{}, Codes{}, nil, err
	}
	e, err := b.Epilogue(ep, gg.Rows(), xc.Cols)
	return gg.a, xc, e, err
}

// AggBit implements bmm.Backend with AggBit.
func (b *Backend) AggBit(dst bmm.Bits, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	d, err := b.Tensor(dst, "destination")
	if err != nil {
		return err
	}
	a, xc, e, err := b.agg(g, x, ep)
	if err != nil {
		return err
	}
	if err := bmm.CheckDst(d, a.Rows(), xc.Cols); err != nil {
		return err
	}
	b.CountOp()
	if xc.Cols == 0 { // cpu.Agg* panic on a 0-column X with edges (aggRowsAsm's bound hint)
		clear(d.Words())
		return nil
	}
	return aggBit(b.lane, d, a, xc, e, rq)
}

// AggCodes implements bmm.Backend with AggCodes.
func (b *Backend) AggCodes(dst bmm.Codes, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	d, err := b.codes(dst, "destination")
	if err != nil {
		return err
	}
	a, xc, e, err := b.agg(g, x, ep)
	if err != nil {
		return err
	}
	if d.Rows != a.Rows() || d.Cols != xc.Cols {
		return fmt.Errorf("%w: destination is %d×%d, aggregation is %d×%d", bmm.ErrShape, d.Rows, d.Cols, a.Rows(), xc.Cols)
	}
	b.CountOp()
	if xc.Cols == 0 {
		return nil // nothing to write (see AggBit)
	}
	return aggCodes(b.lane, d, a, xc, e, rq)
}

// AggFloat implements bmm.Backend with AggFloat.
func (b *Backend) AggFloat(dst bmm.Vector, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi) error {
	d, err := b.Floats(dst, "destination")
	if err != nil {
		return err
	}
	a, xc, e, err := b.agg(g, x, ep)
	if err != nil {
		return err
	}
	if len(d) != a.Rows()*xc.Cols {
		return fmt.Errorf("%w: destination has %d values, aggregation is %d×%d", bmm.ErrShape, len(d), a.Rows(), xc.Cols)
	}
	b.CountOp()
	if xc.Cols == 0 {
		return nil // nothing to write (see AggBit)
	}
	return aggFloat(b.lane, d, a, xc, e)
}

// parRows runs f over [0, n) in one chunk per core (one call below 64,
// or on a fork).
func (b *Backend) parRows(n int, f func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if n < 64 || w == 1 || b.lane != nil {
		f(0, n)
		return
	}
	chunk := (n + w - 1) / w
	par.Run((n+chunk-1)/chunk, func(i int) { f(i*chunk, min(n, (i+1)*chunk)) })
}

// RowSums implements bmm.Backend: Σ_p 2^p popcount(line p) of each row,
// plane by plane over the packed words, rows in parallel.
func (b *Backend) RowSums(dst bmm.Vector, a bmm.Bits) error {
	t, err := b.Tensor(a, "A")
	if err != nil {
		return err
	}
	d, err := b.Floats(dst, "destination")
	if err != nil {
		return err
	}
	if err := bmm.CheckRowSums(len(d), t); err != nil {
		return err
	}
	b.CountOp()
	lw := t.LineWords()
	used := (t.K() + 63) / 64 // the words past K are padding, always zero
	b.parRows(t.Rows(), func(lo, hi int) {
		sums := make([]int64, hi-lo)
		for p := 0; p < t.Bits(); p++ {
			plane := t.Plane(p)
			for l := lo; l < hi; l++ {
				var pop int
				for _, w := range plane[l*lw : l*lw+used] {
					pop += bits.OnesCount64(w)
				}
				sums[l-lo] += int64(pop) << p
			}
		}
		for l, s := range sums {
			d[lo+l] = float32(s)
		}
	})
	return nil
}

// Argmax implements bmm.Backend: bmm.ArgmaxRow of each row, rows in
// parallel, found as layers.QArgmax finds it.
func (b *Backend) Argmax(dst []int32, logits bmm.Vector, cols int) error {
	l, err := b.Floats(logits, "logits")
	if err != nil {
		return err
	}
	if err := bmm.CheckArgmax(len(dst), len(l), cols); err != nil {
		return err
	}
	b.argmaxRows(dst, l, cols)
	return nil
}

// argmaxRows is the op of Argmax and ArgmaxAt: argmaxRow of each of the
// len(dst) rows of l into dst, rows in parallel.
func (b *Backend) argmaxRows(dst []int32, l []float32, cols int) {
	b.CountOp()
	b.parRows(len(dst), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst[r] = argmaxRow(l[r*cols : (r+1)*cols])
		}
	})
}

// ArgmaxTo implements bmm.Backend: Argmax's rows, each written at its
// index (distinct, so the rows in parallel never meet).
func (b *Backend) ArgmaxTo(dst bmm.Ints, at bmm.Index, logits bmm.Vector, cols int) error {
	d, idx, l, err := b.ArgmaxOperands(dst, at, logits, cols)
	if err != nil {
		return err
	}
	b.CountOp()
	b.parRows(len(idx), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			d[idx[r]] = argmaxRow(l[r*cols : (r+1)*cols])
		}
	})
	return nil
}

// ArgmaxAt implements bmm.ArgmaxAter: Argmax's rows written from off.
func (b *Backend) ArgmaxAt(dst bmm.Ints, off int, logits bmm.Vector, cols int) error {
	d, err := b.Ints(dst, "argmax destination")
	if err != nil {
		return err
	}
	l, err := b.Floats(logits, "logits")
	if err != nil {
		return err
	}
	if err := bmm.CheckArgmaxAt(len(d), off, len(l), cols); err != nil {
		return err
	}
	b.argmaxRows(d[off:off+len(l)/cols], l, cols)
	return nil
}

// NewInts implements bmm.Backend: the fill on all cores (a graph's
// predictions: millions of values, once a pass).
func (b *Backend) NewInts(n int, fill int32) (bmm.Ints, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %d ints", bmm.ErrShape, n)
	}
	v := make([]int32, n)
	b.parRows(n, func(lo, hi int) {
		s := v[lo:hi]
		for i := range s {
			s[i] = fill
		}
	})
	return &bmm.HostInts{HostOperand: b.Operand(), V: v}, nil
}

// ReadInts implements bmm.Backend: the copy on all cores.
func (b *Backend) ReadInts(dst []int32, v bmm.Ints) error {
	s, err := b.Ints(v, "ints")
	if err != nil {
		return err
	}
	if len(dst) != len(s) {
		return fmt.Errorf("%w: reading %d ints into %d", bmm.ErrShape, len(s), len(dst))
	}
	b.parRows(len(s), func(lo, hi int) { copy(dst[lo:hi], s[lo:hi]) })
	return nil
}

// argmaxRow is bmm.ArgmaxRow: the largest value first (the max builtin
// has no data-dependent branch), then its first position, about one
// mispredicted branch per row instead of one per new running best.
func argmaxRow(row []float32) int32 {
	bv := row[0]
	for _, x := range row[1:] {
		bv = max(bv, x)
	}
	if bv != bv { // a NaN: the running-best scan, whose > never takes one
		return bmm.ArgmaxRow(row)
	}
	best := 0
	for row[best] != bv {
		best++
	}
	return int32(best)
}

// ReadCodes implements bmm.Backend.
func (b *Backend) ReadCodes(dst []uint8, x bmm.Codes) error {
	c, err := b.codes(x, "codes")
	if err != nil {
		return err
	}
	if len(dst) != c.Rows*c.Cols {
		return fmt.Errorf("%w: reading %d×%d codes into %d bytes", bmm.ErrShape, c.Rows, c.Cols, len(dst))
	}
	for r := 0; r < c.Rows; r++ {
		copy(dst[r*c.Cols:(r+1)*c.Cols], c.data[r*c.Stride:])
	}
	return nil
}

// The cost model of PreferEdges, in CPU cycles: an edge list costs about
// 1/16 cycle per edge and column with the vector kernel (1 cycle
// without), a dense bit product about 1/200 cycle per bit-MAC (bench/cpu:
// 190-280 bit-MACs/cycle/core on AVX-512, 75-107 on AVX2) over every
// non-zero 64×256 tile of the adjacency.
const (
	aggEdgeColsPerCycle  = 16
	denseBitMACsPerCycle = 200
)

// PreferEdges implements bmm.Backend with the cost model above (the
// columns, common to both sides, cancel).
func (b *Backend) PreferEdges(c bmm.AggCost) bool {
	perEdge := 1.0
	if AggVectorized() {
		perEdge = 1.0 / aggEdgeColsPerCycle
	}
	edges := float64(c.Edges) * perEdge
	dense := float64(c.DenseTiles) * 64 * 256 * float64(c.Bits) / denseBitMACsPerCycle
	return edges < dense
}

// mergeRows bounds the rows of a merged pass: past it, one value of a
// merged pass (64 byte codes a row) outgrows a server's last-level cache,
// where batch by batch keeps each op's output in cache for the next.
const mergeRows = 1 << 18

// PreferMerged implements bmm.Backend: every op splits its rows across
// the cores, so one op over every row pays the cores' start and join once
// instead of once per batch, while its values stay in cache. On one core
// there is no start or join to save (and a one-shot pass pays for the
// merged batch's larger first uploads); batches enough for two rounds on
// every core stay apart too: layers then runs them whole, side by side on
// forks, with no start or join at all.
func (b *Backend) PreferMerged(batches, rows int) bool {
	if w := runtime.GOMAXPROCS(0); w == 1 || batches >= 2*w {
		return false
	}
	return batches > 1 && rows <= mergeRows
}

var _ bmm.Forker = (*Backend)(nil)
