package bmm

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
)

// The operand rules every Backend applies, so that backends fail alike.

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
	d, w, err := g.Stats(srcRows)
	return d * w, err
}

// graphStats is what Stats found for srcRows sources.
type graphStats struct {
	srcRows           int
	maxDeg, maxWeight int64
}

// Stats checks g over srcRows sources as CheckGraph does and returns its
// longest row and largest weight (1 without weights). A good graph's
// figures are remembered, so uploading it again (every cold pass) does not
// read it twice.
func (g *Graph) Stats(srcRows int) (maxDeg, maxWeight int64, err error) {
	if s := g.remembered(srcRows); s != nil {
		return s.maxDeg, s.maxWeight, nil
	}
	maxDeg, maxWeight, err = checkGraph(g, srcRows)
	if err == nil {
		atomic.StorePointer(&g.stats, unsafe.Pointer(&graphStats{srcRows, maxDeg, maxWeight}))
	}
	return maxDeg, maxWeight, err
}

// Checked reports whether Stats has remembered g's figures for srcRows
// sources: an upload of g then reads none of it to check it.
func (g *Graph) Checked(srcRows int) bool { return g.remembered(srcRows) != nil }

// remembered is what Stats remembered of g for srcRows sources, or nil.
func (g *Graph) remembered(srcRows int) *graphStats {
	if g == nil {
		return nil
	}
	if s := (*graphStats)(atomic.LoadPointer(&g.stats)); s != nil && s.srcRows == srcRows {
		return s
	}
	return nil
}

func checkGraph(g *Graph, srcRows int) (int64, int64, error) {
	if g == nil || len(g.Indptr) == 0 {
		return 0, 0, fmt.Errorf("%w: graph without indptr (want rows+1 entries)", ErrShape)
	}
	if g.Indptr[0] != 0 || int(g.Indptr[len(g.Indptr)-1]) != len(g.Indices) {
		return 0, 0, fmt.Errorf("%w: indptr runs from %d to %d over %d indices", ErrShape, g.Indptr[0], g.Indptr[len(g.Indptr)-1], len(g.Indices))
	}
	wmax := int64(1)
	if g.Weights != nil {
		if g.WeightBits < 1 || g.WeightBits > 8 || len(g.Weights) != len(g.Indices) {
			return 0, 0, fmt.Errorf("%w: %d weights of %d bits for %d entries", ErrShape, len(g.Weights), g.WeightBits, len(g.Indices))
		}
		wmax = 0
		for p, w := range g.Weights {
			if int(w) >= 1<<g.WeightBits {
				return 0, 0, fmt.Errorf("%w: weight %d of entry %d does not fit %d bits", ErrRange, w, p, g.WeightBits)
			}
			wmax = max(wmax, int64(w))
		}
	}
	// Indptr first: a row reaching past the indices (indptr rising past
	// them, then falling back to their count) is refused before any is read.
	var maxDeg int64
	for v := 0; v+1 < len(g.Indptr); v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return 0, 0, fmt.Errorf("%w: indptr decreases at row %d", ErrShape, v)
		}
		maxDeg = max(maxDeg, int64(g.Indptr[v+1]-g.Indptr[v]))
	}
	// Indptr runs from 0 to len(Indices) without falling: its rows cover
	// every index once, so one flat pass checks them (the row is looked up
	// only to name a bad one).
	for p, i := range g.Indices {
		if i < 0 || int(i) >= srcRows {
			v, _ := slices.BinarySearch(g.Indptr, int32(p)+1)
			return 0, 0, fmt.Errorf("%w: entry %d of row %d is source row %d of %d", ErrShape, p, v-1, i, srcRows)
		}
	}
	return maxDeg, wmax, nil
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

// CheckArgmaxTo validates ArgmaxTo of rows×cols logits (n values) at an
// index of rows values below bound into dst values.
func CheckArgmaxTo(dst, rows, bound, n, cols int) error {
	if err := CheckArgmax(rows, n, cols); err != nil {
		return err
	}
	if bound > dst {
		return fmt.Errorf("%w: argmax at an index bounded by %d into %d values", ErrShape, bound, dst)
	}
	return nil
}

// CheckArgmaxAt checks ArgmaxAt's shapes: rows of cols from n logits,
// written from off into dst values.
func CheckArgmaxAt(dst, off, n, cols int) error {
	if cols < 1 || n%cols != 0 {
		return fmt.Errorf("%w: argmax of %d values in rows of %d", ErrShape, n, cols)
	}
	if off < 0 || off+n/cols > dst {
		return fmt.Errorf("%w: argmax of %d rows at %d into %d values", ErrShape, n/cols, off, dst)
	}
	return nil
}

// CheckIndex checks that idx holds distinct values in [0, bound): where
// a scatter writes, so that no two rows race for one value.
func CheckIndex(idx []int32, bound int) error {
	if bound < 0 {
		return fmt.Errorf("%w: bound %d", ErrIndex, bound)
	}
	for i, v := range idx {
		if v < 0 || int(v) >= bound {
			return fmt.Errorf("%w: index %d is %d, outside [0, %d)", ErrIndex, i, v, bound)
		}
	}
	// A bitmap over the bound when idx fills enough of it, else a sorted
	// copy: a small batch of a large graph allocates no graph-sized map.
	if len(idx) >= bound/32 {
		seen := make([]uint64, (bound+63)/64)
		for i, v := range idx {
			if seen[v/64]&(1<<(v%64)) != 0 {
				return fmt.Errorf("%w: index %d repeats value %d", ErrIndex, i, v)
			}
			seen[v/64] |= 1 << (v % 64)
		}
		return nil
	}
	s := slices.Clone(idx)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return fmt.Errorf("%w: value %d repeats", ErrIndex, s[i])
		}
	}
	return nil
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

// CheckAdd checks the operands of an Add op writing rows×cols values.
func CheckAdd(x, y []float32, rows, cols int) error {
	if len(x) != rows*cols || len(y) != rows*cols {
		return fmt.Errorf("%w: adding %d and %d values into %d×%d", ErrShape, len(x), len(y), rows, cols)
	}
	return nil
}
