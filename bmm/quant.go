package bmm

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/quantize"
)

// ZeroPointEpilogue returns the epilogue that maps the product of codes
// C = Q_a·Q_b to the product of the dequantized matrices Â·B̂, from
// quantize.ProductTerms. Fields it leaves nil (RowScale, ColBias, ReLU) may
// be set on the result: they apply after the dequantization.
func ZeroPointEpilogue(t quantize.Terms) *Epilogue {
	return &Epilogue{ColScale: t.ColScale, RowTerm: t.RowTerm, ColTerm: t.ColTerm, ColConst: t.ColConst}
}

// MM2Dequant returns Â·B̂ as an M×N row-major float32 slice, where a holds
// the codes of A quantized per tensor with pa and b those of B quantized per
// column with pb. Signed values are exact up to float32 rounding: the
// zero-point corrections come from the line sums of a and b.
func MM2Dequant(a, b *bittensor.Tensor, pa quantize.Params, pb quantize.ColumnParams) ([]float32, error) {
	m, n, err := Check(a, b)
	if err != nil {
		return nil, err
	}
	if pa.Bits != a.Bits() {
		return nil, fmt.Errorf("%w: A holds %d-bit codes, its parameters are %d-bit", ErrShape, a.Bits(), pa.Bits)
	}
	if len(pb) != n || pb.Bits() != b.Bits() && n > 0 {
		return nil, fmt.Errorf("%w: B holds %d columns of %d-bit codes, parameters for %d columns of %d bits",
			ErrShape, n, b.Bits(), len(pb), pb.Bits())
	}
	terms, err := quantize.ProductTerms(pa, quantize.LineSums(a), pb, quantize.LineSums(b), a.Cols())
	if err != nil {
		return nil, err
	}
	ep := ZeroPointEpilogue(terms)
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	return MM2Float(a, b, ep)
}
