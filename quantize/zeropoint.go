package quantize

import (
	"fmt"
	"math/bits"

	"github.com/qgtc/qgtc/bittensor"
)

// RowSums returns the sum of each row of the row-major rows×cols codes
// (read as uint32): rowsum(Q_a) of the zero-point correction.
func RowSums(q []int32, rows, cols int) ([]int64, error) {
	if rows < 0 || cols < 0 || len(q) != rows*cols {
		return nil, fmt.Errorf("%w: len(q)=%d for a %d×%d matrix", ErrShape, len(q), rows, cols)
	}
	s := make([]int64, rows)
	for r := range s {
		for _, c := range q[r*cols : (r+1)*cols] {
			s[r] += int64(uint32(c))
		}
	}
	return s, nil
}

// ColSums returns the sum of each column of the row-major rows×cols codes
// (read as uint32): colsum(Q_b) of the zero-point correction.
func ColSums(q []int32, rows, cols int) ([]int64, error) {
	if rows < 0 || cols < 0 || len(q) != rows*cols {
		return nil, fmt.Errorf("%w: len(q)=%d for a %d×%d matrix", ErrShape, len(q), rows, cols)
	}
	s := make([]int64, cols)
	for r := 0; r < rows; r++ {
		for n, c := range q[r*cols : (r+1)*cols] {
			s[n] += int64(uint32(c))
		}
	}
	return s, nil
}

// LineSums returns the sum of the values of each line of a packed tensor,
// from popcounts of its planes: the row sums of an A packed by rows, the
// column sums of a B packed by columns. Codes that come out of a fused
// MM2Bit are never unpacked, so this is how their sums are found.
func LineSums(t *bittensor.Tensor) []int64 {
	s := make([]int64, t.Lines())
	for p := 0; p < t.Bits(); p++ {
		for l := range s {
			var pop int64
			for _, w := range t.Line(p, l) {
				pop += int64(bits.OnesCount64(w))
			}
			s[l] += pop << p
		}
	}
	return s
}

// Terms are the vectors of a bmm.Epilogue that turns the integer product
// C = Q_a·Q_b of codes into the product of the dequantized matrices (see the
// package comment; bmm.ZeroPointEpilogue wraps them):
//
//	ColScale[n] = s_a·s_b[n]
//	RowTerm[m]  = rowsum(Q_a)[m]
//	ColTerm[n]  = s_a·s_b[n]·z_b[n]
//	ColConst[n] = s_a·s_b[n]·(z_a·colsum(Q_b)[n] + K·z_a·z_b[n])
//
// Each is computed in float64 and rounded once to float32.
type Terms struct {
	ColScale, RowTerm, ColTerm, ColConst []float32
}

// ProductTerms returns the Terms for A (M×K codes quantized per tensor with
// a, row sums rowSumsA) times B (K×N codes quantized per column with b,
// column sums colSumsB).
func ProductTerms(a Params, rowSumsA []int64, b ColumnParams, colSumsB []int64, k int) (Terms, error) {
	if err := a.Validate(); err != nil {
		return Terms{}, fmt.Errorf("operand A: %w", err)
	}
	if err := b.Validate(len(colSumsB)); err != nil {
		return Terms{}, fmt.Errorf("operand B: %w", err)
	}
	if k < 0 {
		return Terms{}, fmt.Errorf("%w: K=%d", ErrShape, k)
	}
	sa, za := float64(a.Scale), float64(a.Zero())
	n := len(b)
	t := Terms{
		ColScale: make([]float32, n), RowTerm: make([]float32, len(rowSumsA)),
		ColTerm: make([]float32, n), ColConst: make([]float32, n),
	}
	for m, r := range rowSumsA {
		t.RowTerm[m] = float32(r)
	}
	for j, p := range b {
		s := sa * float64(p.Scale)
		zb := float64(p.Zero())
		t.ColScale[j] = float32(s)
		t.ColTerm[j] = float32(s * zb)
		t.ColConst[j] = float32(s * (za*float64(colSumsB[j]) + float64(k)*za*zb))
	}
	return t, nil
}
