package quantize

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
)

// Quantize returns the code of each value of x as an int32 (the uint32 bit
// pattern for 32-bit codes), ready for bittensor.Pack. NaN is an error
// naming its index; ±Inf and values outside the range clamp.
func (p Params) Quantize(x []float32) ([]int32, error) {
	q := make([]int32, len(x))
	if err := p.QuantizeTo(q, x); err != nil {
		return nil, err
	}
	return q, nil
}

// QuantizeTo is Quantize into dst (len(x) codes). On error dst may be
// partly written.
func (p Params) QuantizeTo(dst []int32, x []float32) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if len(dst) != len(x) {
		return fmt.Errorf("%w: dst has %d codes for %d values", ErrShape, len(dst), len(x))
	}
	inv, off := p.Requant()
	q := newQuantizer(inv, off, p.Bits)
	for i, v := range x {
		if v != v {
			return fmt.Errorf("%w: x[%d] is NaN", ErrInput, i)
		}
		dst[i] = int32(q.code(v))
	}
	return nil
}

// Pack quantizes the row-major rows×cols matrix x and packs the codes.
func (p Params) Pack(x []float32, rows, cols int, packing bittensor.Packing, pad bittensor.Padding) (*bittensor.Tensor, error) {
	if rows < 0 || cols < 0 || len(x) != rows*cols {
		return nil, fmt.Errorf("%w: len(x)=%d for a %d×%d matrix", ErrShape, len(x), rows, cols)
	}
	q, err := p.Quantize(x)
	if err != nil {
		return nil, err
	}
	return bittensor.Pack(q, rows, cols, p.Bits, packing, pad)
}

// Dequantize returns Scale·(q + Zero()) for each code. A code above
// MaxCode is an error naming its index.
func (p Params) Dequantize(q []int32) ([]float32, error) {
	x := make([]float32, len(q))
	if err := p.DequantizeTo(x, q); err != nil {
		return nil, err
	}
	return x, nil
}

// DequantizeTo is Dequantize into dst (len(q) values).
func (p Params) DequantizeTo(dst []float32, q []int32) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if len(dst) != len(q) {
		return fmt.Errorf("%w: dst has %d values for %d codes", ErrShape, len(dst), len(q))
	}
	zero, maxq := p.Zero(), p.MaxCode()
	for i, c := range q {
		if uint32(c) > maxq {
			return fmt.Errorf("%w: code q[%d] = %d does not fit %d bits", ErrInput, i, c, p.Bits)
		}
		dst[i] = value(uint32(c), p.Scale, zero)
	}
	return nil
}

// FakeQuant quantizes then dequantizes x (for quantization-aware
// training) and returns, for the straight-through estimator, which values
// were inside the clamp range (their code was not clamped): the gradient
// passes through those and is zero elsewhere.
func (p Params) FakeQuant(x []float32) (y []float32, inRange []bool, err error) {
	y, inRange = make([]float32, len(x)), make([]bool, len(x))
	if err := p.FakeQuantTo(y, inRange, x); err != nil {
		return nil, nil, err
	}
	return y, inRange, nil
}

// FakeQuantTo is FakeQuant into dst and mask (mask may be nil). dst may be x.
func (p Params) FakeQuantTo(dst []float32, mask []bool, x []float32) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if len(dst) != len(x) || (mask != nil && len(mask) != len(x)) {
		return fmt.Errorf("%w: dst has %d values and mask %d for %d inputs", ErrShape, len(dst), len(mask), len(x))
	}
	inv, off := p.Requant()
	q, zero := newQuantizer(inv, off, p.Bits), p.Zero()
	for i, v := range x {
		if v != v {
			return fmt.Errorf("%w: x[%d] is NaN", ErrInput, i)
		}
		if mask != nil {
			mask[i] = unclamped(v, inv, off, p.Bits)
		}
		dst[i] = value(q.code(v), p.Scale, zero)
	}
	return nil
}

// rows checks c against a row-major matrix of n values and returns its rows.
func (c ColumnParams) rows(n int) (int, error) {
	if err := c.Validate(len(c)); err != nil {
		return 0, err
	}
	if len(c) == 0 {
		if n != 0 {
			return 0, fmt.Errorf("%w: %d values for 0 columns", ErrShape, n)
		}
		return 0, nil
	}
	if n%len(c) != 0 {
		return 0, fmt.Errorf("%w: %d values are not rows of %d columns", ErrShape, n, len(c))
	}
	return n / len(c), nil
}

// Quantize returns the codes of the row-major matrix x, column n with c[n].
func (c ColumnParams) Quantize(x []float32) ([]int32, error) {
	q := make([]int32, len(x))
	if err := c.QuantizeTo(q, x); err != nil {
		return nil, err
	}
	return q, nil
}

// QuantizeTo is Quantize into dst.
func (c ColumnParams) QuantizeTo(dst []int32, x []float32) error {
	rows, err := c.rows(len(x))
	if err != nil {
		return err
	}
	if len(dst) != len(x) {
		return fmt.Errorf("%w: dst has %d codes for %d values", ErrShape, len(dst), len(x))
	}
	qs := c.quantizers()
	cols := len(c)
	for r := 0; r < rows; r++ {
		for n := 0; n < cols; n++ {
			i := r*cols + n
			if x[i] != x[i] {
				return fmt.Errorf("%w: x[%d] (row %d, column %d) is NaN", ErrInput, i, r, n)
			}
			dst[i] = int32(qs[n].code(x[i]))
		}
	}
	return nil
}

func (c ColumnParams) quantizers() []quantizer {
	qs := make([]quantizer, len(c))
	for n, p := range c {
		inv, off := p.Requant()
		qs[n] = newQuantizer(inv, off, p.Bits)
	}
	return qs
}

// Pack quantizes the row-major rows×len(c) matrix x and packs the codes.
func (c ColumnParams) Pack(x []float32, packing bittensor.Packing, pad bittensor.Padding) (*bittensor.Tensor, error) {
	rows, err := c.rows(len(x))
	if err != nil {
		return nil, err
	}
	q, err := c.Quantize(x)
	if err != nil {
		return nil, err
	}
	return bittensor.Pack(q, rows, len(c), c.Bits(), packing, pad)
}

// Dequantize returns c[n].Scale·(q + c[n].Zero()) for each code in column n.
func (c ColumnParams) Dequantize(q []int32) ([]float32, error) {
	rows, err := c.rows(len(q))
	if err != nil {
		return nil, err
	}
	x := make([]float32, len(q))
	cols := len(c)
	for n, p := range c {
		zero, maxq := p.Zero(), p.MaxCode()
		for r := 0; r < rows; r++ {
			i := r*cols + n
			if uint32(q[i]) > maxq {
				return nil, fmt.Errorf("%w: code q[%d] (row %d, column %d) = %d does not fit %d bits", ErrInput, i, r, n, q[i], p.Bits)
			}
			x[i] = value(uint32(q[i]), p.Scale, zero)
		}
	}
	return x, nil
}

// FakeQuant quantizes then dequantizes each column with its parameters and
// returns the straight-through mask, as Params.FakeQuant.
func (c ColumnParams) FakeQuant(x []float32) (y []float32, inRange []bool, err error) {
	rows, err := c.rows(len(x))
	if err != nil {
		return nil, nil, err
	}
	y, inRange = make([]float32, len(x)), make([]bool, len(x))
	qs := c.quantizers()
	zero := make([]float32, len(c))
	for n, p := range c {
		zero[n] = p.Zero()
	}
	cols := len(c)
	for r := 0; r < rows; r++ {
		for n, p := range c {
			i := r*cols + n
			if x[i] != x[i] {
				return nil, nil, fmt.Errorf("%w: x[%d] (row %d, column %d) is NaN", ErrInput, i, r, n)
			}
			inRange[i] = unclamped(x[i], qs[n].inv, qs[n].off, p.Bits)
			y[i] = value(qs[n].code(x[i]), p.Scale, zero[n])
		}
	}
	return y, inRange, nil
}
