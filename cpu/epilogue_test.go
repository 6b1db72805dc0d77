package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// epImpls lists the epilogue paths this build and CPU can run; use switches
// the package to one of them until the test ends.
func epImpls() []string {
	impls := []string{"generic"}
	if haveAsm && hasAVX2 {
		impls = append(impls, "avx2")
	}
	if haveAsm && hasAVX512 {
		impls = append(impls, "avx512")
	}
	return impls
}

func useEpImpl(tb testing.TB, impl string) {
	tb.Helper()
	a2, a512, gfni := useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI
	tb.Cleanup(func() { useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI = a2, a512, gfni })
	switch impl {
	case "generic":
		useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI = false, false, false
	case "avx2":
		useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI = true, false, false
	case "avx512":
		useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI = true, true, hasGFNI
	default:
		tb.Fatalf("unknown epilogue impl %q", impl)
	}
}

// special float32 values: the IEEE corner cases, values whose products
// round, overflow or underflow, and NaNs with different payloads and signs.
var epSpecials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 1.5, 2.5, -2.5,
	float32(math.Inf(1)), float32(math.Inf(-1)),
	math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000),
	math.Float32frombits(0x7fc12345), math.Float32frombits(0x7f800001), // a signalling NaN
	math.MaxFloat32, -math.MaxFloat32, 3e38, -3e38, 1e20, -1e20,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-39, 1.17549435e-38,
	16777216, 16777217, 16777215, 2147483520, 2147483648, 4294967040, 4294967296,
	0.99999994, 1.0000001, 255, 255.5, 256, 15, 15.999999, 16,
}

// epValue draws a float32: often a special, else a random value of random
// magnitude and sign.
func epValue(r *rand.Rand) float32 {
	if r.IntN(4) == 0 {
		return epSpecials[r.IntN(len(epSpecials))]
	}
	v := float32(math.Ldexp(r.Float64()+0.5, r.IntN(60)-30))
	if r.IntN(2) == 0 {
		v = -v
	}
	return v
}

func epInt(r *rand.Rand) int32 {
	switch r.IntN(6) {
	case 0:
		return []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 1 << 24, 1<<24 + 1, -(1<<24 + 3)}[r.IntN(8)]
	case 1:
		return int32(r.Uint32())
	default:
		return int32(r.IntN(2001) - 1000)
	}
}

// sameBits reports whether a and b have the same bits. NaN results are
// compared as NaN only: which operand's payload a NaN-in, NaN-out
// operation keeps depends on the order the compiler puts the operands in,
// which neither bmm's contract nor IEEE 754 fixes.
func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// epCase is one row of epilogue inputs, each slice starting at its own
// offset into a larger buffer so that the vector loops see unaligned data.
type epCase struct {
	m   int
	c   []int32
	t   []float32
	ep  *bmm.Epilogue
	tag string
}

// newEpCase draws a row of n products for row m of an (m+2)-row product
// with the epilogue fields that mask selects (bit 6: a nil epilogue).
func newEpCase(r *rand.Rand, n, mask int) epCase {
	off := func() int { return r.IntN(16) }
	vec := func(n int) []float32 {
		o := off()
		v := make([]float32, o+n)
		for j := range v {
			v[j] = epValue(r)
		}
		return v[o:]
	}
	mild := func(n int) []float32 { // mostly ordinary values, so that ReLU sees both signs
		v := vec(n)
		for j := range v {
			if r.IntN(3) > 0 {
				v[j] = float32(r.NormFloat64())
			}
		}
		return v
	}
	m := r.IntN(4)
	o := off()
	c := make([]int32, o+n)
	for j := range c {
		c[j] = epInt(r)
	}
	ec := epCase{m: m, c: c[o:], t: mild(n), tag: fmt.Sprintf("n=%d/mask=%02x", n, mask)}
	if mask&64 != 0 {
		return ec
	}
	ec.ep = &bmm.Epilogue{ReLU: mask&32 != 0}
	if mask&1 != 0 {
		ec.ep.ColScale = mild(n)
	}
	if mask&2 != 0 {
		ec.ep.RowTerm, ec.ep.ColTerm = mild(m+2), mild(n)
	}
	if mask&4 != 0 {
		ec.ep.ColConst = mild(n)
	}
	if mask&8 != 0 {
		ec.ep.RowScale = mild(m + 2)
	}
	if mask&16 != 0 {
		ec.ep.ColBias = mild(n)
	}
	return ec
}

// applyRowFloat is bmm.Epilogue.ApplyFloat over row m, in place: out[j] =
// ep.ApplyFloat(out[j], m, j). The kernels' float32-in-place mode (c ==
// nil) serves only the tests, which feed special values (NaN, infinities,
// −0) straight into each step through it: no int32 product is one.
func applyRowFloat(out []float32, m int, ep *bmm.Epilogue) {
	if ep != nil && !applyRowAsm(out, nil, m, ep) {
		applyRowFloatGeneric(out, m, ep)
	}
}

// checkEpCase runs applyRow and applyRowFloat on ec with the current path
// and compares them with bmm's Apply and ApplyFloat element by element.
func checkEpCase(t *testing.T, ec epCase) {
	t.Helper()
	n := len(ec.c)
	pad := make([]float32, n+9)
	out := pad[3 : 3+n]
	applyRow(out, ec.c, ec.m, ec.ep)
	for j, c := range ec.c {
		want := ec.ep.Apply(c, ec.m, j)
		if !sameBits(out[j], want) {
			t.Fatalf("%s applyRow [%d]: c=%d got %g (%#08x) want %g (%#08x)", ec.tag, j, c,
				out[j], math.Float32bits(out[j]), want, math.Float32bits(want))
		}
	}
	copy(out, ec.t)
	applyRowFloat(out, ec.m, ec.ep)
	for j, x := range ec.t {
		want := ec.ep.ApplyFloat(x, ec.m, j)
		if !sameBits(out[j], want) {
			t.Fatalf("%s applyRowFloat [%d]: t=%g got %g (%#08x) want %g (%#08x)", ec.tag, j, x,
				out[j], math.Float32bits(out[j]), want, math.Float32bits(want))
		}
	}
	for _, v := range append(pad[:3], pad[3+n:]...) {
		require.Zero(t, v, "%s: wrote outside the row", ec.tag)
	}
}

func epLengths() []int {
	var ns []int
	for n := 0; n <= 70; n++ {
		ns = append(ns, n)
	}
	return append(ns, 127, 128, 129, 255, 256, 257, 1000)
}

func TestEpilogueRow(t *testing.T) {
	for _, impl := range epImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useEpImpl(t, impl)
			r := rand.New(rand.NewPCG(7, 7))
			for _, n := range epLengths() {
				for mask := 0; mask <= 64; mask++ {
					checkEpCase(t, newEpCase(r, n, mask))
				}
			}
		})
	}
}

// TestEpilogueSpecials runs every pair of special values through each
// step alone, so that NaN, infinities, −0 and overflow meet each
// instruction, ReLU included.
func TestEpilogueSpecials(t *testing.T) {
	n := len(epSpecials) * len(epSpecials)
	x, y := make([]float32, n), make([]float32, n)
	for i, a := range epSpecials {
		for j, b := range epSpecials {
			x[i*len(epSpecials)+j], y[i*len(epSpecials)+j] = a, b
		}
	}
	eps := map[string]*bmm.Epilogue{
		"ColScale": {ColScale: y}, "RowTerm": {RowTerm: []float32{-3, 1.5}, ColTerm: y},
		"ColConst": {ColConst: y}, "ColBias": {ColBias: y}, "ReLU": {ReLU: true},
		"RowScale": {RowScale: []float32{math.Float32frombits(0x7fc00001), float32(math.Inf(-1))}},
		"all":      {ColScale: y, RowTerm: []float32{2, 1e30}, ColTerm: y, ColConst: y, RowScale: []float32{-1, 0}, ColBias: y, ReLU: true},
	}
	for _, impl := range epImpls() {
		for name, ep := range eps {
			for m := 0; m < 2; m++ {
				t.Run(fmt.Sprintf("impl=%s/%s/m=%d", impl, name, m), func(t *testing.T) {
					useEpImpl(t, impl)
					out := append([]float32(nil), x...)
					applyRowFloat(out, m, ep)
					for j := range out {
						want := ep.ApplyFloat(x[j], m, j)
						if !sameBits(out[j], want) {
							t.Fatalf("[%d] t=%g y=%g: got %#08x want %#08x", j, x[j], y[j], math.Float32bits(out[j]), math.Float32bits(want))
						}
					}
				})
			}
		}
	}
}

// TestEpilogueRowMatchesGeneric checks each vector path against the generic
// loops of epilogue_generic.go directly.
func TestEpilogueRowMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, impl := range epImpls()[1:] {
		t.Run("impl="+impl, func(t *testing.T) {
			useEpImpl(t, impl)
			for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 64, 100, 256} {
				for mask := 0; mask < 64; mask++ {
					ec := newEpCase(r, n, mask)
					got, want := make([]float32, n), make([]float32, n)
					applyRow(got, ec.c, ec.m, ec.ep)
					applyRowGeneric(want, ec.c, ec.m, ec.ep)
					for j := range got {
						require.True(t, sameBits(got[j], want[j]), "%s [%d]: got %#08x want %#08x", ec.tag, j, math.Float32bits(got[j]), math.Float32bits(want[j]))
					}
				}
			}
		})
	}
}

// quantCase draws a row for bits-wide codes: values around the clamp
// bounds, specials and random values, with a requantizer that spans the
// code range.
func quantCase(r *rand.Rand, n, bits int) ([]float32, bmm.Requant) {
	top := float64(uint64(1)<<bits - 1)
	o := r.IntN(16)
	y := make([]float32, o+n)
	for j := range y {
		switch r.IntN(5) {
		case 0:
			y[j] = epSpecials[r.IntN(len(epSpecials))]
		case 1: // near the top, in float32 steps
			v := float32(top)
			for k := r.IntN(7) - 3; k != 0; k -= sign(k) {
				v = math.Nextafter32(v, float32(sign(k))*float32(math.Inf(1)))
			}
			y[j] = v + float32(r.IntN(5)-2)*0.5
		case 2:
			y[j] = float32(r.Float64()*top*1.2 - top*0.1)
		default:
			y[j] = epValue(r)
		}
	}
	rq := bmm.Requant{Scale: 1, Offset: 0}
	switch r.IntN(4) {
	case 0:
		rq = bmm.Requant{Scale: float32(r.Float64() * 3), Offset: float32(r.NormFloat64() * top / 4)}
	case 1:
		rq = bmm.Requant{Scale: epValue(r), Offset: epValue(r)}
	}
	return y[o:], rq
}

func sign(k int) int {
	if k < 0 {
		return -1
	}
	return 1
}

func TestQuantizeRow(t *testing.T) {
	for _, impl := range epImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useEpImpl(t, impl)
			r := rand.New(rand.NewPCG(9, 9))
			for bits := 1; bits <= 32; bits++ {
				for _, n := range epLengths() {
					y, rq := quantCase(r, n, bits)
					q := make([]uint32, n+2)
					quantizeRow(q[1:n+1], y, rq, bits)
					assert.Zero(t, q[0]+q[n+1], "bits=%d n=%d: wrote outside the row", bits, n)
					for j, x := range y {
						if want := rq.Quantize(x, bits); q[1+j] != want {
							t.Fatalf("bits=%d n=%d rq=%+v [%d]: y=%g (%#08x) got %d want %d", bits, n, rq, j, x, math.Float32bits(x), q[1+j], want)
						}
					}
					if bits > 8 {
						continue
					}
					qb := make([]uint8, n+2)
					quantizeRowBytes(qb[1:n+1], y, rq, bits)
					assert.Zero(t, qb[0]|qb[n+1], "bits=%d n=%d: bytes wrote outside the row", bits, n)
					for j := range y {
						if qb[1+j] != uint8(q[1+j]) {
							t.Fatalf("bits=%d n=%d [%d]: bytes got %d want %d", bits, n, j, qb[1+j], q[1+j])
						}
					}
				}
			}
		})
	}
}

func TestQuantizeRowBytesPanics(t *testing.T) {
	assert.Panics(t, func() { quantizeRowBytes(make([]uint8, 4), make([]float32, 4), bmm.Requant{Scale: 1}, 9) })
}

// FuzzEpilogueRow checks every path against bmm's Apply, ApplyFloat and
// Quantize on rows drawn from the fuzzer's bytes: four bytes a product,
// the epilogue fields and ReLU from mask.
func FuzzEpilogueRow(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 0, 0, 0x80, 0xff, 9, 9, 9, 9}, uint8(0x3f), uint8(4), float32(0.25), float32(1.5))
	f.Add(make([]byte, 4*37), uint8(0x21), uint8(1), float32(1), float32(0))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0xff}, uint8(0x40), uint8(32), float32(3e9), float32(-1))
	f.Fuzz(func(t *testing.T, data []byte, mask, bits uint8, scale, offset float32) {
		n := len(data) / 4
		c, x := make([]int32, n), make([]float32, n)
		for j := range c {
			u := uint32(data[4*j]) | uint32(data[4*j+1])<<8 | uint32(data[4*j+2])<<16 | uint32(data[4*j+3])<<24
			c[j], x[j] = int32(u), math.Float32frombits(u)
		}
		// The column vectors are the row's own values rotated, so that they
		// hold what the fuzzer put in too.
		rot := func(k int) []float32 {
			v := make([]float32, n)
			for j := range v {
				v[j] = x[(j+k)%n]
			}
			return v
		}
		var ep *bmm.Epilogue
		if mask&64 == 0 {
			ep = &bmm.Epilogue{ReLU: mask&32 != 0}
			if mask&1 != 0 {
				ep.ColScale = rot(1)
			}
			if mask&2 != 0 {
				ep.RowTerm, ep.ColTerm = []float32{scale}, rot(2)
			}
			if mask&4 != 0 {
				ep.ColConst = rot(3)
			}
			if mask&8 != 0 {
				ep.RowScale = []float32{offset}
			}
			if mask&16 != 0 {
				ep.ColBias = rot(4)
			}
		}
		b := int(bits%32) + 1
		rq := bmm.Requant{Scale: scale, Offset: offset}
		for _, impl := range epImpls() {
			useEpImpl(t, impl)
			checkEpCase(t, epCase{m: 0, c: c, t: x, ep: ep, tag: impl})
			q := make([]uint32, n)
			quantizeRow(q, x, rq, b)
			qb := make([]uint8, n)
			if b <= 8 {
				quantizeRowBytes(qb, x, rq, b)
			}
			for j, v := range x {
				want := rq.Quantize(v, b)
				if q[j] != want || (b <= 8 && uint32(qb[j]) != want) {
					t.Fatalf("%s bits=%d rq=%+v [%d] y=%#08x: got %d, bytes %d, want %d", impl, b, rq, j, math.Float32bits(v), q[j], qb[j], want)
				}
			}
		}
	})
}

func TestTransposeBits64(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 10))
	var a, orig [64]uint64
	for i := range a {
		a[i] = r.Uint64()
	}
	orig = a
	transposeBits64(&a)
	for i := range 64 {
		for j := range 64 {
			require.Equal(t, orig[i]>>j&1, a[j]>>i&1, "bit (%d, %d)", i, j)
		}
	}
}

// TestTransposeTiles checks the vector tile transposes against
// transposeBits64 on random and structured tiles.
func TestTransposeTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	for _, impl := range epImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useEpImpl(t, impl)
			for nt := 0; nt <= 9; nt++ {
				a := make([]uint64, 64*nt+3) // a partial tile at the end stays as it is
				for i := range a {
					switch i % 3 {
					case 0:
						a[i] = r.Uint64()
					case 1:
						a[i] = 1 << (i % 64)
					default:
						a[i] = ^uint64(0) >> (i % 64)
					}
				}
				want := append([]uint64(nil), a...)
				transposeTilesGeneric(want)
				transposeTiles(a)
				require.Equal(t, want, a, "%d tiles", nt)
			}
		})
	}
}

// TestPackBitBlock checks every path of packBitBlock against the generic
// loop, word for word over the whole tensor, padding included. The codes
// carry random bits above the width, which every path must ignore.
func TestPackBitBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	for _, impl := range epImpls() {
		for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			for _, bits := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 32} {
				t.Run(fmt.Sprintf("impl=%s/packing=%v/bits=%d", impl, packing, bits), func(t *testing.T) {
					useEpImpl(t, impl)
					for _, n := range []int{1, 5, 63, 64, 65, 130, 256} {
						for _, rows := range []int{1, 17, 64} {
							m0 := 64 * r.IntN(2)
							q := make([]uint32, rows*n)
							for j := range q {
								q[j] = r.Uint32()
								if r.IntN(2) == 0 {
									q[j] &= 1<<bits - 1
								}
							}
							got, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							want, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							packBitBlock(got, q, m0, rows, n)
							packBitBlockGeneric(want, q, m0, rows, n)
							require.Equal(t, want.Words(), got.Words(), "n=%d rows=%d m0=%d", n, rows, m0)
						}
					}
				})
			}
		}
	}
}
