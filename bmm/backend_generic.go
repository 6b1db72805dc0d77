package bmm

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
)

// NewGenericBackend returns the reference Backend: pure Go, one output
// element at a time on the Generic kernel (WideProduct past int32), sums of
// aggregations straight from the definition. Bits and vectors are the
// caller's memory (Host); codes and graphs are copied. bmmtest checks
// every other backend against it.
func NewGenericBackend() Backend { return &genericBackend{} }

type genericBackend struct{ Host }

var _ Forker = (*genericBackend)(nil)

type genCodes struct {
	HostOperand
	rows, cols, bits int
	v                []uint8 // row-major, rows·cols
}

func (c *genCodes) Rows() int { return c.rows }
func (c *genCodes) Cols() int { return c.cols }
func (c *genCodes) Bits() int { return c.bits }

type genGraph struct {
	HostOperand
	g       Graph
	srcRows int
	maxSum  int64 // CheckGraph's weight bound
}

func (g *genGraph) Rows() int { return len(g.g.Indptr) - 1 }

func (g *genericBackend) Name() string { return "generic" }

// Fork implements Forker: the reference runs every op on its caller's
// goroutine already.
func (g *genericBackend) Fork() (Backend, error) {
	if g.Closed() {
		return nil, Foreign("backend (closed)")
	}
	f := &genericBackend{}
	g.ForkInto(&f.Host)
	return f, nil
}

func (g *genericBackend) UploadCodes(vals []uint8, rows, cols, bits int) (Codes, error) {
	if err := CheckCodes(vals, rows, cols, bits); err != nil {
		return nil, err
	}
	return &genCodes{g.Operand(), rows, cols, bits, append([]uint8(nil), vals...)}, nil
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
	return &genGraph{g.Operand(), c, srcRows, maxSum}, nil
}

func (g *genericBackend) NewCodes(rows, cols, bits int) (Codes, error) {
	if err := CheckCodes(nil, rows, cols, bits); err != nil {
		return nil, err
	}
	return &genCodes{g.Operand(), rows, cols, bits, make([]uint8, rows*cols)}, nil
}

// codes and graph return g's live operand behind o, or ErrForeign.
func (g *genericBackend) codes(o Codes, what string) (*genCodes, error) {
	if c, ok := o.(*genCodes); ok && c.Alive(&g.Host) {
		return c, nil
	}
	return nil, Foreign(what)
}

func (g *genericBackend) graph(o GraphOperand) (*genGraph, error) {
	if gr, ok := o.(*genGraph); ok && gr.Alive(&g.Host) {
		return gr, nil
	}
	return nil, Foreign("graph")
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
	at, bt, e, err := g.Product(a, b, ep)
	if err != nil {
		return err
	}
	d, err := g.Tensor(dst, "destination")
	if err != nil {
		return err
	}
	if err := CheckDst(d, at.Rows(), bt.Cols()); err != nil {
		return err
	}
	g.CountOp()
	if Fits(at.Cols(), at.Bits(), bt.Bits()) {
		return Generic{}.MulBit(d, at, bt, e, rq)
	}
	return WideMulBit(Generic{}, d, at, bt, e, rq)
}

func (g *genericBackend) MulCodes(dst Codes, a, b Bits, ep *Epi, rq Requant) error {
	at, bt, e, err := g.Product(a, b, ep)
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
	g.CountOp()
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
	at, bt, e, err := g.Product(a, b, ep)
	if err != nil {
		return err
	}
	d, err := g.Floats(dst, "destination")
	if err != nil {
		return err
	}
	if len(d) != at.Rows()*bt.Cols() {
		return shapeLenErr(len(d), at.Rows(), bt.Cols())
	}
	g.CountOp()
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
	e, err := g.Epilogue(ep, m, n)
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
	d, err := g.Tensor(dst, "destination")
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
	g.CountOp()
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
	g.CountOp()
	for i, v := range y {
		d.v[i] = uint8(rq.Quantize(v, d.bits))
	}
	return nil
}

func (g *genericBackend) AggFloat(dst Vector, gr GraphOperand, x Codes, ep *Epi) error {
	d, err := g.Floats(dst, "destination")
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
	g.CountOp()
	copy(d, y)
	return nil
}

func (g *genericBackend) RowSums(dst Vector, a Bits) error {
	at, err := g.Tensor(a, "A")
	if err != nil {
		return err
	}
	d, err := g.Floats(dst, "destination")
	if err != nil {
		return err
	}
	if err := CheckRowSums(len(d), at); err != nil {
		return err
	}
	g.CountOp()
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
	l, err := g.Floats(logits, "logits")
	if err != nil {
		return err
	}
	if err := CheckArgmax(len(dst), len(l), cols); err != nil {
		return err
	}
	g.CountOp()
	for r := range dst {
		dst[r] = ArgmaxRow(l[r*cols : (r+1)*cols])
	}
	return nil
}

func (g *genericBackend) ArgmaxTo(dst Ints, at Index, logits Vector, cols int) error {
	d, idx, l, err := g.ArgmaxOperands(dst, at, logits, cols)
	if err != nil {
		return err
	}
	g.CountOp()
	for r, v := range idx {
		d[v] = ArgmaxRow(l[r*cols : (r+1)*cols])
	}
	return nil
}

// PreferEdges compares the generic kernel's word operations: a dense
// aggregation ANDs and counts, per non-zero tile, 64 rows × 4 words for
// every column and bit plane (it skips no tile, but the tile count is the
// work an adjacency holds); the edge list adds one code per edge and column.
func (g *genericBackend) PreferEdges(c AggCost) bool {
	return float64(c.Edges) < float64(c.DenseTiles)*256*float64(c.Bits)
}

// PreferMerged: the generic backend computes one element at a time, so
// only the calls differ; one call per op is fewer.
func (g *genericBackend) PreferMerged(batches, rows int) bool { return batches > 1 }

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

// add resolves an Add op's operands for a rows×cols destination and returns
// the sums.
func (g *genericBackend) add(x, y Vector, relu bool, rows, cols int) ([]float32, error) {
	xs, err := g.Floats(x, "x")
	if err != nil {
		return nil, err
	}
	ys, err := g.Floats(y, "y")
	if err != nil {
		return nil, err
	}
	if err := CheckAdd(xs, ys, rows, cols); err != nil {
		return nil, err
	}
	g.CountOp()
	out := make([]float32, len(xs))
	for i := range out {
		out[i] = AddValue(xs[i], ys[i], relu)
	}
	return out, nil
}

func (g *genericBackend) AddBit(dst Bits, x, y Vector, relu bool, rq Requant) error {
	d, err := g.Tensor(dst, "destination")
	if err != nil {
		return err
	}
	s, err := g.add(x, y, relu, d.Rows(), d.Cols())
	if err != nil {
		return err
	}
	clear(d.Words())
	n := d.Cols()
	for i := 0; i < d.Rows(); i++ {
		for j := 0; j < n; j++ {
			d.Set(i, j, rq.Quantize(s[i*n+j], d.Bits()))
		}
	}
	return nil
}

func (g *genericBackend) AddCodes(dst Codes, x, y Vector, relu bool, rq Requant) error {
	d, err := g.codes(dst, "destination")
	if err != nil {
		return err
	}
	s, err := g.add(x, y, relu, d.rows, d.cols)
	if err != nil {
		return err
	}
	for i, v := range s {
		d.v[i] = uint8(rq.Quantize(v, d.bits))
	}
	return nil
}

func (g *genericBackend) AddFloat(dst Vector, x, y Vector, relu bool) error {
	d, err := g.Floats(dst, "destination")
	if err != nil {
		return err
	}
	s, err := g.add(x, y, relu, 1, len(d))
	if err != nil {
		return err
	}
	copy(d, s)
	return nil
}
