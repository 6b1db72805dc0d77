package cpu

//go:generate sh -c "cd _asm && go run ./agg -out ../agg_gen_amd64.s -stubs ../agg_gen_amd64.go -pkg cpu"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"

	"github.com/qgtc/qgtc/internal/par"
	"github.com/qgtc/qgtc/templates"
)

// Sparse aggregation of quantized codes.
//
// The bit kernels compute A·X for a 1-bit adjacency A from its bit planes,
// skipping all-zero 64×256 chunks of A. On a sparse graph most chunks that
// hold an edge hold only a few, and the kernel still pays for every bit of
// them: on Coauthor Physics batches the dense 1-bit product does about 190×
// the work of the edge list. The Agg functions compute the same product,
// with the same integers, by visiting each 1 of A from its CSR list
// (zero-skipping at the granularity of single bits) and adding the source
// row's codes. The result is the same int32 matrix, so the fused epilogue,
// the re-quantization and the packed output are bit for bit those of
// bmm.MM2Int / MM2Float / MM2Bit on the packed adjacency.

// ErrCodes reports a Codes matrix or an aggregation whose shapes or values
// do not fit.
var ErrCodes = errors.New("cpu: codes")

// CodesAlign is the row stride granularity of Codes, in bytes: the vector
// kernels read whole 16-byte groups, so a row is padded with zeros.
const CodesAlign = 16

// Codes is a row-major matrix of unsigned integers of at most 8 bits, one
// byte each: quantized node features as a sparse aggregation gathers them.
// Its bytes are written only through its methods and the package's
// functions, which keep every code below 2^Bits and the padding zero; the
// aggregation kernels rely on that to sum codes in bytes.
type Codes struct {
	Rows, Cols, Bits int
	Stride           int // bytes per row, a multiple of CodesAlign
	data             []uint8
}

// NewCodes allocates a zeroed rows×cols matrix of bits-bit codes.
func NewCodes(rows, cols, bits int) (Codes, error) {
	if rows < 0 || cols < 0 {
		return Codes{}, fmt.Errorf("%w: shape %d×%d", ErrCodes, rows, cols)
	}
	if bits < 1 || bits > 8 {
		return Codes{}, fmt.Errorf("%w: %d bits (1..8 fit a byte)", ErrCodes, bits)
	}
	stride := (cols + CodesAlign - 1) / CodesAlign * CodesAlign
	return Codes{Rows: rows, Cols: cols, Bits: bits, Stride: stride, data: make([]uint8, rows*stride)}, nil
}

// NewCodesIn is NewCodes on reused storage: old's bytes when they can hold
// the new shape (cleared; old must not be used afterwards), else new ones.
func NewCodesIn(old Codes, rows, cols, bits int) (Codes, error) {
	if rows < 0 {
		return Codes{}, fmt.Errorf("%w: shape %d×%d", ErrCodes, rows, cols)
	}
	c, err := NewCodes(0, cols, bits) // validates cols and bits, allocates nothing
	if err != nil {
		return Codes{}, err
	}
	n := rows * c.Stride
	if cap(old.data) < n {
		return NewCodes(rows, cols, bits)
	}
	c.Rows, c.data = rows, old.data[:n]
	clear(c.data)
	return c, nil
}

// CodesFromInts packs row-major values (each in [0, 2^bits)) as Codes; a
// value out of range is an error that names its index.
func CodesFromInts(vals []int32, rows, cols, bits int) (Codes, error) {
	c, err := NewCodes(rows, cols, bits)
	if err != nil {
		return c, err
	}
	if len(vals) != rows*cols {
		return Codes{}, fmt.Errorf("%w: %d values for %d×%d", ErrCodes, len(vals), rows, cols)
	}
	top := int32(1)<<bits - 1
	for i, v := range vals {
		if v < 0 || v > top {
			return Codes{}, fmt.Errorf("%w: value %d at index %d (row %d, column %d) does not fit %d bits", ErrCodes, v, i, i/max(cols, 1), i%max(cols, 1), bits)
		}
		c.data[i/cols*c.Stride+i%cols] = uint8(v)
	}
	return c, nil
}

// At is the code at row r, column j.
func (c Codes) At(r, j int) uint8 {
	if j < 0 || j >= c.Cols {
		panic(fmt.Sprintf("cpu: Codes.At column %d of %d", j, c.Cols))
	}
	return c.data[r*c.Stride+j]
}

// Bytes is the size of the storage.
func (c Codes) Bytes() int { return len(c.data) }

// Ints is the matrix as row-major int32 values (for tests and tools).
func (c Codes) Ints() []int32 {
	out := make([]int32, 0, c.Rows*c.Cols)
	for r := 0; r < c.Rows; r++ {
		for _, v := range c.data[r*c.Stride : r*c.Stride+c.Cols] {
			out = append(out, int32(v))
		}
	}
	return out
}

// QuantizeRow writes row r: the codes rq.Quantize(y[j], c.Bits) of the
// epilogue output y (len c.Cols), as the fused kernels re-quantize.
func (c Codes) QuantizeRow(r int, y []float32, rq bmm.Requant) {
	if len(y) != c.Cols {
		panic(fmt.Sprintf("cpu: Codes.QuantizeRow with %d values for %d columns", len(y), c.Cols))
	}
	quantizeRowBytes(c.data[r*c.Stride:r*c.Stride+c.Cols], y, rq, c.Bits)
}

// valid checks the shape fields against the storage (a Codes not made by
// this package is refused).
func (c Codes) valid() bool {
	return c.Rows >= 0 && c.Cols >= 0 && c.Bits >= 1 && c.Bits <= 8 && c.Stride >= c.Cols &&
		c.Stride%CodesAlign == 0 && len(c.data) == c.Rows*c.Stride
}

// CSR is the graph type of the fp32 templates, shared so that one graph
// feeds both paths; NewAdj reads its Indptr and Indices (checked with
// CSR.Validate) and ignores EdgeIDs.
type CSR = templates.CSR

// ErrCSR is the error NewAdj wraps for a malformed graph: templates.ErrCSR.
var ErrCSR = templates.ErrCSR

// Adj is the left operand of an aggregation, checked once by NewAdj: a
// sparse matrix whose row v lists, in CSR, the rows of X it sums. Its
// entries are 1 (a 1-bit adjacency) or small unsigned codes, one per entry
// (quantized values, e.g. the codes of sparse node features).
type Adj struct {
	g      CSR
	w      []uint8 // nil: every entry is 1
	nsrc   int     // rows of the X it may multiply
	wmax   int64   // largest weight (1 without weights)
	maxDeg int64   // longest row
}

// NewAdj checks g against nsrc source rows (every index in [0, nsrc)) and
// the weights w (nil, or one per entry below 2^wbits, wbits <= 8) and
// returns the operand. The aggregation functions then check only shapes.
func NewAdj(g CSR, w []uint8, wbits, nsrc int) (Adj, error) {
	return newAdj(g, w, wbits, nsrc, false)
}

// newAdj is NewAdj; with cores, a large graph's checks run on every core
// first (a one-shot pass uploads its graphs inside the timed pass), and
// the serial checks run only to word the error of a graph they refuse.
func newAdj(g CSR, w []uint8, wbits, nsrc int, cores bool) (Adj, error) {
	g = CSR{Indptr: g.Indptr, Indices: g.Indices}
	if cores && len(g.Indices) >= adjParEntries && runtime.GOMAXPROCS(0) > 1 && (w == nil || len(w) == len(g.Indices)) {
		if a, ok := scanAdj(g, w, wbits, nsrc); ok {
			return a, nil
		}
	}
	if err := g.Validate(nsrc); err != nil {
		return Adj{}, err
	}
	a := Adj{g: g, nsrc: nsrc, wmax: 1}
	if w != nil {
		if wbits < 1 || wbits > 8 || len(w) != len(g.Indices) {
			return Adj{}, fmt.Errorf("%w: %d weights of %d bits for %d entries", ErrCodes, len(w), wbits, len(g.Indices))
		}
		top := uint8(1<<wbits - 1)
		a.wmax = 0
		for p, v := range w {
			if v > top {
				return Adj{}, fmt.Errorf("%w: weight %d of entry %d does not fit %d bits", ErrCodes, v, p, wbits)
			}
			a.wmax = max(a.wmax, int64(v))
		}
		a.w = w
	}
	for v := 0; v < g.Rows(); v++ {
		a.maxDeg = max(a.maxDeg, int64(g.Indptr[v+1]-g.Indptr[v]))
	}
	return a, nil
}

// adjParEntries is the entry count from which newAdj checks on the cores.
const adjParEntries = 1 << 16

// scanAdj makes the Adj of a graph with weights w (nil, or one per entry)
// when every check NewAdj makes passes, row ranges on every core; ok false
// when one fails or wbits is out of range.
func scanAdj(g CSR, w []uint8, wbits, nsrc int) (a Adj, ok bool) {
	n := len(g.Indptr) - 1
	if n < 0 || g.Indptr[0] != 0 || int(g.Indptr[n]) != len(g.Indices) || (w != nil && (wbits < 1 || wbits > 8)) {
		return Adj{}, false
	}
	top := uint8(1<<max(wbits, 1) - 1)
	workers := runtime.GOMAXPROCS(0)
	chunk := (n + workers - 1) / workers
	type part struct {
		bad          bool
		maxDeg, wmax int64
		_            [40]byte
	}
	parts := make([]part, workers)
	par.Run(workers, func(i int) {
		p := &parts[i]
		lo, hi := min(n, i*chunk), min(n, (i+1)*chunk)
		for v := lo; v < hi; v++ {
			s, e := g.Indptr[v], g.Indptr[v+1]
			if s < 0 || e < s || int(e) > len(g.Indices) {
				p.bad = true // and the slices below would be out of range
				return
			}
			p.maxDeg = max(p.maxDeg, int64(e-s))
		}
		if lo == hi {
			return
		}
		s, e := g.Indptr[lo], g.Indptr[hi]
		for _, u := range g.Indices[s:e] {
			if u < 0 || int(u) >= nsrc {
				p.bad = true
				return
			}
		}
		if w != nil {
			for _, x := range w[s:e] {
				if x > top {
					p.bad = true
					return
				}
				p.wmax = max(p.wmax, int64(x))
			}
		}
	})
	a = Adj{g: g, nsrc: nsrc, wmax: 1}
	if w != nil {
		a.w, a.wmax = w, 0
	}
	for _, p := range parts {
		if p.bad {
			return Adj{}, false
		}
		a.maxDeg = max(a.maxDeg, p.maxDeg)
		if w != nil {
			a.wmax = max(a.wmax, p.wmax)
		}
	}
	return a, true
}

// Rows is the number of rows of the product.
func (a Adj) Rows() int { return max(len(a.g.Indptr)-1, 0) }

// checkAgg checks the shapes of an aggregation of x over a and that no row
// can overflow int32; it returns the row count. Codes hold codes below
// 2^Bits by construction, so they are not scanned.
func checkAgg(a Adj, x Codes) (int, error) {
	if a.g.Indptr == nil {
		return 0, fmt.Errorf("%w: adjacency not made by NewAdj", ErrCodes)
	}
	if !x.valid() || x.Rows != a.nsrc {
		return 0, fmt.Errorf("%w: X is %d×%d (%d bits, stride %d, %d bytes), the adjacency takes %d rows", ErrCodes, x.Rows, x.Cols, x.Bits, x.Stride, len(x.data), a.nsrc)
	}
	if a.maxDeg*a.wmax*(1<<x.Bits-1) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: a row of %d entries of weight up to %d over %d-bit codes can overflow int32", ErrCodes, a.maxDeg, a.wmax, x.Bits)
	}
	return a.Rows(), nil
}

// AggInt computes dst = A·X: row v of dst (len x.Cols) is the sum of the
// rows of x that row v of a lists, each times its weight. dst is len(a.Indptr)-1 × x.Cols,
// row-major. Rows that list a source twice count it twice.
func AggInt(dst []int32, a Adj, x Codes) error {
	m, err := checkAgg(a, x)
	if err != nil {
		return err
	}
	if len(dst) != m*x.Cols {
		return fmt.Errorf("%w: dst holds %d values, want %d×%d", ErrCodes, len(dst), m, x.Cols)
	}
	runAgg(nil, a, x, m, func(s *aggScratch, v0, rows int) {
		for r := 0; r < rows; r++ {
			copy(dst[(v0+r)*x.Cols:(v0+r+1)*x.Cols], s.acc[r*x.Stride:r*x.Stride+x.Cols])
		}
	})
	return nil
}

// AggFloat computes dst = ep(A·X) in float32, as bmm.MM2Float does on the
// packed adjacency (bit for bit).
func AggFloat(dst []float32, a Adj, x Codes, ep *bmm.Epilogue) error {
	return aggFloat(nil, dst, a, x, ep)
}

// aggFloat is AggFloat on lane (see runAgg).
func aggFloat(lane *aggScratch, dst []float32, a Adj, x Codes, ep *bmm.Epilogue) error {
	m, err := checkAgg(a, x)
	if err != nil {
		return err
	}
	n := x.Cols
	if len(dst) != m*n {
		return fmt.Errorf("%w: dst holds %d values, want %d×%d", ErrCodes, len(dst), m, n)
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	runAgg(lane, a, x, m, func(s *aggScratch, v0, rows int) {
		applyRows(dst[v0*n:(v0+rows)*n], n, s.acc, x.Stride, v0, rows, n, ep)
	})
	return nil
}

// AggBit computes ep(A·X), re-quantizes it with rq to dst.Bits() bits and
// packs it into dst (either packing), as bmm.MM2Bit / MM2BitCols do on the
// packed adjacency (bit for bit).
func AggBit(dst *bittensor.Tensor, a Adj, x Codes, ep *bmm.Epilogue, rq bmm.Requant) error {
	return aggBit(nil, dst, a, x, ep, rq)
}

// aggBit is AggBit on lane (see runAgg).
func aggBit(lane *aggScratch, dst *bittensor.Tensor, a Adj, x Codes, ep *bmm.Epilogue, rq bmm.Requant) error {
	m, err := checkAgg(a, x)
	if err != nil {
		return err
	}
	n := x.Cols
	if err := bmm.CheckDst(dst, m, n); err != nil {
		return err
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	clearWords(lane != nil, dst.Words())
	runAgg(lane, a, x, m, func(s *aggScratch, v0, rows int) {
		applyQuantizePackRows(dst, &s.q, s.acc, x.Stride, v0, rows, n, ep, rq)
	})
	return nil
}

// AggCodes computes ep(A·X) re-quantized with rq into dst (dst.Bits bits,
// dst.Cols == x.Cols): the input of a further aggregation.
func AggCodes(dst Codes, a Adj, x Codes, ep *bmm.Epilogue, rq bmm.Requant) error {
	return aggCodes(nil, dst, a, x, ep, rq)
}

// aggCodes is AggCodes on lane (see runAgg).
func aggCodes(lane *aggScratch, dst Codes, a Adj, x Codes, ep *bmm.Epilogue, rq bmm.Requant) error {
	m, err := checkAgg(a, x)
	if err != nil {
		return err
	}
	n := x.Cols
	if !dst.valid() || dst.Rows != m || dst.Cols != n {
		return fmt.Errorf("%w: dst is %d×%d (%d bits, stride %d), want %d×%d", ErrCodes, dst.Rows, dst.Cols, dst.Bits, dst.Stride, m, n)
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	runAgg(lane, a, x, m, func(s *aggScratch, v0, rows int) {
		applyQuantizeRows(dst.data[v0*dst.Stride:(v0+rows)*dst.Stride], dst.Stride, s.acc, x.Stride, v0, rows, n, ep, rq, dst.Bits)
	})
	return nil
}

// aggBlock is the rows of one task: a multiple of 64 so that a task owns
// whole words of a column-packed output.
const aggBlock = 64

// aggScratch is one worker's buffers: the int32 sums of a block of rows
// (row r at acc[r*x.Stride:]) and room for its re-quantized codes.
type aggScratch struct {
	acc []int32
	q   []uint32
}

// runAgg sums the rows of each 64-row block of A·X into the worker's
// scratch and hands it to finish. Blocks go to GOMAXPROCS workers, or with
// a lane (a fork's scratch, kept from op to op) all to the caller.
func runAgg(lane *aggScratch, a Adj, x Codes, m int, finish func(s *aggScratch, v0, rows int)) {
	blocks := (m + aggBlock - 1) / aggBlock
	var next atomic.Int64
	work := func(s *aggScratch) {
		s.acc = growSlice(s.acc, aggBlock*x.Stride)
		for {
			i := int(next.Add(1) - 1)
			if i >= blocks {
				return
			}
			v0 := i * aggBlock
			rows := min(aggBlock, m-v0)
			clear(s.acc[:rows*x.Stride])
			if useAggAVX2 {
				aggRowsAsm(s.acc, x, a, v0, rows)
			} else {
				aggRowsGeneric(s.acc, x, a, v0, rows)
			}
			finish(s, v0, rows)
		}
	}
	if lane != nil {
		work(lane)
		return
	}
	par.Run(min(runtime.GOMAXPROCS(0), blocks), func(int) { work(&aggScratch{}) })
}

// clearWordsGrain is the slice length (64 KiB of words) from which
// clearWords splits the clearing over the cores.
const clearWordsGrain = 1 << 13

// clearWords zeroes w, on every core when it is large and the caller is not
// a fork (whose ops stay on its goroutine). A fresh output is first
// touched here: on one core, a one-shot pass took each of its page faults
// in turn (bench/manycore/RESULTS.md).
func clearWords(fork bool, w []uint64) {
	chunks := len(w) / clearWordsGrain
	if fork || chunks < 2 || runtime.GOMAXPROCS(0) == 1 {
		clear(w)
		return
	}
	par.For(chunks, runtime.GOMAXPROCS(0), func(i int) {
		hi := (i + 1) * clearWordsGrain
		if i == chunks-1 {
			hi = len(w)
		}
		clear(w[i*clearWordsGrain : hi])
	})
}

// QuantizeRow is the kernels' re-quantizer: q[j] = rq.Quantize(y[j], bits).
func QuantizeRow(q []uint32, y []float32, rq bmm.Requant, bits int) { quantizeRow(q, y, rq, bits) }

// AggVectorized reports whether the aggregation runs on its vector kernel.
func AggVectorized() bool { return useAggAVX2 }

// MulCodes computes ep(A·B) re-quantized with rq into dst's byte codes
// (dst.Bits bits): MulBit's fused product for a result that feeds a code
// aggregation instead of another bit product.
func (k *Kernel) MulCodes(dst Codes, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant) error {
	m, n, err := checkOperands(a, b)
	if err != nil {
		return err
	}
	if !dst.valid() || dst.Rows != m || dst.Cols != n {
		return fmt.Errorf("%w: dst is %d×%d (%d bits, stride %d), want %d×%d", ErrCodes, dst.Rows, dst.Cols, dst.Bits, dst.Stride, m, n)
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	p := newBitPlan(k, a, b)
	defer p.release()
	p.run(nil, func(t *bitTask, m0, m1 int) {
		applyQuantizeRows(dst.data[m0*dst.Stride:m1*dst.Stride], dst.Stride, t.tile, n, m0, m1-m0, n, ep, rq, dst.Bits)
	})
	return nil
}
