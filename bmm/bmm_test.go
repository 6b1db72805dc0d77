package bmm_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

func TestGenericConformance(t *testing.T) {
	bmmtest.Conformance(t, bmm.Generic{})
}

func seq(n int, mod int32) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(i*7+3) % mod
	}
	return v
}

func mustPack(t *testing.T, vals []int32, rows, cols, bits int, packing bittensor.Packing, pad bittensor.Padding) *bittensor.Tensor {
	t.Helper()
	x, err := bittensor.Pack(vals, rows, cols, bits, packing, pad)
	require.NoError(t, err)
	return x
}

func TestCheckErrors(t *testing.T) {
	def := bittensor.DefaultPadding
	a35 := mustPack(t, seq(15, 4), 3, 5, 2, bittensor.ByRows, def)
	b54 := mustPack(t, seq(20, 4), 5, 4, 2, bittensor.ByCols, def)
	for _, tc := range []struct {
		name     string
		a, b     *bittensor.Tensor
		err      error
		contains string
	}{
		{"nil A", nil, b54, bmm.ErrShape, "nil operand"},
		{"nil B", a35, nil, bmm.ErrShape, "nil operand"},
		{"K mismatch", a35, mustPack(t, seq(24, 4), 6, 4, 2, bittensor.ByCols, def), bmm.ErrShape, "A is 3×5, B is 6×4"},
		{"A packed by columns", mustPack(t, seq(15, 4), 3, 5, 2, bittensor.ByCols, def), b54, bmm.ErrPacking, "A must be packed by rows"},
		{"B packed by rows", a35, mustPack(t, seq(20, 4), 5, 4, 2, bittensor.ByRows, def), bmm.ErrPacking, "B must be packed by columns"},
		{"K padding differs", mustPack(t, seq(15, 4), 3, 5, 2, bittensor.ByRows, bittensor.Padding{Lines: 16, Bits: 64}), b54,
			bmm.ErrShape, "padded to 64 bits, B's to 256"},
		{"overflow 16x16", mustPack(t, seq(3, 4), 3, 1, 16, bittensor.ByRows, def), mustPack(t, seq(2, 4), 1, 2, 16, bittensor.ByCols, def),
			bmm.ErrOverflow, "K=1 with 16-bit A and 16-bit B"},
		{"overflow 8x8 long K", mustPack(t, make([]int32, 33100), 1, 33100, 8, bittensor.ByRows, def),
			mustPack(t, make([]int32, 33100), 33100, 1, 8, bittensor.ByCols, def), bmm.ErrOverflow, "K=33100 with 8-bit A and 8-bit B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := bmm.Check(tc.a, tc.b)
			require.ErrorIs(t, err, tc.err)
			assert.Contains(t, err.Error(), tc.contains)
			// Every entry point reports the same error.
			_, err = bmm.MM2IntWith(bmm.Generic{}, tc.a, tc.b)
			assert.ErrorIs(t, err, tc.err)
			_, err = bmm.MM2FloatWith(bmm.Generic{}, tc.a, tc.b, nil)
			assert.ErrorIs(t, err, tc.err)
			_, err = bmm.MM2Bit(tc.a, tc.b, 4, bmm.Requant{Scale: 1})
			assert.ErrorIs(t, err, tc.err)
		})
	}
	// The largest K that fits is accepted: 8-bit × 8-bit, K·255² ≤ 2^31−1.
	k := math.MaxInt32 / (255 * 255)
	a := mustPack(t, make([]int32, k), 1, k, 8, bittensor.ByRows, def)
	b := mustPack(t, make([]int32, k), k, 1, 8, bittensor.ByCols, def)
	_, _, err := bmm.Check(a, b)
	assert.NoError(t, err)
}

func TestOutBits(t *testing.T) {
	a := mustPack(t, seq(6, 2), 2, 3, 1, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, seq(6, 2), 3, 2, 1, bittensor.ByCols, bittensor.DefaultPadding)
	for _, ob := range []int{-1, 0, 33, 64} {
		_, err := bmm.MM2Bit(a, b, ob, bmm.Requant{Scale: 1})
		require.ErrorIs(t, err, bmm.ErrBits, "outBits=%d", ob)
		assert.Contains(t, err.Error(), fmt.Sprintf("outBits=%d", ob))
	}
	for _, ob := range []int{1, 32} {
		_, err := bmm.MM2BitCols(a, b, ob, bmm.Requant{Scale: 1})
		assert.NoError(t, err, "outBits=%d", ob)
	}
}

func TestEpilogueLengths(t *testing.T) {
	const m, n = 3, 4
	a := mustPack(t, seq(m*5, 4), m, 5, 2, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, seq(5*n, 4), 5, n, 2, bittensor.ByCols, bittensor.DefaultPadding)
	rows, cols := make([]float32, m), make([]float32, n)
	for _, tc := range []struct {
		name string
		ep   bmm.Epilogue
		msg  string
	}{
		{"ColScale", bmm.Epilogue{ColScale: rows}, "ColScale has 3 entries, want 4"},
		{"RowTerm", bmm.Epilogue{RowTerm: cols, ColTerm: cols}, "RowTerm has 4 entries, want 3"},
		{"ColTerm", bmm.Epilogue{RowTerm: rows, ColTerm: rows}, "ColTerm has 3 entries, want 4"},
		{"ColConst", bmm.Epilogue{ColConst: make([]float32, 5)}, "ColConst has 5 entries, want 4"},
		{"RowScale", bmm.Epilogue{RowScale: cols}, "RowScale has 4 entries, want 3"},
		{"ColBias", bmm.Epilogue{ColBias: []float32{}}, "ColBias has 0 entries, want 4"},
		{"RowTerm alone", bmm.Epilogue{RowTerm: rows}, "RowTerm and ColTerm must be set together"},
		{"ColTerm alone", bmm.Epilogue{ColTerm: cols}, "RowTerm and ColTerm must be set together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ep.Validate(m, n)
			require.ErrorIs(t, err, bmm.ErrShape)
			assert.Contains(t, err.Error(), tc.msg)
			_, err = bmm.MM2FloatWith(bmm.Generic{}, a, b, &tc.ep)
			assert.ErrorIs(t, err, bmm.ErrShape)
			_, err = bmm.MM2BitWith(bmm.Generic{}, a, b, 3, bmm.Requant{Scale: 1}, bittensor.ByRows, bittensor.DefaultPadding, &tc.ep)
			assert.ErrorIs(t, err, bmm.ErrShape)
		})
	}
	ok := bmm.Epilogue{ColScale: cols, RowTerm: rows, ColTerm: cols, ColConst: cols, RowScale: rows, ColBias: cols, ReLU: true}
	assert.NoError(t, ok.Validate(m, n))
	assert.NoError(t, (*bmm.Epilogue)(nil).Validate(m, n))
}

func TestMulBitDestinationShape(t *testing.T) {
	a := mustPack(t, seq(6, 2), 2, 3, 1, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, seq(6, 2), 3, 2, 1, bittensor.ByCols, bittensor.DefaultPadding)
	dst, err := bittensor.New(2, 3, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	err = bmm.Generic{}.MulBit(dst, a, b, nil, bmm.Requant{Scale: 1})
	require.ErrorIs(t, err, bmm.ErrShape)
	assert.Contains(t, err.Error(), "destination is 2×3, product is 2×2")
	assert.ErrorIs(t, bmm.CheckDst(nil, 2, 2), bmm.ErrShape)
	assert.ErrorIs(t, bmm.CheckDst(dst, 2, 2), bmm.ErrShape)
	assert.NoError(t, bmm.CheckDst(dst, 2, 3))
}

// TestMM2Semantics checks the convenience entry points end to end on a
// product small enough to write out: packing, padding, bits and codes.
func TestMM2Semantics(t *testing.T) {
	// A (2×3, 2-bit) · B (3×2, 3-bit).
	av := []int32{1, 2, 3, 0, 3, 1}
	bv := []int32{7, 0, 1, 5, 2, 6}
	want := []int32{1*7 + 2*1 + 3*2, 2*5 + 3*6, 3*1 + 1*2, 3*5 + 1*6} // 15, 28, 5, 21
	a := mustPack(t, av, 2, 3, 2, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, bv, 3, 2, 3, bittensor.ByCols, bittensor.DefaultPadding)

	c, err := bmm.MM2Int(a, b)
	require.NoError(t, err)
	assert.Equal(t, want, c)

	f, err := bmm.MM2Float(a, b, &bmm.Epilogue{ColScale: []float32{0.5, 2}, ColBias: []float32{-10, -50}, ReLU: true})
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 6, 0, 0}, f) // 7.5−10, 56−50, 2.5−10, 42−50

	rq := bmm.Requant{Scale: 0.25, Offset: 0.5} // floor(c/4 + 0.5), clamped to 3 bits
	codes := []uint32{4, 7, 1, 5}               // 15→4.25, 28→7.5, 5→1.75, 21→5.75
	for _, tc := range []struct {
		name    string
		mm      func() (*bittensor.Tensor, error)
		packing bittensor.Packing
	}{
		{"MM2Bit", func() (*bittensor.Tensor, error) { return bmm.MM2Bit(a, b, 3, rq) }, bittensor.ByRows},
		{"MM2BitCols", func() (*bittensor.Tensor, error) { return bmm.MM2BitCols(a, b, 3, rq) }, bittensor.ByCols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.mm()
			require.NoError(t, err)
			assert.Equal(t, tc.packing, q.Packing())
			assert.Equal(t, bittensor.DefaultPadding, q.Padding())
			assert.Equal(t, 3, q.Bits())
			assert.Equal(t, [2]int{2, 2}, [2]int{q.Rows(), q.Cols()})
			for i, w := range codes {
				assert.Equal(t, w, q.At(i/2, i%2), "element %d", i)
			}
			assert.NoError(t, bmmtest.PaddingClear(q))
		})
	}
	// MM2BitWith applies the epilogue before re-quantizing; the result can
	// feed the next product directly.
	q, err := bmm.MM2BitWith(bmm.Generic{}, a, b, 2, bmm.Requant{Scale: 1}, bittensor.ByRows,
		bittensor.Padding{Lines: 1, Bits: 64}, &bmm.Epilogue{RowScale: []float32{0.1, 0.1}})
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 0, 2}, q.Ints()) // 1.5, 2.8, 0.5, 2.1 floored
	assert.Equal(t, bittensor.Padding{Lines: 1, Bits: 64}, q.Padding())
}

func TestRequantQuantize(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		y    float32
		rq   bmm.Requant
		bits int
		want uint32
	}{
		{2.9, bmm.Requant{Scale: 1}, 4, 2},
		{-0.1, bmm.Requant{Scale: 1}, 4, 0},
		{-7, bmm.Requant{Scale: -1}, 4, 7},
		{16, bmm.Requant{Scale: 1}, 4, 15},
		{15.999, bmm.Requant{Scale: 1}, 4, 15},
		{nan, bmm.Requant{Scale: 1}, 8, 0},
		{inf, bmm.Requant{Scale: 1}, 8, 255},
		{-inf, bmm.Requant{Scale: 1}, 8, 0},
		{1e12, bmm.Requant{Scale: 1}, 32, math.MaxUint32},
		{3, bmm.Requant{Scale: 0.5, Offset: 0.5}, 1, 1},
		{1, bmm.Requant{Scale: 0.5, Offset: 0.25}, 1, 0},
	} {
		assert.Equal(t, tc.want, tc.rq.Quantize(tc.y, tc.bits), "Quantize(%v) with %+v to %d bits", tc.y, tc.rq, tc.bits)
	}
}

func TestEpilogueApplyOrder(t *testing.T) {
	ep := &bmm.Epilogue{
		ColScale: []float32{2}, RowTerm: []float32{3}, ColTerm: []float32{4},
		ColConst: []float32{1}, RowScale: []float32{-0.5}, ColBias: []float32{10},
	}
	// ((5·2 + 3·4 + 1)·−0.5) + 10 = −1.5
	assert.Equal(t, float32(-1.5), ep.Apply(5, 0, 0))
	ep.ReLU = true
	assert.Equal(t, float32(0), ep.Apply(50, 0, 0)) // ((100+13)·−0.5)+10 < 0
	assert.Equal(t, float32(7), (*bmm.Epilogue)(nil).Apply(7, 3, 9))
}

type fakeKernel struct {
	bmm.Generic
	name string
}

func (f fakeKernel) Name() string { return f.name }

func TestRegistry(t *testing.T) {
	restore := bmm.SwapRegistry()
	defer restore()
	assert.Equal(t, "generic", bmm.Default().Name())

	bmm.Register(fakeKernel{name: "mid"}, 5)
	bmm.Register(fakeKernel{name: "low"}, -1)
	bmm.Register(fakeKernel{name: "high"}, 10)
	bmm.Register(fakeKernel{name: "mid2"}, 5)
	assert.Equal(t, "high", bmm.Default().Name())
	var names []string
	for _, k := range bmm.Kernels() {
		names = append(names, k.Name())
	}
	// Best first; equal priorities keep their registration order.
	assert.Equal(t, []string{"high", "mid", "mid2", "generic", "low"}, names)

	// The package-level products use Default.
	a := mustPack(t, []int32{1, 1}, 1, 2, 1, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, []int32{1, 1}, 2, 1, 1, bittensor.ByCols, bittensor.DefaultPadding)
	c, err := bmm.MM2Int(a, b)
	require.NoError(t, err)
	assert.Equal(t, []int32{2}, c)
}

func BenchmarkGeneric(b *testing.B) {
	bmmtest.Benchmark(b, bmm.Generic{})
}

// MM2BitInto and MM2FloatInto write into the caller's destination, over
// whatever it held, and reject a destination of the wrong shape or an
// epilogue of the wrong length before the kernel runs.
func TestMM2Into(t *testing.T) {
	av := []int32{1, 2, 3, 0, 3, 1}
	bv := []int32{7, 0, 1, 5, 2, 6}
	a := mustPack(t, av, 2, 3, 2, bittensor.ByRows, bittensor.DefaultPadding)
	b := mustPack(t, bv, 3, 2, 3, bittensor.ByCols, bittensor.DefaultPadding)
	rq := bmm.Requant{Scale: 0.25, Offset: 0.5}
	want, err := bmm.MM2BitWith(bmm.Generic{}, a, b, 3, rq, bittensor.ByCols, bittensor.DefaultPadding, nil)
	require.NoError(t, err)
	dst := mustPack(t, []int32{7, 7, 7, 7}, 2, 2, 3, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, bmm.MM2BitInto(bmm.Generic{}, dst, a, b, nil, rq))
	assert.True(t, want.Equal(dst), "stale bits overwritten")
	wrong := mustPack(t, make([]int32, 6), 2, 3, 3, bittensor.ByRows, bittensor.DefaultPadding)
	assert.ErrorIs(t, bmm.MM2BitInto(bmm.Generic{}, wrong, a, b, nil, rq), bmm.ErrShape)
	assert.Error(t, bmm.MM2BitInto(bmm.Generic{}, dst, a, b, &bmm.Epilogue{ColScale: []float32{1}}, rq))

	f := []float32{9, 9, 9, 9}
	require.NoError(t, bmm.MM2FloatInto(bmm.Generic{}, f, a, b, nil))
	assert.Equal(t, []float32{15, 28, 5, 21}, f)
	assert.ErrorIs(t, bmm.MM2FloatInto(bmm.Generic{}, make([]float32, 3), a, b, nil), bmm.ErrShape)
	assert.ErrorIs(t, bmm.MM2FloatInto(bmm.Generic{}, f, b, a, nil), bmm.ErrPacking)
}

// TestAddValue checks the Add ops' element: one rounding, a NaN sum
// written as bmm.NaN whatever the operands' payloads, the ReLU after it.
func TestAddValue(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		x, y float32
		relu bool
		want uint32
	}{
		{1, 2, false, math.Float32bits(3)},
		{16777216, 1, false, math.Float32bits(16777216)}, // rounded once, to even
		{-1, 0.5, true, 0},
		{inf, -inf, false, 0x7fc00000},
		{math.Float32frombits(0x7fa00001), 1, false, 0x7fc00000},
		{2, math.Float32frombits(0xffc00000), false, 0x7fc00000},
		{math.Float32frombits(0x7fa00001), 1, true, 0},
		{inf, 1, false, math.Float32bits(inf)},
	} {
		got := bmm.AddValue(c.x, c.y, c.relu)
		assert.Equal(t, c.want, math.Float32bits(got), "%v + %v relu=%v", c.x, c.y, c.relu)
	}
}
