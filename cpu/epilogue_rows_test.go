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

// rowsImpls lists the block kernel paths this build and CPU can run: the
// epilogue paths, and under AVX-512 each register width forced on every n.
func rowsImpls() []string {
	impls := epImpls()
	if haveAsm && hasAVX512 {
		impls = append(impls, "avx512-zmm", "avx512-ymm")
	}
	return impls
}

func useRowsImpl(tb testing.TB, impl string) {
	tb.Helper()
	narrow := epRowsNarrow
	tb.Cleanup(func() { epRowsNarrow = narrow })
	switch impl {
	case "avx512-zmm":
		useEpImpl(tb, "avx512")
		epRowsNarrow = 0
	case "avx512-ymm":
		useEpImpl(tb, "avx512")
		epRowsNarrow = math.MaxInt
	default:
		useEpImpl(tb, impl)
	}
}

// blockCase is a block of rows×n products at rows m0.. of a longer
// product, with strides above n and the epilogue fields mask selects (bit
// 6: nil), drawn as newEpCase draws a row.
type blockCase struct {
	m0, rows, n, ldc, ldd int
	c                     []int32
	ep                    *bmm.Epilogue
	rq                    bmm.Requant
	tag                   string
}

func newBlockCase(r *rand.Rand, rows, n, mask, bits int) blockCase {
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for j := range v {
			if r.IntN(3) > 0 {
				v[j] = float32(r.NormFloat64())
			} else {
				v[j] = epValue(r)
			}
		}
		return v
	}
	bc := blockCase{m0: r.IntN(70), rows: rows, n: n, ldc: n + r.IntN(18), ldd: n + r.IntN(18)}
	if r.IntN(4) == 0 {
		bc.ldc, bc.ldd = n, n
	}
	bc.c = make([]int32, max(rows*bc.ldc, 1)+r.IntN(5))
	for i := range bc.c {
		bc.c[i] = epInt(r)
	}
	m := bc.m0 + rows + r.IntN(3)
	if mask&64 == 0 {
		bc.ep = &bmm.Epilogue{ReLU: mask&32 != 0}
		if mask&1 != 0 {
			bc.ep.ColScale = vec(n)
		}
		if mask&2 != 0 {
			bc.ep.RowTerm, bc.ep.ColTerm = vec(m), vec(n)
		}
		if mask&4 != 0 {
			bc.ep.ColConst = vec(n)
		}
		if mask&8 != 0 {
			bc.ep.RowScale = vec(m)
		}
		if mask&16 != 0 {
			bc.ep.ColBias = vec(n)
		}
	}
	_, bc.rq = quantCase(r, 1, bits)
	bc.tag = fmt.Sprintf("rows=%d n=%d m0=%d ldc=%d ldd=%d mask=%02x bits=%d rq=%+v", rows, n, bc.m0, bc.ldc, bc.ldd, mask, bits, bc.rq)
	return bc
}

// checkBlock runs the three block functions on bc and compares every value
// with bmm's Apply and Quantize and with the row functions, and checks
// that nothing outside the block's rows×n values changed.
func checkBlock(t *testing.T, bc blockCase, bits int) {
	t.Helper()
	size := max(bc.rows*bc.ldd, 1) + 7
	inBlock := func(i int) bool { return bc.ldd > 0 && i/bc.ldd < bc.rows && i%bc.ldd < bc.n }
	const fill = 0xa5
	out := make([]float32, size)
	q32 := make([]uint32, size)
	q8 := make([]uint8, size)
	for i := range out {
		out[i], q32[i], q8[i] = math.Float32frombits(fill), fill, fill
	}
	b8 := (bits-1)%8 + 1
	applyRows(out, bc.ldd, bc.c, bc.ldc, bc.m0, bc.rows, bc.n, bc.ep)
	applyQuantizeRows32(q32, bc.ldd, bc.c, bc.ldc, bc.m0, bc.rows, bc.n, bc.ep, bc.rq, bits)
	applyQuantizeRows(q8, bc.ldd, bc.c, bc.ldc, bc.m0, bc.rows, bc.n, bc.ep, bc.rq, b8)
	y, rq32, rq8 := make([]float32, bc.n), make([]uint32, bc.n), make([]uint8, bc.n)
	for r := 0; r < bc.rows; r++ {
		m, row := bc.m0+r, bc.c[r*bc.ldc:r*bc.ldc+bc.n]
		applyRow(y, row, m, bc.ep)
		quantizeRow(rq32, y, bc.rq, bits)
		quantizeRowBytes(rq8, y, bc.rq, b8)
		for j, c := range row {
			i := r*bc.ldd + j
			want := bc.ep.Apply(c, m, j)
			if !sameBits(out[i], want) || !sameBits(y[j], want) {
				t.Fatalf("%s applyRows (%d, %d): c=%d got %#08x, row %#08x, want %#08x", bc.tag, r, j, c,
					math.Float32bits(out[i]), math.Float32bits(y[j]), math.Float32bits(want))
			}
			w32, w8 := bc.rq.Quantize(want, bits), bc.rq.Quantize(want, b8)
			if q32[i] != w32 || rq32[j] != w32 {
				t.Fatalf("%s applyQuantizeRows32 (%d, %d): y=%#08x got %d, row %d, want %d", bc.tag, r, j, math.Float32bits(want), q32[i], rq32[j], w32)
			}
			if uint32(q8[i]) != w8 || uint32(rq8[j]) != w8 {
				t.Fatalf("%s applyQuantizeRows %d bits (%d, %d): y=%#08x got %d, row %d, want %d", bc.tag, b8, r, j, math.Float32bits(want), q8[i], rq8[j], w8)
			}
		}
	}
	for i := range out {
		if !inBlock(i) && (math.Float32bits(out[i]) != fill || q32[i] != fill || q8[i] != fill) {
			t.Fatalf("%s: wrote outside the block at %d", bc.tag, i)
		}
	}
}

// TestApplyQuantizeRows runs every block of 0..130 rows against the
// awkward widths on each path, cycling through the 65 epilogue masks and
// the bit widths (1..32, and 1..8 for bytes).
func TestApplyQuantizeRows(t *testing.T) {
	widths := []int{0, 1, 5, 10, 15, 16, 17, 63, 64, 65, 256}
	for _, impl := range rowsImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useRowsImpl(t, impl)
			r := rand.New(rand.NewPCG(13, 13))
			k := 0
			for rows := 0; rows <= 130; rows++ {
				for _, n := range widths {
					if n == 256 && rows%8 != 0 { // the widest rows on fewer blocks: the test stays short
						continue
					}
					mask, bits := k%65, k%32+1
					k++
					checkBlock(t, newBlockCase(r, rows, n, mask, bits), bits)
				}
			}
		})
	}
}

// TestApplyQuantizeRowsChunks runs rows wider than epChunk, whose generic
// loops cut the column vectors per chunk (epColumns), with each column
// vector alone and all of them, on each path.
func TestApplyQuantizeRowsChunks(t *testing.T) {
	for _, impl := range rowsImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useRowsImpl(t, impl)
			r := rand.New(rand.NewPCG(15, 15))
			for _, n := range []int{epChunk + 1, 2*epChunk + 45} {
				for _, mask := range []int{1, 2, 4, 16, 31, 63} {
					for _, bits := range []int{8, 24, 32} {
						checkBlock(t, newBlockCase(r, 3, n, mask, bits), bits)
					}
				}
			}
		})
	}
}

// TestApplyQuantizeRowsMasks runs every epilogue mask at every bit width on
// small blocks, so that each combination meets each path.
func TestApplyQuantizeRowsMasks(t *testing.T) {
	for _, impl := range rowsImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useRowsImpl(t, impl)
			r := rand.New(rand.NewPCG(14, 14))
			for mask := 0; mask <= 64; mask++ {
				for bits := 1; bits <= 32; bits++ {
					n := []int{1, 5, 7, 8, 9, 10, 16, 17, 33}[r.IntN(9)]
					checkBlock(t, newBlockCase(r, 1+r.IntN(5), n, mask, bits), bits)
				}
			}
		})
	}
}

// TestApplyRowsSpecials puts every pair of special values through each
// epilogue step of a block, as TestEpilogueSpecials does for a row.
func TestApplyRowsSpecials(t *testing.T) {
	ns := len(epSpecials)
	n := 2 * ns
	y := make([]float32, n)
	copy(y, epSpecials)
	copy(y[ns:], epSpecials)
	rowv := append([]float32{1}, epSpecials...)
	c := make([]int32, len(rowv)*n)
	for i := range c {
		c[i] = []int32{0, 1, -1, 3, math.MaxInt32, math.MinInt32, 1 << 24, -7}[i%8]
	}
	eps := map[string]*bmm.Epilogue{
		"ColScale": {ColScale: y}, "RowTerm": {RowTerm: rowv, ColTerm: y},
		"ColConst": {ColConst: y}, "ColBias": {ColBias: y}, "ReLU": {ReLU: true},
		"RowScale": {RowScale: rowv},
		"all":      {ColScale: y, RowTerm: rowv, ColTerm: y, ColConst: y, RowScale: rowv, ColBias: y, ReLU: true},
	}
	for _, impl := range rowsImpls() {
		for name, ep := range eps {
			t.Run(fmt.Sprintf("impl=%s/%s", impl, name), func(t *testing.T) {
				useRowsImpl(t, impl)
				for _, bits := range []int{1, 4, 8, 31, 32} {
					bc := blockCase{rows: len(rowv), n: n, ldc: n, ldd: n, c: c, ep: ep, rq: bmm.Requant{Scale: 0.5, Offset: 1}}
					bc.tag = fmt.Sprintf("%s bits=%d", name, bits)
					checkBlock(t, bc, bits)
				}
			})
		}
	}
}

func TestApplyQuantizeRowsPanics(t *testing.T) {
	c, q, q32, out := make([]int32, 40), make([]uint8, 40), make([]uint32, 40), make([]float32, 40)
	rq := bmm.Requant{Scale: 1}
	assert.Panics(t, func() { applyQuantizeRows(q, 10, c, 10, 0, 4, 10, nil, rq, 9) }, "9 bits in bytes")
	assert.Panics(t, func() { applyQuantizeRows(q, 10, c, 10, 0, 4, 10, nil, rq, 0) }, "0 bits")
	assert.Panics(t, func() { applyQuantizeRows32(q32, 10, c, 10, 0, 4, 10, nil, rq, 33) }, "33 bits")
	assert.Panics(t, func() { applyQuantizeRows(q, 9, c, 10, 0, 4, 10, nil, rq, 4) }, "stride below n")
	assert.Panics(t, func() { applyRows(out, 10, c, 10, 0, 5, 10, nil) }, "too few rows")
	assert.Panics(t, func() {
		applyRows(out, 10, c, 10, 1, 4, 10, &bmm.Epilogue{RowScale: make([]float32, 4)})
	}, "RowScale too short for m0+rows")
	require.NotPanics(t, func() { applyQuantizeRows(nil, 0, nil, 0, 0, 0, 10, nil, rq, 4) })
}

// TestApplyQuantizeRowsClamp puts values at and around each clamp bound
// through the re-quantizer of every width: 2^bits−1 and 2^bits, the edges
// of float32's integers (2^24) and of the signed and unsigned truncations
// (2^31, 2^32), a few float32 steps either side of each. The products are
// 0 and ColConst holds the values, so the epilogue passes them through.
func TestApplyQuantizeRowsClamp(t *testing.T) {
	var vals []float32
	for _, b := range []float64{0, 1, 1 << 24, 1 << 31, 1 << 32, math.MaxFloat32} {
		for d := -2.0; d <= 2; d += 0.5 {
			v := float32(b + d)
			vals = append(vals, v)
			for k, w := 0, v; k < 3; k++ {
				w = math.Nextafter32(w, float32(math.Inf(1)))
				vals = append(vals, w, -w)
			}
			for k, w := 0, v; k < 3; k++ {
				w = math.Nextafter32(w, float32(math.Inf(-1)))
				vals = append(vals, w)
			}
		}
	}
	for _, impl := range rowsImpls() {
		t.Run("impl="+impl, func(t *testing.T) {
			useRowsImpl(t, impl)
			for bits := 1; bits <= 32; bits++ {
				top := float64(uint64(1)<<bits - 1)
				cc := append([]float32(nil), vals...)
				for d := -2.0; d <= 2; d += 0.25 {
					for _, v := range []float64{top + d, top + 1 + d, top/2 + d} {
						cc = append(cc, float32(v))
					}
				}
				n := len(cc)
				bc := blockCase{rows: 3, n: n, ldc: n, ldd: n, c: make([]int32, 3*n),
					ep: &bmm.Epilogue{ColConst: cc}, rq: bmm.Requant{Scale: 1}, tag: fmt.Sprintf("bits=%d", bits)}
				checkBlock(t, bc, bits)
			}
		})
	}
}

// TestApplyQuantizePackRows checks the fused epilogue, re-quantizer and
// plane packing of a block (through bytes for up to 8 bits) against the
// generic block loop and packBitBlockGeneric, word for word over the whole
// tensor, on each path, both packings and widths around the byte path's.
func TestApplyQuantizePackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	for _, impl := range rowsImpls() {
		for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			t.Run(fmt.Sprintf("impl=%s/packing=%v", impl, packing), func(t *testing.T) {
				useRowsImpl(t, impl)
				var buf []uint32
				for _, bits := range []int{1, 2, 3, 4, 7, 8, 9, 16, 32} {
					for _, n := range []int{1, 5, 10, 63, 64, 65, 130} {
						for _, rows := range []int{1, 17, 64} {
							bc := newBlockCase(r, rows, n, r.IntN(65), bits)
							bc.m0 = 64 * r.IntN(2)
							if bc.ep != nil && bc.ep.RowTerm != nil {
								bc.ep.RowTerm = append(bc.ep.RowTerm, make([]float32, 64)...)
							}
							if bc.ep != nil && bc.ep.RowScale != nil {
								bc.ep.RowScale = append(bc.ep.RowScale, make([]float32, 64)...)
							}
							got, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							want, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							applyQuantizePackRows(got, &buf, bc.c, bc.ldc, bc.m0, rows, n, bc.ep, bc.rq)
							q := make([]uint32, rows*n)
							applyQuantizeRowsGeneric(q, n, bc.c, bc.ldc, bc.m0, rows, n, bc.ep, bc.rq, bits)
							packBitBlockGeneric(want, q, bc.m0, rows, n)
							require.Equal(t, want.Words(), got.Words(), bc.tag)
						}
					}
				}
			})
		}
	}
}

// TestPackBitBlockBytes checks the byte-code plane packing against the
// generic loop; the codes carry random bits above the width, which it
// must ignore.
func TestPackBitBlockBytes(t *testing.T) {
	if !haveAsm || !hasAVX2 {
		t.Skip("packBitBlockBytes needs the AVX2 plane gather")
	}
	r := rand.New(rand.NewPCG(16, 16))
	for _, impl := range epImpls()[1:] {
		for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			t.Run(fmt.Sprintf("impl=%s/packing=%v", impl, packing), func(t *testing.T) {
				useEpImpl(t, impl)
				for bits := 1; bits <= 8; bits++ {
					for _, n := range []int{1, 5, 63, 64, 65, 130, 256} {
						for _, rows := range []int{1, 17, 64} {
							m0 := 64 * r.IntN(2)
							q, q32 := make([]uint8, rows*n), make([]uint32, rows*n)
							for j := range q {
								q[j] = uint8(r.Uint32())
								if r.IntN(2) == 0 {
									q[j] &= 1<<bits - 1
								}
								q32[j] = uint32(q[j])
							}
							got, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							want, err := bittensor.New(128, n, bits, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							packBitBlockBytes(got, q, m0, rows, n)
							packBitBlockGeneric(want, q32, m0, rows, n)
							require.Equal(t, want.Words(), got.Words(), "bits=%d n=%d rows=%d m0=%d", bits, n, rows, m0)
						}
					}
				}
			})
		}
	}
}
