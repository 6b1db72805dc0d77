package bmm

import (
	"fmt"
	"math"
)

// Epilogue maps an int32 product c at (m, n) to a float32. Each step is
// rounded to float32 in this exact order (no fused multiply-add), so that
// CPU and GPU kernels agree bit for bit; nil slices skip their step:
//
//	t = float32(c)
//	t = t * ColScale[n]
//	t = t + RowTerm[m]*ColTerm[n]   (both non-nil)
//	t = t + ColConst[n]
//	t = t * RowScale[m]
//	t = t + ColBias[n]
//	t = max(t, 0)                   (ReLU)
//
// This form carries what quantized layers need: per-column dequantization
// scales, zero-point corrections (row sums of A times per-column terms of
// B; see package quantize), a normalization per row such as GCN's D^-1/2,
// a bias with folded batch norm, and ReLU.
type Epilogue struct {
	ColScale []float32
	RowTerm  []float32
	ColTerm  []float32
	ColConst []float32
	RowScale []float32
	ColBias  []float32
	ReLU     bool
}

// Validate checks that each non-nil vector fits an m×n product.
func (ep *Epilogue) Validate(m, n int) error {
	if ep == nil {
		return nil
	}
	for _, v := range []struct {
		name string
		s    []float32
		want int
	}{
		{"ColScale", ep.ColScale, n}, {"RowTerm", ep.RowTerm, m}, {"ColTerm", ep.ColTerm, n},
		{"ColConst", ep.ColConst, n}, {"RowScale", ep.RowScale, m}, {"ColBias", ep.ColBias, n},
	} {
		if v.s != nil && len(v.s) != v.want {
			return fmt.Errorf("%w: epilogue %s has %d entries, want %d", ErrShape, v.name, len(v.s), v.want)
		}
	}
	if (ep.RowTerm == nil) != (ep.ColTerm == nil) {
		return fmt.Errorf("%w: epilogue RowTerm and ColTerm must be set together", ErrShape)
	}
	return nil
}

// Apply evaluates the epilogue for product c at (m, n). A nil ep returns
// float32(c).
func (ep *Epilogue) Apply(c int32, m, n int) float32 {
	return ep.ApplyFloat(float32(c), m, n)
}

// ApplyFloat is Apply for a product already converted to float32: for every
// int32 c, ApplyFloat(float32(c), m, n) == Apply(c, m, n). Layers use it for
// products that do not fit int32 (wide widths split into plane groups) and
// in the float simulation that quantization-aware training runs.
func (ep *Epilogue) ApplyFloat(t float32, m, n int) float32 {
	if ep == nil {
		return t
	}
	if ep.ColScale != nil {
		t = float32(t * ep.ColScale[n])
	}
	if ep.RowTerm != nil {
		t = t + float32(ep.RowTerm[m]*ep.ColTerm[n])
	}
	if ep.ColConst != nil {
		t = t + ep.ColConst[n]
	}
	if ep.RowScale != nil {
		t = float32(t * ep.RowScale[m])
	}
	if ep.ColBias != nil {
		t = t + ep.ColBias[n]
	}
	if ep.ReLU && !(t > 0) {
		t = 0
	}
	return t
}

// Quantize maps y to clamp(floor(y·Scale + Offset), 0, 2^bits − 1), with
// the product and the sum each rounded to float32. NaN maps to 0.
func (rq Requant) Quantize(y float32, bits int) uint32 {
	v := float32(y*rq.Scale) + rq.Offset
	if !(v > 0) { // also NaN
		return 0
	}
	maxq := float32(uint64(1)<<bits - 1)
	if v >= maxq {
		return uint32(uint64(1)<<bits - 1)
	}
	return uint32(math.Floor(float64(v)))
}

// NaN is the one NaN the Add ops write: processors differ in the NaN an
// addition gives (x86 keeps an operand's payload or sets the sign of
// ∞ − ∞, a GPU writes its own), so a NaN sum is written as this.
var NaN = math.Float32frombits(0x7fc00000)

// AddValue is one element of a Backend's Add ops: x + y rounded to
// float32, NaN written as NaN above, then max(·, 0) when relu (NaN
// becomes 0, as in Epilogue).
func AddValue(x, y float32, relu bool) float32 {
	t := x + y
	if t != t {
		t = NaN
	}
	if relu && !(t > 0) {
		t = 0
	}
	return t
}
