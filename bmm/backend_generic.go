package bmm

import (
	"fmt"
	"math"

	"github.com/qgtc/qgtc/bittensor"
)

// NewGenericBackend returns the reference Backend: pure Go, one output
// element at a time on the Generic kernel (WideProduct past int32), its
// operands private copies of what is uploaded. bmmtest checks every other
// backend against it.
func NewGenericBackend() Backend { return &genericBackend{} }

type genericBackend struct {
	ops    int64
	closed bool
}

// genOperand is what every generic operand embeds: its owner, and whether
// it was freed.
type genOperand struct {
	owner *genericBackend
	freed bool
}

func (o *genOperand) Free() { o.freed = true }

func (o *genOperand) alive(g *genericBackend) bool { return o.owner == g && !o.freed && !g.closed }

type genBits struct {
	genOperand
	t *bittensor.Tensor
}

func (b *genBits) Rows() int                  { return b.t.Rows() }
func (b *genBits) Cols() int                  { return b.t.Cols() }
func (b *genBits) Bits() int                  { return b.t.Bits() }
func (b *genBits) Packing() bittensor.Packing { return b.t.Packing() }

type genCodes struct {
	genOperand
	rows, cols, bits int
	v                []uint8 // row-major, rows·cols
}

func (c *genCodes) Rows() int { return c.rows }
func (c *genCodes) Cols() int { return c.cols }
func (c *genCodes) Bits() int { return c.bits }

type genVector struct {
	genOperand
	v []float32
}

func (v *genVector) Len() int { return len(v.v) }

type genGraph struct {
	genOperand
	g       Graph
	srcRows int
	maxSum  int64 // CheckGraph's weight bound
}

func (g *genGraph) Rows() int { return len(g.g.Indptr) - 1 }

func (g *genericBackend) Name() string { return "generic" }

func (g *genericBackend) UploadBits(t *bittensor.Tensor) (Bits, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrShape)
	}
	return &genBits{genOperand{owner: g}, t.Clone()}, nil
}

func (g *genericBackend) UploadVector(v []float32) (Vector, error) {
	c := make([]float32, len(v)) // never nil, even empty: a nil epilogue vector skips its step
	copy(c, v)
	return &genVector{genOperand{owner: g}, c}, nil
}

func (g *genericBackend) UploadCodes(vals []uint8, rows, cols, bits int) (Codes, error) {
	if err := CheckCodes(vals, rows, cols, bits); err != nil {
		return nil, err
	}
	return &genCodes{genOperand{owner: g}, rows, cols, bits, append([]uint8(nil), vals...)}, nil
}

func (g *genericBackend) UploadGraph(gr *Graph, srcRows int) (GraphOperand, error) {
	maxSum, err := CheckGraph(gr, srcRows)
	if err != nil {
		return nil, err
	}
	c := Graph{
		Indptr:     append([]int32(nil), gr.Indptr...),
		Indices:    append([]int32(nil), gr.Indices...),
		WeightBits: gr.WeightBits,
	}
	if gr.Weights != nil {
		c.Weights = append([]uint8(nil), gr.Weights...)
	}
	return &genGraph{genOperand{owner: g}, c, srcRows, maxSum}, nil
}

func (g *genericBackend) NewBits(rows, cols, bits int, packing bittensor.Packing) (Bits, error) {
	if bits < 1 || bits > bittensor.MaxBits {
		return nil, fmt.Errorf("%w: %d bits", ErrBits, bits)
	}
	t, err := bittensor.New(rows, cols, bits, packing, bittensor.DefaultPadding)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrShape, err)
	}
	return &genBits{genOperand{owner: g}, t}, nil
}

func (g *genericBackend) NewCodes(rows, cols, bits int) (Codes, error) {
	if err := CheckCodes(nil, rows, cols, bits); err != nil {
		return nil, err
	}
	return &genCodes{genOperand{owner: g}, rows, cols, bits, make([]uint8, rows*cols)}, nil
}

func (g *genericBackend) NewVector(n int) (Vector, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: vector of %d values", ErrShape, n)
	}
	return &genVector{genOperand{owner: g}, make([]float32, n)}, nil
}

// bits, codes, vector and graph return g's live operand behind o, or
// ErrForeign.
func (g *genericBackend) bits(o Bits, what string) (*bittensor.Tensor, error) {
	if b, ok := o.(*genBits); ok && b.alive(g) {
		return b.t, nil
	}
	return nil, foreign(what)
}

func (g *genericBackend) codes(o Codes, what string) (*genCodes, error) {
	if c, ok := o.(*genCodes); ok && c.alive(g) {
		return c, nil
	}
	return nil, foreign(what)
}

func (g *genericBackend) vector(o Vector, what string) ([]float32, error) {
	if v, ok := o.(*genVector); ok && v.alive(g) {
		return v.v, nil
	}
	return nil, foreign(what)
}

func (g *genericBackend) graph(o GraphOperand) (*genGraph, error) {
	if gr, ok := o.(*genGraph); ok && gr.alive(g) {
		return gr, nil
	}
	return nil, foreign("graph")
}

// epilogue resolves ep's vectors and checks them against an m×n output.
func (g *genericBackend) epilogue(ep *Epi, m, n int) (*Epilogue, error) {
	if ep == nil {
		return nil, nil
	}
	out := &Epilogue{ReLU: ep.ReLU}
	for _, f := range []struct {
		name string
		v    Vector
		dst  *[]float32
	}{
		{"ColScale", ep.ColScale, &out.ColScale}, {"RowTerm", ep.RowTerm, &out.RowTerm},
		{"ColTerm", ep.ColTerm, &out.ColTerm}, {"ColConst", ep.ColConst, &out.ColConst},
		{"RowScale", ep.RowScale, &out.RowScale}, {"ColBias", ep.ColBias, &out.ColBias},
	} {
		if f.v == nil {
			continue
		}
		s, err := g.vector(f.v, "epilogue "+f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = s
	}
	return out, out.Validate(m, n)
}

// product resolves and checks the operands of a product into an m×n output.
func (g *genericBackend) product(a, b Bits, ep *Epi) (at, bt *bittensor.Tensor, e *Epilogue, err error) {
	if at, err = g.bits(a, "A"); err != nil {
		return
	}
	if bt, err = g.bits(b, "B"); err != nil {
		return
	}
	if err = CheckProduct(at, bt); err != nil {
		return
	}
	e, err = g.epilogue(ep, at.Rows(), bt.Cols())
	return
}

// mulFloat is ep(A·B), row-major: the Generic kernel when the product fits
// int32, else WideProduct.
func mulFloat(a, b *bittensor.Tensor, ep *Epilogue) ([]float32, error) {
	y := make([]float32, a.Rows()*b.Cols())
	if Fits(a.Cols(), a.Bits(), b.Bits()) {
		return y, Generic{}.MulFloat(y, a, b, ep)
	}
	return y, WideMulFloat(Generic{}, y, a, b, ep)
}

func (g *genericBackend) MulBit(dst Bits, a, b Bits, ep *Epi, rq Requant) error {
	at, bt, e, err := g.product(a, b, ep)
	if err != nil {
		return err
	}
	d, err := g.bits(dst, "destination")
	if err != nil {
		return err
	}
	if err := CheckDst(d, at.Rows(), bt.Cols()); err != nil {
		return err
	}
	g.ops++
	if Fits(at.Cols(), at.Bits(), bt.Bits()) {
		return Generic{}.MulBit(d, at, bt, e, rq)
	}
	return WideMulBit(Generic{}, d, at, bt, e, rq)
}

func (g *genericBackend) MulCodes(dst Codes, a, b Bits, ep *Epi, rq Requant) error {
	at, bt, e, err := g.product(a, b, ep)
	if err != nil {
		return err
	}
	d, err := g.codes(dst, "destination")
	if err != nil {
		return err
	}
	if d.rows != at.Rows() || d.cols != bt.Cols() {
		return fmt.Errorf("%w: destination is %d×%d, product is %d×%d", ErrShape, d.rows, d.cols, at.Rows(), bt.Cols())
	}
	g.ops++
	y, err := mulFloat(at, bt, e)
	if err != nil {
		return err
	}
	for i, v := range y {
		d.v[i] = uint8(rq.Quantize(v, d.bits))
	}
	return nil
}

func (g *genericBackend) MulFloat(dst Vector, a, b Bits, ep *Epi) error {
	at, bt, e, err := g.product(a, b, ep)
	if err != nil {
		return err
	}
	d, err := g.vector(dst, "destination")
	if err != nil {
		return err
	}
	if len(d) != at.Rows()*bt.Cols() {
		return shapeLenErr(len(d), at.Rows(), bt.Cols())
	}
	g.ops++
	y, err := mulFloat(at, bt, e)
	copy(d, y)
	return err
}

// agg resolves an aggregation's operands and returns ep(G·X), row-major.
func (g *genericBackend) agg(gr GraphOperand, x Codes, ep *Epi) (y []float32, m, n int, err error) {
	gg, err := g.graph(gr)
	if err != nil {
		return nil, 0, 0, err
	}
	xc, err := g.codes(x, "X")
	if err != nil {
		return nil, 0, 0, err
	}
	if err := CheckAgg(gg.Rows(), gg.srcRows, gg.maxSum, xc.rows, xc.cols, xc.bits); err != nil {
		return nil, 0, 0, err
	}
	m, n = gg.Rows(), xc.cols
	e, err := g.epilogue(ep, m, n)
	if err != nil {
		return nil, 0, 0, err
	}
	y = make([]float32, m*n)
	for v := 0; v < m; v++ {
		for j := 0; j < n; j++ {
			var c int64
			for p := gg.g.Indptr[v]; p < gg.g.Indptr[v+1]; p++ {
				w := int64(1)
				if gg.g.Weights != nil {
					w = int64(gg.g.Weights[p])
				}
				c += w * int64(xc.v[int(gg.g.Indices[p])*n+j])
			}
			y[v*n+j] = e.Apply(int32(c), v, j) // CheckAgg bounds c by 2^31−1
		}
	}
	return y, m, n, nil
}

func (g *genericBackend) AggBit(dst Bits, gr GraphOperand, x Codes, ep *Epi, rq Requant) error {
	d, err := g.bits(dst, "destination")
	if err != nil {
		return err
	}
	y, m, n, err := g.agg(gr, x, ep)
	if err != nil {
		return err
	}
	if err := CheckDst(d, m, n); err != nil {
		return err
	}
	g.ops++
	clear(d.Words())
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			d.Set(i, j, rq.Quantize(y[i*n+j], d.Bits()))
		}
	}
	return nil
}

func (g *genericBackend) AggCodes(dst Codes, gr GraphOperand, x Codes, ep *Epi, rq Requant) error {
	d, err := g.codes(dst, "destination")
	if err != nil {
		return err
	}
	y, m, n, err := g.agg(gr, x, ep)
	if err != nil {
		return err
	}
	if d.rows != m || d.cols != n {
		return fmt.Errorf("%w: destination is %d×%d, aggregation is %d×%d", ErrShape, d.rows, d.cols, m, n)
	}
	g.ops++
	for i, v := range y {
		d.v[i] = uint8(rq.Quantize(v, d.bits))
	}
	return nil
}

func (g *genericBackend) AggFloat(dst Vector, gr GraphOperand, x Codes, ep *Epi) error {
	d, err := g.vector(dst, "destination")
	if err != nil {
		return err
	}
	y, m, n, err := g.agg(gr, x, ep)
	if err != nil {
		return err
	}
	if len(d) != m*n {
		return fmt.Errorf("%w: destination has %d values, aggregation is %d×%d", ErrShape, len(d), m, n)
	}
	g.ops++
	copy(d, y)
	return nil
}

func (g *genericBackend) RowSums(dst Vector, a Bits) error {
	at, err := g.bits(a, "A")
	if err != nil {
		return err
	}
	d, err := g.vector(dst, "destination")
	if err != nil {
		return err
	}
	if err := CheckRowSums(len(d), at); err != nil {
		return err
	}
	g.ops++
	for r := range d {
		var s int64
		for c := 0; c < at.Cols(); c++ {
			s += int64(at.At(r, c))
		}
		d[r] = float32(s)
	}
	return nil
}

func (g *genericBackend) Argmax(dst []int32, logits Vector, cols int) error {
	l, err := g.vector(logits, "logits")
	if err != nil {
		return err
	}
	if err := CheckArgmax(len(dst), len(l), cols); err != nil {
		return err
	}
	g.ops++
	for r := range dst {
		dst[r] = ArgmaxRow(l[r*cols : (r+1)*cols])
	}
	return nil
}

// ArgmaxRow is the column of row's largest value by the running-best scan
// of layers.QArgmax: the first on ties, a NaN never replaces the best (so
// it wins only from column 0, where the scan starts); −0 and +0 tie.
func ArgmaxRow(row []float32) int32 {
	best, run := 0, row[0]
	for j, x := range row {
		if x > run {
			run, best = x, j
		}
	}
	return int32(best)
}

func (g *genericBackend) ReadVector(dst []float32, v Vector) error {
	s, err := g.vector(v, "vector")
	if err != nil {
		return err
	}
	if len(dst) != len(s) {
		return fmt.Errorf("%w: reading %d values into %d", ErrShape, len(s), len(dst))
	}
	copy(dst, s)
	return nil
}

// PreferEdges compares the generic kernel's word operations: a dense
// aggregation ANDs and counts, per non-zero tile, 64 rows × 4 words for
// every column and bit plane (it skips no tile, but the tile count is the
// work an adjacency holds); the edge list adds one code per edge and column.
func (g *genericBackend) PreferEdges(c AggCost) bool {
	return float64(c.Edges) < float64(c.DenseTiles)*256*float64(c.Bits)
}

func (g *genericBackend) Traffic() Traffic { return Traffic{Ops: g.ops} }

func (g *genericBackend) Close() error {
	g.closed = true
	return nil
}

func foreign(what string) error { return fmt.Errorf("%w: %s", ErrForeign, what) }

// CheckProduct validates A (packed by rows) and B (by columns) for a
// backend product: Check's rules without its int32 limit, which backends
// lift with WideProduct.
func CheckProduct(a, b *bittensor.Tensor) error {
	if a.Packing() != bittensor.ByRows || b.Packing() != bittensor.ByCols {
		_, _, err := Check(a, b)
		return err
	}
	if a.Cols() != b.Rows() || a.LineWords() != b.LineWords() {
		_, _, err := Check(a, b)
		return err
	}
	return nil
}

// CheckCodes validates a rows×cols matrix of bits-bit codes (vals nil: no
// values yet).
func CheckCodes(vals []uint8, rows, cols, bits int) error {
	if bits < 1 || bits > 8 {
		return fmt.Errorf("%w: codes of %d bits (1..8 fit a byte)", ErrBits, bits)
	}
	if rows < 0 || cols < 0 {
		return fmt.Errorf("%w: codes of shape %d×%d", ErrShape, rows, cols)
	}
	if vals == nil {
		return nil
	}
	if len(vals) != rows*cols {
		return fmt.Errorf("%w: %d codes for %d×%d", ErrShape, len(vals), rows, cols)
	}
	top := uint8(1<<bits - 1)
	for i, v := range vals {
		if v > top {
			return fmt.Errorf("%w: code %d at row %d, column %d does not fit %d bits", ErrRange, v, i/cols, i%cols, bits)
		}
	}
	return nil
}

// CheckGraph validates g over srcRows source rows and returns its weight
// bound: the longest row's entry count times the largest weight (1 without
// weights). CheckAgg refuses, for every backend alike, an aggregation whose
// bound times the top code passes 2^31−1.
func CheckGraph(g *Graph, srcRows int) (int64, error) {
	if g == nil || len(g.Indptr) == 0 {
		return 0, fmt.Errorf("%w: graph without indptr (want rows+1 entries)", ErrShape)
	}
	if g.Indptr[0] != 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return 0, fmt.Errorf("%w: indptr runs from %d to %d over %d indices", ErrShape, g.Indptr[0], g.Indptr[len(g.Indptr)-1], len(g.Indices))
	}
	wmax := int64(1)
	if g.Weights != nil {
		if g.WeightBits < 1 || g.WeightBits > 8 || len(g.Weights) != len(g.Indices) {
			return 0, fmt.Errorf("%w: %d weights of %d bits for %d entries", ErrShape, len(g.Weights), g.WeightBits, len(g.Indices))
		}
		wmax = 0
		for p, w := range g.Weights {
			if int(w) >= 1<<g.WeightBits {
				return 0, fmt.Errorf("%w: weight %d of entry %d does not fit %d bits", ErrRange, w, p, g.WeightBits)
			}
			wmax = max(wmax, int64(w))
		}
	}
	var maxDeg int64
	for v := 0; v+1 < len(g.Indptr); v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return 0, fmt.Errorf("%w: indptr decreases at row %d", ErrShape, v)
		}
		maxDeg = max(maxDeg, int64(g.Indptr[v+1]-g.Indptr[v]))
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			if i := g.Indices[p]; i < 0 || int(i) >= srcRows {
				return 0, fmt.Errorf("%w: entry %d of row %d is source row %d of %d", ErrShape, p, v, i, srcRows)
			}
		}
	}
	return maxDeg * wmax, nil
}

// CheckAgg validates an aggregation of an xRows×xCols matrix of bits-bit
// codes over a graph of rows rows, srcRows sources and weight bound maxSum
// (CheckGraph), so that every sum fits int32.
func CheckAgg(rows, srcRows int, maxSum int64, xRows, xCols, bits int) error {
	if xRows != srcRows {
		return fmt.Errorf("%w: X is %d×%d, the graph sums %d source rows", ErrShape, xRows, xCols, srcRows)
	}
	if float64(maxSum)*(math.Exp2(float64(bits))-1) > math.MaxInt32 {
		return fmt.Errorf("%w: a row of weight %d over %d-bit codes can pass 2^31−1", ErrOverflow, maxSum, bits)
	}
	return nil
}

// CheckRowSums validates RowSums of a into n values.
func CheckRowSums(n int, a *bittensor.Tensor) error {
	if a.Packing() != bittensor.ByRows {
		return fmt.Errorf("%w: row sums need A packed by rows, got %v", ErrPacking, a.Packing())
	}
	if n != a.Rows() {
		return fmt.Errorf("%w: %d row sums for A of %d×%d", ErrShape, n, a.Rows(), a.Cols())
	}
	return nil
}

// CheckArgmax validates Argmax of rows×cols logits (n values) into rows
// predictions.
func CheckArgmax(rows, n, cols int) error {
	if cols < 1 || n != rows*cols {
		return fmt.Errorf("%w: argmax of %d logits as %d rows of %d columns", ErrShape, n, rows, cols)
	}
	return nil
}

func (g *genericBackend) ReadBits(b Bits) (*bittensor.Tensor, error) {
	t, err := g.bits(b, "bits")
	if err != nil {
		return nil, err
	}
	return CopyBits(t)
}

// CopyBits returns t's values in a new tensor of t's shape, width and
// packing with the default padding.
func CopyBits(t *bittensor.Tensor) (*bittensor.Tensor, error) {
	if t.Padding() == bittensor.DefaultPadding {
		return t.Clone(), nil
	}
	u, err := bittensor.New(t.Rows(), t.Cols(), t.Bits(), t.Packing(), bittensor.DefaultPadding)
	if err != nil {
		return nil, err
	}
	for r := 0; r < t.Rows(); r++ {
		for c := 0; c < t.Cols(); c++ {
			u.Set(r, c, t.At(r, c))
		}
	}
	return u, nil
}

func (g *genericBackend) ReadCodes(dst []uint8, c Codes) error {
	s, err := g.codes(c, "codes")
	if err != nil {
		return err
	}
	if len(dst) != len(s.v) {
		return fmt.Errorf("%w: reading %d×%d codes into %d bytes", ErrShape, s.rows, s.cols, len(dst))
	}
	copy(dst, s.v)
	return nil
}
