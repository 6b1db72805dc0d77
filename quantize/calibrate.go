package quantize

import (
	"fmt"
	"math"
	"slices"
)

// FromRange returns bits-bit parameters whose 2^bits reconstruction levels
// run evenly from lo to hi: Scale = (hi − lo)/(2^bits − 1) and Lower half a
// step below lo, so that quantizing rounds to the nearest level. A constant
// range (lo = hi) gets a step of |lo| (1 for zero), which reconstructs lo
// exactly at code 0.
func FromRange(lo, hi float64, bits int) (Params, error) {
	if bits < 1 || bits > MaxBits {
		return Params{}, fmt.Errorf("%w: Bits=%d is not in 1..%d", ErrParams, bits, MaxBits)
	}
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || hi < lo {
		return Params{}, fmt.Errorf("%w: range [%v, %v] is not finite and ordered", ErrParams, lo, hi)
	}
	step := (hi - lo) / (math.Exp2(float64(bits)) - 1)
	if float32(step) == 0 || hi == lo {
		// Constant data (or a range below float32 resolution): one level at lo.
		step = math.Abs(lo)
		if float32(step) == 0 {
			step = 1
		}
	}
	p := Params{Bits: bits, Scale: float32(step), Lower: float32(lo - step/2)}
	if err := p.Validate(); err != nil {
		return Params{}, fmt.Errorf("range [%v, %v] at %d bits: %w", lo, hi, bits, err)
	}
	return p, nil
}

// finiteRange returns the min and max of x[0], x[stride], … (n values), or
// an error naming the first NaN or infinity, or saying there are none.
// name(i) describes element i in errors.
func finiteRange(x []float32, stride, n int, name func(i int) string) (lo, hi float64, err error) {
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: %s: no values to calibrate on", ErrInput, name(-1))
	}
	l, h := float32(math.Inf(1)), float32(math.Inf(-1))
	for i := 0; i < n; i++ {
		v := x[i*stride]
		if v != v || v > math.MaxFloat32 || v < -math.MaxFloat32 {
			return 0, 0, fmt.Errorf("%w: %s = %v is not finite", ErrInput, name(i), v)
		}
		l, h = min(l, v), max(h, v)
	}
	return float64(l), float64(h), nil
}

func flatName(i int) string {
	if i < 0 {
		return "x"
	}
	return fmt.Sprintf("x[%d]", i)
}

func colName(rows, cols, n int) func(i int) string {
	return func(i int) string {
		if i < 0 {
			return fmt.Sprintf("column %d of a %d×%d matrix", n, rows, cols)
		}
		return fmt.Sprintf("x[%d] (row %d, column %d)", i*cols+n, i, n)
	}
}

// MinMax calibrates bits-bit parameters on the range of x: the minimum and
// maximum are reconstructed exactly. NaN or ±Inf in x is an error.
func MinMax(x []float32, bits int) (Params, error) {
	lo, hi, err := finiteRange(x, 1, len(x), flatName)
	if err != nil {
		return Params{}, err
	}
	return FromRange(lo, hi, bits)
}

// Percentile calibrates on the central part of x: the range from its
// (100−pct)th to its pct-th percentile (linear interpolation between order
// statistics, as numpy's default), so that a few outliers do not waste the
// levels; values outside are clamped. pct is in [50, 100]; 100 is MinMax.
func Percentile(x []float32, bits int, pct float64) (Params, error) {
	return percentile(x, 1, len(x), bits, pct, flatName)
}

func percentile(x []float32, stride, n, bits int, pct float64, name func(int) string) (Params, error) {
	if !(pct >= 50 && pct <= 100) {
		return Params{}, fmt.Errorf("%w: percentile %v is not in [50, 100]", ErrParams, pct)
	}
	if _, _, err := finiteRange(x, stride, n, name); err != nil {
		return Params{}, err
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = x[i*stride]
	}
	slices.Sort(s)
	at := func(q float64) float64 {
		r := q / 100 * float64(n-1)
		i := int(math.Floor(r))
		if i >= n-1 {
			return float64(s[n-1])
		}
		f := r - float64(i)
		return float64(s[i]) + f*(float64(s[i+1])-float64(s[i]))
	}
	return FromRange(at(100-pct), at(pct), bits)
}

// ColumnMinMax calibrates each column of the row-major rows×cols matrix x
// on its own range (per output channel, for weights).
func ColumnMinMax(x []float32, rows, cols, bits int) (ColumnParams, error) {
	return columns(x, rows, cols, func(n int) (Params, error) {
		lo, hi, err := finiteRange(x[n:], cols, rows, colName(rows, cols, n))
		if err != nil {
			return Params{}, err
		}
		return FromRange(lo, hi, bits)
	})
}

// ColumnPercentile is Percentile on each column of the row-major rows×cols
// matrix x.
func ColumnPercentile(x []float32, rows, cols, bits int, pct float64) (ColumnParams, error) {
	return columns(x, rows, cols, func(n int) (Params, error) {
		return percentile(x[n:], cols, rows, bits, pct, colName(rows, cols, n))
	})
}

func columns(x []float32, rows, cols int, calib func(n int) (Params, error)) (ColumnParams, error) {
	if rows < 0 || cols < 0 || len(x) != rows*cols {
		return nil, fmt.Errorf("%w: len(x)=%d for a %d×%d matrix", ErrShape, len(x), rows, cols)
	}
	c := make(ColumnParams, cols)
	for n := range c {
		p, err := calib(n)
		if err != nil {
			return nil, err
		}
		c[n] = p
	}
	return c, nil
}
