package cpu

import (
	"runtime"
	"sync"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// add resolves an Add op's operands for a rows×cols destination.
func (b *Backend) add(x, y bmm.Vector, rows, cols int) ([]float32, []float32, error) {
	xs, err := b.Floats(x, "x")
	if err != nil {
		return nil, nil, err
	}
	ys, err := b.Floats(y, "y")
	if err != nil {
		return nil, nil, err
	}
	if err := bmm.CheckAdd(xs, ys, rows, cols); err != nil {
		return nil, nil, err
	}
	b.CountOp()
	return xs, ys, nil
}

// addRow writes bmm.AddValue of row's elements into out.
func addRow(out, x, y []float32, relu bool) {
	for j := range out {
		out[j] = bmm.AddValue(x[j], y[j], relu)
	}
}

// addScratch is one block's scratch: the sums and their codes.
type addScratch struct {
	s []float32
	q []uint32
}

var addScratchPool = sync.Pool{New: func() any { return new(addScratch) }}

// addBlocks runs f over blocks of 64 rows (a column-packed output's word)
// in parallel (on a fork, on the caller), each call with scratch of one
// block.
func (b *Backend) addBlocks(rows, cols int, f func(sc *addScratch, r0, r1 int)) {
	blocks := (rows + 63) / 64
	work := func(lo, hi int) {
		sc := addScratchPool.Get().(*addScratch)
		sc.s, sc.q = growSlice(sc.s, 64*cols), growSlice(sc.q, 64*cols)
		for blk := lo; blk < hi; blk++ {
			r0 := 64 * blk
			f(sc, r0, min(rows, r0+64))
		}
		addScratchPool.Put(sc)
	}
	if blocks*cols < 1<<14 || b.lane != nil {
		work(0, blocks)
		return
	}
	par.For(blocks, runtime.GOMAXPROCS(0), func(i int) { work(i, i+1) })
}

// AddBit implements bmm.Backend: sums, re-quantized and packed a block of
// 64 rows at a time (packBitBlock's grain).
func (b *Backend) AddBit(dst bmm.Bits, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	d, err := b.Tensor(dst, "destination")
	if err != nil {
		return err
	}
	rows, n := d.Rows(), d.Cols()
	xs, ys, err := b.add(x, y, rows, n)
	if err != nil {
		return err
	}
	clearWords(b.lane != nil, d.Words())
	b.addBlocks(rows, n, func(sc *addScratch, r0, r1 int) {
		k := (r1 - r0) * n
		s, q := sc.s[:k], sc.q[:k]
		addRow(s, xs[r0*n:r1*n], ys[r0*n:r1*n], relu)
		quantizeRow(q, s, rq, d.Bits())
		packBitBlock(d, q, r0, r1-r0, n)
	})
	return nil
}

// AddCodes implements bmm.Backend.
func (b *Backend) AddCodes(dst bmm.Codes, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	d, err := b.codes(dst, "destination")
	if err != nil {
		return err
	}
	xs, ys, err := b.add(x, y, d.Rows, d.Cols)
	if err != nil {
		return err
	}
	n := d.Cols
	b.addBlocks(d.Rows, n, func(sc *addScratch, r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := sc.s[:n]
			addRow(row, xs[r*n:(r+1)*n], ys[r*n:(r+1)*n], relu)
			d.QuantizeRow(r, row, rq)
		}
	})
	return nil
}

// AddFloat implements bmm.Backend.
func (b *Backend) AddFloat(dst bmm.Vector, x, y bmm.Vector, relu bool) error {
	d, err := b.Floats(dst, "destination")
	if err != nil {
		return err
	}
	xs, ys, err := b.add(x, y, 1, len(d))
	if err != nil {
		return err
	}
	addRow(d, xs, ys, relu)
	return nil
}
