package quantize

import (
	"errors"
	"fmt"
	"math"
)

// Errors returned by this package; wrapped with the value at fault.
var (
	ErrParams = errors.New("quantize: bad parameters")
	ErrInput  = errors.New("quantize: bad input")
	ErrShape  = errors.New("quantize: shape mismatch")
)

// MaxBits is the widest code.
const MaxBits = 32

// Params is one uniform quantizer (QGTC's Eq. 2). A value x maps to the code
//
//	q = clamp(floor(float32(x·Inv) + Off), 0, 2^Bits − 1)
//
// where Inv = 1/Scale and Off = −Lower/Scale are each computed once in
// float32 (Requant), so q is bit for bit bmm.Requant{Scale: Inv, Offset:
// Off}.Quantize(x, Bits): a fused epilogue that re-quantizes produces the
// same codes. Code q stands for the interval [Lower + q·Scale, Lower +
// (q+1)·Scale) and dequantizes to its midpoint,
//
//	x̂ = Scale·(q + Zero()),  Zero() = Lower/Scale + 1/2,
//
// the reconstruction with the least error for a floor quantizer. The
// calibrators place Lower half a step below the data's minimum, so that
// floor acts as round-to-nearest and the minimum and maximum are
// reconstructed exactly (binary 0/1 data at 1 bit stays exactly 0/1).
type Params struct {
	Bits  int
	Scale float32
	Lower float32
}

// Validate checks that Bits is in 1..32, Scale is positive and finite, and
// Inv, Off and Zero are finite.
func (p Params) Validate() error {
	if p.Bits < 1 || p.Bits > MaxBits {
		return fmt.Errorf("%w: Bits=%d is not in 1..%d", ErrParams, p.Bits, MaxBits)
	}
	if !(p.Scale > 0) || math.IsInf(float64(p.Scale), 1) {
		return fmt.Errorf("%w: Scale=%v is not positive and finite", ErrParams, p.Scale)
	}
	if math.IsNaN(float64(p.Lower)) || math.IsInf(float64(p.Lower), 0) {
		return fmt.Errorf("%w: Lower=%v is not finite", ErrParams, p.Lower)
	}
	inv, off := p.Requant()
	if math.IsInf(float64(inv), 0) || math.IsInf(float64(off), 0) || math.IsInf(float64(p.Zero()), 0) {
		return fmt.Errorf("%w: Scale=%v, Lower=%v: 1/Scale=%v or Lower/Scale=%v overflows float32",
			ErrParams, p.Scale, p.Lower, inv, -off)
	}
	return nil
}

// Requant returns Inv = 1/Scale and Off = −Lower/Scale in float32: the
// bmm.Requant that quantizes with p.
func (p Params) Requant() (inv, off float32) {
	return 1 / p.Scale, -p.Lower / p.Scale
}

// Zero is the zero point in units of Scale: x̂ = Scale·(q + Zero()).
func (p Params) Zero() float32 {
	_, off := p.Requant()
	return 0.5 - off
}

// MaxCode is 2^Bits − 1, the largest code.
func (p Params) MaxCode() uint32 { return uint32(uint64(1)<<p.Bits - 1) }

// Code quantizes one value. NaN maps to 0 (as in bmm.Requant); the slice
// functions refuse NaN instead.
func (p Params) Code(x float32) uint32 {
	inv, off := p.Requant()
	return code(x, inv, off, p.Bits)
}

// code is bmm.Requant.Quantize, written out here because quantize must not
// import bmm; a test checks that they agree bit for bit.
func code(x, inv, off float32, bits int) uint32 {
	return newQuantizer(inv, off, bits).code(x)
}

// quantizer holds a quantizer's constants for a loop.
type quantizer struct {
	inv, off, top float32
	maxq          int64
}

func newQuantizer(inv, off float32, bits int) quantizer {
	return quantizer{inv: inv, off: off, top: float32(uint64(1) << bits), maxq: int64(1)<<bits - 1}
}

// code clamps with min/max rather than branches: at low bit widths the code
// is close to random and a branch on it mispredicts half the time. For v in
// [0, 2^bits], truncation is floor, and the integer min is the upper clamp
// (float32(2^bits − 1) rounds up to 2^bits from 25 bits on).
func (q quantizer) code(x float32) uint32 {
	v := float32(x*q.inv) + q.off
	if v != v {
		return 0
	}
	v = min(max(v, 0), q.top)
	return uint32(min(int64(v), q.maxq))
}

// unclamped reports whether x is inside the clamp range: its code was not
// clamped (the straight-through estimator passes gradients only there).
func unclamped(x, inv, off float32, bits int) bool {
	v := float32(x*inv) + off
	return v >= 0 && v < float32(uint64(1)<<bits)
}

// Value dequantizes one code: Scale·(q + Zero()), rounded to float32.
func (p Params) Value(q uint32) float32 {
	return value(q, p.Scale, p.Zero())
}

func value(q uint32, scale, zero float32) float32 {
	return float32(scale * float32(float32(q)+zero))
}

// Columns returns n copies of p: per-tensor parameters where per-column
// ones are expected.
func (p Params) Columns(n int) ColumnParams {
	c := make(ColumnParams, n)
	for i := range c {
		c[i] = p
	}
	return c
}

// ColumnParams quantizes each column n of a row-major matrix with its own
// Params[n] (per output channel, for weights). All share one bit width.
type ColumnParams []Params

// Validate checks every column's Params, that they share one bit width and
// that there are cols of them.
func (c ColumnParams) Validate(cols int) error {
	if len(c) != cols {
		return fmt.Errorf("%w: %d column parameters for %d columns", ErrShape, len(c), cols)
	}
	for n, p := range c {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("column %d: %w", n, err)
		}
		if p.Bits != c[0].Bits {
			return fmt.Errorf("%w: column %d has %d bits, column 0 has %d", ErrParams, n, p.Bits, c[0].Bits)
		}
	}
	return nil
}

// Bits is the columns' common bit width (0 when there are none).
func (c ColumnParams) Bits() int {
	if len(c) == 0 {
		return 0
	}
	return c[0].Bits
}
