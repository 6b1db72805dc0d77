package quantize_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/quantize"
)

func f32(x float64) float32 { return float32(x) }

var (
	nan  = f32(math.NaN())
	pinf = f32(math.Inf(1))
	ninf = f32(math.Inf(-1))
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p   quantize.Params
		msg string
	}{
		{quantize.Params{Bits: 0, Scale: 1}, "Bits=0"},
		{quantize.Params{Bits: 33, Scale: 1}, "Bits=33"},
		{quantize.Params{Bits: 4, Scale: 0}, "Scale=0"},
		{quantize.Params{Bits: 4, Scale: -1}, "Scale=-1"},
		{quantize.Params{Bits: 4, Scale: nan}, "Scale=NaN"},
		{quantize.Params{Bits: 4, Scale: pinf}, "Scale=+Inf"},
		{quantize.Params{Bits: 4, Scale: 1, Lower: nan}, "Lower=NaN"},
		{quantize.Params{Bits: 4, Scale: 1, Lower: ninf}, "Lower=-Inf"},
		{quantize.Params{Bits: 4, Scale: 1e-40, Lower: 0}, "overflows"},
		{quantize.Params{Bits: 4, Scale: 1e-30, Lower: 1e30}, "overflows"},
	} {
		err := tc.p.Validate()
		require.ErrorIs(t, err, quantize.ErrParams, "%+v", tc.p)
		assert.Contains(t, err.Error(), tc.msg)
	}
	for _, p := range []quantize.Params{{Bits: 1, Scale: 1}, {Bits: 32, Scale: 1e-20, Lower: -3}, {Bits: 8, Scale: 3e38, Lower: -3e38}} {
		assert.NoError(t, p.Validate(), "%+v", p)
	}
}

// randParams draws valid parameters over a wide span of scales.
func randParams(r *rand.Rand) quantize.Params {
	for {
		p := quantize.Params{
			Bits:  1 + r.IntN(32),
			Scale: f32(math.Exp(r.NormFloat64() * 5)),
			Lower: f32(r.NormFloat64() * math.Exp(r.NormFloat64()*4)),
		}
		if p.Validate() == nil {
			return p
		}
	}
}

// TestCodeMatchesRequant is the contract with bmm: quantizing with Params
// and re-quantizing with bmm.Requant{Inv, Off} agree bit for bit.
func TestCodeMatchesRequant(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 300_000
	if testing.Short() {
		n = 30_000
	}
	for i := 0; i < n; i++ {
		p := randParams(r)
		inv, off := p.Requant()
		var x float32
		switch r.IntN(5) {
		case 0: // on and next to a level boundary
			q := float32(r.IntN(1 << min(p.Bits, 24)))
			x = p.Lower + q*p.Scale
			x = math.Nextafter32(x, f32(r.NormFloat64()))
		case 1:
			x = []float32{nan, pinf, ninf, 0, f32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32}[r.IntN(7)]
		default: // within and around the range
			x = p.Lower + p.Scale*f32((r.Float64()*1.4-0.2)*math.Exp2(float64(p.Bits)))
		}
		want := bmm.Requant{Scale: inv, Offset: off}.Quantize(x, p.Bits)
		require.Equal(t, want, p.Code(x), "x=%v params %+v", x, p)
		if x == x {
			q, err := p.Quantize([]float32{x})
			require.NoError(t, err)
			require.Equal(t, int32(want), q[0])
		}
	}
}

func TestFromRangeAndMinMax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for bits := 1; bits <= 32; bits++ {
		for trial := 0; trial < 20; trial++ {
			x := make([]float32, 1+r.IntN(200))
			mu, sd := r.NormFloat64()*10, math.Exp(r.NormFloat64()*3)
			for i := range x {
				x[i] = f32(mu + sd*r.NormFloat64())
			}
			p, err := quantize.MinMax(x, bits)
			require.NoError(t, err)
			require.NoError(t, p.Validate())
			lo, hi := x[0], x[0]
			for _, v := range x {
				lo, hi = min(lo, v), max(hi, v)
			}
			// Every value is within half a step (plus float32 rounding of
			// the arithmetic) of its reconstruction; min and max nearly exact.
			tol := func(v float32) float64 {
				return 1e-6*math.Abs(float64(v)) + 4e-7*(math.Abs(float64(p.Lower))+float64(p.Scale)*math.Exp2(float64(bits)))
			}
			y, mask, err := p.FakeQuant(x)
			require.NoError(t, err)
			for i, v := range x {
				assert.LessOrEqual(t, math.Abs(float64(y[i]-v)), float64(p.Scale)/2*(1+1e-5)+tol(v), "bits %d x=%v params %+v", bits, v, p)
				// v = x·Inv + Off is rounded to float32, an error of about
				// (|Off| + 2^bits)·2^-24 codes; the extremes have half a code
				// of margin, so they may round outside only when that is big.
				_, off := p.Requant()
				assert.True(t, mask[i] || math.Abs(float64(off))+math.Exp2(float64(bits)) > 1<<21, "calibrated values are inside the range: bits %d x=%v params %+v lo %v hi %v", bits, v, p, lo, hi)
			}
			if bits <= 20 {
				assert.InDelta(t, lo, p.Value(p.Code(lo)), tol(lo)+float64(p.Scale)*1e-3, "min, bits %d", bits)
				assert.InDelta(t, hi, p.Value(p.Code(hi)), tol(hi)+float64(p.Scale)*1e-3, "max, bits %d", bits)
			}
		}
	}
}

func TestExactIntegers(t *testing.T) {
	// Data that is already on the grid 0..2^b−1 (binary features at 1 bit,
	// small counts) round-trips exactly.
	for bits := 1; bits <= 16; bits++ {
		x := make([]float32, 1<<bits)
		for i := range x {
			x[i] = float32(i)
		}
		p, err := quantize.MinMax(x, bits)
		require.NoError(t, err)
		q, err := p.Quantize(x)
		require.NoError(t, err)
		y, err := p.Dequantize(q)
		require.NoError(t, err)
		for i := range x {
			require.Equal(t, int32(i), q[i], "bits %d", bits)
		}
		require.Equal(t, x, y, "bits %d", bits)
	}
}

func TestConstantInputs(t *testing.T) {
	for _, c := range []float32{0, 1, -1, 3.75, -1e-30, 1e30, -2.5e-7} {
		for _, bits := range []int{1, 4, 32} {
			x := []float32{c, c, c}
			for _, calib := range []func() (quantize.Params, error){
				func() (quantize.Params, error) { return quantize.MinMax(x, bits) },
				func() (quantize.Params, error) { return quantize.Percentile(x, bits, 99) },
			} {
				p, err := calib()
				require.NoError(t, err, "constant %v", c)
				y, mask, err := p.FakeQuant(x)
				require.NoError(t, err)
				assert.Equal(t, []float32{c, c, c}, y, "constant %v at %d bits: %+v", c, bits, p)
				assert.Equal(t, []bool{true, true, true}, mask)
			}
		}
	}
}

func TestCalibrationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() error
		err  error
		msg  string
	}{
		{"empty", func() error { _, err := quantize.MinMax(nil, 4); return err }, quantize.ErrInput, "x: no values"},
		{"NaN", func() error { _, err := quantize.MinMax([]float32{1, 2, nan, pinf}, 4); return err }, quantize.ErrInput, "x[2] = NaN is not finite"},
		{"Inf", func() error { _, err := quantize.MinMax([]float32{1, ninf}, 4); return err }, quantize.ErrInput, "x[1] = -Inf"},
		{"percentile NaN", func() error { _, err := quantize.Percentile([]float32{nan}, 4, 99); return err }, quantize.ErrInput, "x[0] = NaN"},
		{"percentile range", func() error { _, err := quantize.Percentile([]float32{1}, 4, 101); return err }, quantize.ErrParams, "percentile 101"},
		{"percentile low", func() error { _, err := quantize.Percentile([]float32{1}, 4, 20); return err }, quantize.ErrParams, "percentile 20"},
		{"bits", func() error { _, err := quantize.MinMax([]float32{1}, 0); return err }, quantize.ErrParams, "Bits=0"},
		{"too wide", func() error { _, err := quantize.MinMax([]float32{-3e38, 3e38}, 1); return err }, quantize.ErrParams, "not positive and finite"},
		{"column NaN", func() error {
			_, err := quantize.ColumnMinMax([]float32{1, 2, 3, 4, 5, nan}, 2, 3, 4)
			return err
		}, quantize.ErrInput, "x[5] (row 1, column 2) = NaN"},
		{"column empty", func() error { _, err := quantize.ColumnMinMax(nil, 0, 3, 4); return err }, quantize.ErrInput, "column 0 of a 0×3 matrix"},
		{"column shape", func() error { _, err := quantize.ColumnPercentile(make([]float32, 5), 2, 3, 4, 99); return err }, quantize.ErrShape, "len(x)=5 for a 2×3"},
		{"range", func() error { _, err := quantize.FromRange(2, 1, 4); return err }, quantize.ErrParams, "range [2, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.ErrorIs(t, err, tc.err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestPercentile(t *testing.T) {
	x := make([]float32, 1001)
	for i := range x {
		x[i] = float32(i) // 0..1000
	}
	x[0], x[1000] = -1e6, 1e6 // outliers
	p, err := quantize.Percentile(x, 8, 99)
	require.NoError(t, err)
	// 1st and 99th percentiles of the order statistics: 10 and 990.
	want, err := quantize.FromRange(10, 990, 8)
	require.NoError(t, err)
	assert.Equal(t, want, p)
	_, mask, err := p.FakeQuant(x)
	require.NoError(t, err)
	assert.False(t, mask[0], "the low outlier is clamped")
	assert.False(t, mask[1000], "the high outlier is clamped")
	assert.True(t, mask[500])

	mm, err := quantize.MinMax(x, 8)
	require.NoError(t, err)
	p100, err := quantize.Percentile(x, 8, 100)
	require.NoError(t, err)
	assert.Equal(t, mm, p100)

	// Interpolation between order statistics: 4 values, 75th → 2.25 of the way.
	p, err = quantize.Percentile([]float32{0, 10, 20, 30}, 4, 75)
	require.NoError(t, err)
	want, err = quantize.FromRange(7.5, 22.5, 4)
	require.NoError(t, err)
	assert.Equal(t, want, p)
}

func TestColumnParams(t *testing.T) {
	// Column 0 in [−4, 4], column 1 in [100, 101], column 2 constant.
	x := []float32{-4, 100, 7, 4, 101, 7, 0.1, 100.6, 7}
	cp, err := quantize.ColumnMinMax(x, 3, 3, 3)
	require.NoError(t, err)
	require.Len(t, cp, 3)
	for n, lohi := range [][2]float64{{-4, 4}, {100, 101}, {7, 7}} {
		want, err := quantize.FromRange(lohi[0], lohi[1], 3)
		require.NoError(t, err)
		assert.Equal(t, want, cp[n], "column %d", n)
	}
	q, err := cp.Quantize(x)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 0, 0, 7, 7, 0, 4, 4, 0}, q) // −4→0, 4→7, 0.1→4.09, 100.6→4.7
	y, err := cp.Dequantize(q)
	require.NoError(t, err)
	for i := range x {
		assert.InDelta(t, x[i], y[i], float64(cp[i%3].Scale)/2+1e-5, "x[%d]", i)
	}
	fq, mask, err := cp.FakeQuant(x)
	require.NoError(t, err)
	assert.Equal(t, y, fq)
	assert.NotContains(t, mask, false)
	// The same as quantizing each column on its own.
	for n := range cp {
		for r := 0; r < 3; r++ {
			assert.Equal(t, int32(cp[n].Code(x[r*3+n])), q[r*3+n])
		}
	}
	pc, err := quantize.ColumnPercentile(x, 3, 3, 3, 100)
	require.NoError(t, err)
	assert.Equal(t, cp, pc)

	tensor, err := cp.Pack(x, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.Equal(t, q, tensor.Ints())

	// Errors: mixed widths, wrong shapes, bad codes.
	mixed := quantize.ColumnParams{{Bits: 2, Scale: 1}, {Bits: 3, Scale: 1}}
	assert.ErrorContains(t, mixed.Validate(2), "column 1 has 3 bits, column 0 has 2")
	_, err = cp.Quantize(x[:8])
	assert.ErrorIs(t, err, quantize.ErrShape)
	_, err = cp.Dequantize([]int32{0, 8, 0})
	assert.ErrorContains(t, err, "code q[1] (row 0, column 1) = 8 does not fit 3 bits")
	_, err = cp.Quantize([]float32{0, nan, 0})
	assert.ErrorContains(t, err, "x[1] (row 0, column 1) is NaN")
	assert.ErrorIs(t, quantize.ColumnParams{{Bits: 2, Scale: 0}}.Validate(1), quantize.ErrParams)
	assert.ErrorContains(t, cp.Validate(4), "3 column parameters for 4 columns")
}

func TestQuantizeErrors(t *testing.T) {
	p := quantize.Params{Bits: 3, Scale: 0.5, Lower: -1}
	_, err := p.Quantize([]float32{0, 1, nan})
	assert.ErrorContains(t, err, "x[2] is NaN")
	assert.ErrorIs(t, err, quantize.ErrInput)
	assert.ErrorIs(t, p.QuantizeTo(make([]int32, 2), []float32{1}), quantize.ErrShape)
	_, err = p.Dequantize([]int32{1, 8})
	assert.ErrorContains(t, err, "code q[1] = 8 does not fit 3 bits")
	_, err = p.Dequantize([]int32{-1})
	assert.ErrorIs(t, err, quantize.ErrInput)
	_, _, err = p.FakeQuant([]float32{nan})
	assert.ErrorIs(t, err, quantize.ErrInput)
	assert.ErrorIs(t, p.FakeQuantTo(make([]float32, 1), make([]bool, 2), []float32{1}), quantize.ErrShape)
	_, err = quantize.Params{Bits: 3}.Quantize([]float32{1})
	assert.ErrorIs(t, err, quantize.ErrParams)
	_, err = p.Pack([]float32{1, 2}, 1, 3, bittensor.ByRows, bittensor.DefaultPadding)
	assert.ErrorIs(t, err, quantize.ErrShape)
}

// TestSignedNotDropped: negative values keep their sign and magnitude
// through quantize → pack → dequantize (nothing clamps at zero).
func TestSignedNotDropped(t *testing.T) {
	x := []float32{-3, -1.5, -0.1, 1.5, 3, -2.25}
	p, err := quantize.MinMax(x, 2)
	require.NoError(t, err)
	tensor, err := p.Pack(x, 2, 3, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	y, err := p.Dequantize(tensor.Ints())
	require.NoError(t, err)
	assert.Equal(t, []float32{-3, -1, -1, 1, 3, -3}, y) // levels −3, −1, 1, 3
}

func TestFakeQuantMask(t *testing.T) {
	p := quantize.Params{Bits: 2, Scale: 1, Lower: 0} // codes 0..3 for x in [0, 4)
	x := []float32{-0.001, 0, 3.999, 4, 1e9, ninf, pinf, 2.5}
	y, mask, err := p.FakeQuant(x)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true, true, false, false, false, false, true}, mask)
	assert.Equal(t, []float32{0.5, 0.5, 3.5, 3.5, 3.5, 0.5, 3.5, 2.5}, y)
	// In place, without a mask.
	z := append([]float32(nil), x...)
	require.NoError(t, p.FakeQuantTo(z, nil, z))
	assert.Equal(t, y, z)
}

func TestSums(t *testing.T) {
	q := []int32{1, 2, 3, 4, 5, 6, -1} // −1 is the 32-bit code 2^32−1
	_, err := quantize.RowSums(q, 2, 3)
	assert.ErrorIs(t, err, quantize.ErrShape)
	_, err = quantize.ColSums(q, 3, 3)
	assert.ErrorIs(t, err, quantize.ErrShape)
	rs, err := quantize.RowSums(q[:6], 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []int64{6, 15}, rs)
	cs, err := quantize.ColSums(q[:6], 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []int64{5, 7, 9}, cs)
	rs, err = quantize.RowSums(q[5:], 1, 2)
	require.NoError(t, err)
	assert.Equal(t, []int64{6 + 4294967295}, rs)

	// LineSums from packed tensors agree with the sums of the codes.
	r := rand.New(rand.NewPCG(5, 6))
	for _, bits := range []int{1, 3, 8, 17, 32} {
		const rows, cols = 67, 300
		v := make([]int32, rows*cols)
		for i := range v {
			v[i] = int32(uint32(r.Uint64() & (1<<bits - 1)))
		}
		a, err := bittensor.PackRows(v, rows, cols, bits)
		require.NoError(t, err)
		b, err := bittensor.PackCols(v, rows, cols, bits)
		require.NoError(t, err)
		rs, err := quantize.RowSums(v, rows, cols)
		require.NoError(t, err)
		cs, err := quantize.ColSums(v, rows, cols)
		require.NoError(t, err)
		assert.Equal(t, rs, quantize.LineSums(a), "bits %d", bits)
		assert.Equal(t, cs, quantize.LineSums(b), "bits %d", bits)
	}
}

// TestZeroPointProduct: the product of codes through bmm with the
// zero-point epilogue equals the float64 product of the dequantized
// matrices, up to float32 rounding in the epilogue, for signed data.
func TestZeroPointProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		m, k, n, abits, bbits int
		aShift, bShift        float64 // mean of the data; 0 = centred signed data
		exactA                bool    // A is a 0/1 adjacency quantized exactly at 1 bit
	}{
		{5, 7, 3, 4, 4, 0, 0, false},
		{33, 300, 17, 8, 8, 0, 0, false},
		{20, 257, 9, 2, 6, 3, -1, false},
		{64, 65, 63, 1, 8, 0, 0, true},
		{16, 1000, 8, 8, 4, -5, 2, false},
		{1, 1, 1, 3, 3, 0, 0, false},
		{7, 0, 5, 4, 4, 0, 0, false},
		{9, 40, 11, 16, 4, 0, 0, false},
	} {
		name := fmt.Sprintf("%dx%dx%d/a%d.b%d/exactA=%v", tc.m, tc.k, tc.n, tc.abits, tc.bbits, tc.exactA)
		t.Run(name, func(t *testing.T) {
			af := make([]float32, tc.m*tc.k)
			for i := range af {
				if tc.exactA {
					af[i] = float32(r.IntN(2))
				} else {
					af[i] = f32(tc.aShift + r.NormFloat64())
				}
			}
			bf := make([]float32, tc.k*tc.n)
			for i := range bf {
				bf[i] = f32(tc.bShift + r.NormFloat64()*float64(1+i%tc.n)) // per-column spread; negative weights
			}
			var pa quantize.Params
			var err error
			if tc.k == 0 {
				pa = quantize.Params{Bits: tc.abits, Scale: 0.5, Lower: -1}
			} else {
				pa, err = quantize.MinMax(af, tc.abits)
				require.NoError(t, err)
			}
			if tc.exactA {
				require.Equal(t, float32(0), pa.Zero(), "0/1 data at 1 bit has zero point 0")
				require.Equal(t, float32(1), pa.Scale)
			}
			pb := quantize.Params{Bits: tc.bbits, Scale: 0.25, Lower: -1}.Columns(tc.n)
			if tc.k > 0 {
				pb, err = quantize.ColumnMinMax(bf, tc.k, tc.n, tc.bbits)
				require.NoError(t, err)
			}
			qa, err := pa.Quantize(af)
			require.NoError(t, err)
			qb, err := pb.Quantize(bf)
			require.NoError(t, err)
			da, err := pa.Dequantize(qa)
			require.NoError(t, err)
			db, err := pb.Dequantize(qb)
			require.NoError(t, err)
			if tc.exactA {
				require.Equal(t, af, da)
			}

			a, err := bittensor.PackRows(qa, tc.m, tc.k, tc.abits)
			require.NoError(t, err)
			b, err := bittensor.PackCols(qb, tc.k, tc.n, tc.bbits)
			require.NoError(t, err)
			rs, err := quantize.RowSums(qa, tc.m, tc.k)
			require.NoError(t, err)
			cs, err := quantize.ColSums(qb, tc.k, tc.n)
			require.NoError(t, err)
			terms, err := quantize.ProductTerms(pa, rs, pb, cs, tc.k)
			require.NoError(t, err)
			got, err := bmm.MM2FloatWith(bmm.Generic{}, a, b, bmm.ZeroPointEpilogue(terms))
			require.NoError(t, err)
			got2, err := bmm.MM2Dequant(a, b, pa, pb)
			require.NoError(t, err)
			assert.Equal(t, got, got2, "MM2Dequant and the explicit path agree")

			za := float64(pa.Zero())
			worst, uncorrectedOff := 0.0, tc.k == 0
			defer func() { assert.True(t, uncorrectedOff, "the tolerance cannot tell corrected from uncorrected") }()
			defer func() { t.Logf("worst error / tolerance: %.3g", worst) }()
			for m := 0; m < tc.m; m++ {
				for n := 0; n < tc.n; n++ {
					var want, c float64
					for k := 0; k < tc.k; k++ {
						want += float64(da[m*tc.k+k]) * float64(db[k*tc.n+n])
						c += float64(uint32(qa[m*tc.k+k])) * float64(uint32(qb[k*tc.n+n]))
					}
					// Bound: a few float32 roundings of each term of the
					// expansion, plus the rounding of Â and B̂ themselves
					// in the float64 reference (each within 2^-24 relative).
					s := float64(pa.Scale) * float64(pb[n].Scale)
					zb := float64(pb[n].Zero())
					terms := s * (math.Abs(c) + math.Abs(zb*float64(rs[m])) + math.Abs(za*float64(cs[n])) + math.Abs(float64(tc.k)*za*zb))
					var absProd float64
					for k := 0; k < tc.k; k++ {
						absProd += math.Abs(float64(da[m*tc.k+k]) * float64(db[k*tc.n+n]))
					}
					tol := 8*0x1p-24*terms + 4*0x1p-24*absProd + 1e-30
					require.InDelta(t, want, float64(got[m*tc.n+n]), tol, "(%d, %d): C=%v", m, n, c)
					worst = max(worst, math.Abs(want-float64(got[m*tc.n+n]))/tol)
					// Control: without the zero-point terms the result is far off.
					if math.Abs(s*c-want) > tol {
						uncorrectedOff = true
					}
				}
			}
		})
	}
}

func TestMM2DequantErrors(t *testing.T) {
	a, err := bittensor.PackRows([]int32{1, 2}, 1, 2, 2)
	require.NoError(t, err)
	b, err := bittensor.PackCols([]int32{1, 2}, 2, 1, 3)
	require.NoError(t, err)
	pa := quantize.Params{Bits: 2, Scale: 1}
	pb := quantize.Params{Bits: 3, Scale: 1}.Columns(1)
	_, err = bmm.MM2Dequant(a, b, pa, pb)
	require.NoError(t, err)
	_, err = bmm.MM2Dequant(a, b, quantize.Params{Bits: 3, Scale: 1}, pb)
	assert.ErrorContains(t, err, "A holds 2-bit codes, its parameters are 3-bit")
	_, err = bmm.MM2Dequant(a, b, pa, quantize.Params{Bits: 3, Scale: 1}.Columns(2))
	assert.ErrorContains(t, err, "parameters for 2 columns")
	_, err = bmm.MM2Dequant(a, b, pa, quantize.ColumnParams{{Bits: 3, Scale: 0}})
	assert.ErrorIs(t, err, quantize.ErrParams)
	_, err = bmm.MM2Dequant(b, a, pa, pb)
	assert.ErrorIs(t, err, bmm.ErrPacking)
}

func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = f32(r.NormFloat64())
	}
	dst := make([]int32, len(x))
	for _, bits := range []int{1, 4, 8} {
		p, err := quantize.MinMax(x, bits)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("bits=%d/n=%d", bits, len(x)), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := p.QuantizeTo(dst, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(x))/b.Elapsed().Seconds(), "values/s")
		})
	}
}
