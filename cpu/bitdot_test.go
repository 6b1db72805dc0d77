package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveRow is the definition, one word at a time, in int64.
func naiveRow(out []int32, ldo int, a []uint64, lda, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols, nrows int) {
	for r := 0; r < nrows; r++ {
		for n := 0; n < ncols; n++ {
			var s int64
			for i := 0; i < abits; i++ {
				for j := 0; j < bbits; j++ {
					o := j*bps + n*ldb
					ao := r*lda + i*aps
					s += int64(popcount1(a[ao:ao+kw], b[o:o+kw])) << (i + j)
				}
			}
			out[r*ldo+n] += int32(s)
		}
	}
}

func randWords(r *rand.Rand, n int, density float64) []uint64 {
	w := make([]uint64, n)
	for i := range w {
		switch {
		case density >= 1:
			w[i] = r.Uint64()
		case r.Float64() < density:
			w[i] = r.Uint64() & r.Uint64()
		}
	}
	return w
}

// rowCase lays out nrows rows of abits planes (line stride lda, plane
// stride aps) and ncols columns of bbits planes (ldb, bps), kw words each,
// behind an offset of off words; out has row stride ldo.
type rowCase struct{ kw, ncols, nrows, abits, bbits, pad, off int }

type rowArgs struct {
	a, b                    []uint64
	ldo, lda, aps, ldb, bps int
}

func (c rowCase) operands(r *rand.Rand, density float64) rowArgs {
	var x rowArgs
	x.ldo = c.ncols + c.pad
	x.lda = c.kw + c.pad
	x.aps = max(1, c.nrows)*x.lda + c.pad
	x.ldb = c.kw + 2*c.pad
	x.bps = max(1, c.ncols)*x.ldb + c.pad
	x.a = randWords(r, c.abits*x.aps+c.off, density)[c.off:]
	x.b = randWords(r, c.bbits*x.bps+c.off, density)[c.off:]
	return x
}

func (c rowCase) run(f rowFunc, x rowArgs, out []int32) {
	f(out, x.ldo, x.a, x.lda, x.aps, c.abits, x.b, x.ldb, x.bps, c.bbits, c.kw, c.ncols, c.nrows)
}

func (c rowCase) outLen(x rowArgs) int { return max(1, c.nrows)*x.ldo + 1 }

// TestRowVsNaive checks every inner-kernel path against the naive loop
// over word counts around each vector width (4 words = 256 bits, 8 = 512,
// 31·4 = the AVX2 byte-counter flush), column counts around the 4-column
// blocking, several planes and weights, strides and unaligned starts.
func TestRowVsNaive(t *testing.T) {
	var cases []rowCase
	for _, kw := range []int{0, 1, 3, 4, 5, 7, 8, 9, 12, 16, 63, 64, 65, 120, 124, 128, 132, 257} {
		for _, nc := range []int{0, 1, 3, 4, 5, 8, 13} {
			for _, ab := range [][2]int{{1, 1}, {3, 2}, {1, 8}, {4, 4}} {
				for _, po := range [][3]int{{0, 0, 1}, {1, 1, 3}, {3, 5, 2}} {
					cases = append(cases, rowCase{kw, nc, po[2], ab[0], ab[1], po[0], po[1]})
				}
			}
		}
	}
	// K = 256 bits, B's columns back to back or strided: the row4 kernels
	// (two columns per register in AVX-512), with and without a tail.
	for _, nc := range []int{8, 13, 16, 64, 71} {
		for _, ab := range [][2]int{{1, 1}, {2, 3}, {8, 8}} {
			cases = append(cases, rowCase{4, nc, 3, ab[0], ab[1], 0, 1})
			cases = append(cases, rowCase{4, nc, 2, ab[0], ab[1], 5, 3}) // strided columns
		}
	}
	for _, im := range bitImpls {
		t.Run("impl="+im.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for _, c := range cases {
				x := c.operands(r, 1)
				want := make([]int32, c.outLen(x))
				for i := range want {
					want[i] = int32(i * 1000) // the kernel adds to what is there
				}
				got := append([]int32(nil), want...)
				c.run(naiveRow, x, want)
				c.run(im.row, x, got)
				require.Equal(t, want, got, "%+v", c)
			}
		})
	}
}

// TestRowAllOnes drives the AVX2 byte counters to their limit: every byte
// gains 8 per step for 31 steps (248 <= 255) before each flush.
func TestRowAllOnes(t *testing.T) {
	for _, im := range bitImpls {
		for _, kw := range []int{4 * 31, 4 * 32, 4 * 62, 4*93 + 4} {
			t.Run(fmt.Sprintf("impl=%s/kw=%d", im.name, kw), func(t *testing.T) {
				a := make([]uint64, 2*kw)
				b := make([]uint64, 2*5*kw)
				for i := range a {
					a[i] = ^uint64(0)
				}
				for i := range b {
					b[i] = ^uint64(0)
				}
				got := make([]int32, 5)
				im.row(got, 0, a, 0, kw, 2, b, kw, 5*kw, 2, kw, 5, 1)
				for n := range got {
					assert.Equal(t, int32(64*kw*(1+2+2+4)), got[n], "column %d", n)
				}
			})
		}
	}
}

// naiveMark is the zero-chunk mask by definition.
func naiveMark(mask []uint64, mw int, a []uint64, lda, nrows, nchunks int) {
	for r := 0; r < nrows; r++ {
		for c := 0; c < nchunks; c++ {
			for _, x := range a[r*lda+4*c : r*lda+4*c+4] {
				if x != 0 {
					mask[r*mw+c/64] |= 1 << (c % 64)
				}
			}
		}
	}
}

// TestMarkVsNaive checks every zero-chunk mask path over chunk counts
// around the 64-chunk mask word, sparse and dense rows, strides, unaligned
// starts, and ORing into a mask that already has bits.
func TestMarkVsNaive(t *testing.T) {
	for _, im := range bitImpls {
		t.Run("impl="+im.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			// Rows back to back (offset 0) take the AVX-512 bit stream:
			// batches of 4096 chunks cut into rows (100 rows of 65 chunks
			// span two batches), a tail of < 16 chunks, and the fallback
			// past 4096 chunks a row.
			for _, nc := range []int{0, 1, 3, 4, 16, 17, 63, 64, 65, 130, 4097} {
				for _, nr := range []int{1, 3, 64, 100} {
					if nc > 200 && nr > 3 {
						continue
					}
					for _, d := range []float64{0, 0.05, 0.5, 1} {
						for _, off := range []int{0, 1, 3} {
							lda := 4*nc + off
							a := randWords(r, nr*lda+off+1, d)[off:]
							mw := (nc+63)/64 + 1
							want := randWords(r, nr*mw, 0.1) // bits already there stay
							got := append([]uint64(nil), want...)
							naiveMark(want, mw, a, lda, nr, nc)
							im.mark(got, mw, a, lda, nr, nc)
							require.Equal(t, want, got, "chunks=%d rows=%d density=%v offset=%d", nc, nr, d, off)
						}
					}
				}
			}
		})
	}
}

func TestImplsAndNewKernel(t *testing.T) {
	names := Impls()
	require.NotEmpty(t, names)
	assert.Equal(t, "generic", names[len(names)-1], "the generic path is always last")
	assert.Equal(t, names[0], Path())
	f := CPUFeatures()
	if f.Asm && f.AVX2 {
		assert.Contains(t, names, "avx2")
	}
	if f.Asm && f.VPOPCNTDQ {
		assert.Equal(t, "avx512", names[0])
	}
	if !f.Asm {
		assert.Equal(t, []string{"generic"}, names)
	}
	for _, n := range names {
		k, err := NewKernel(n)
		require.NoError(t, err)
		assert.Equal(t, "cpu/"+n, k.Name())
	}
	_, err := NewKernel("sse9")
	assert.ErrorIs(t, err, ErrImpl)
}

// FuzzRow compares every path's row kernel, vertical kernel and
// zero-chunk mask with the naive loops on arbitrary bits, lengths, row, column and plane counts,
// strides and offsets.
func FuzzRow(f *testing.F) {
	f.Add(uint64(1), uint16(64), uint8(5), uint8(1), uint8(0), uint8(0), uint8(0), uint8(0))
	f.Add(uint64(2), uint16(4), uint8(4), uint8(3), uint8(3), uint8(3), uint8(1), uint8(3))
	f.Add(uint64(3), uint16(127), uint8(1), uint8(0), uint8(0), uint8(7), uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, kw16 uint16, nc8, nr8, ab8, bb8, pad8, off8 uint8) {
		c := rowCase{kw: int(kw16 % 600), ncols: int(nc8 % 40), nrows: int(nr8 % 5), abits: 1 + int(ab8%16), bbits: 1 + int(bb8%16),
			pad: int(pad8 % 9), off: int(off8 % 8)}
		// The kernels' precondition (bmm.Check's overflow rule): every
		// weighted sum fits in int32.
		for float64(64*c.kw)*float64(uint64(1)<<c.abits-1)*float64(uint64(1)<<c.bbits-1) > math.MaxInt32 {
			if c.abits > c.bbits {
				c.abits--
			} else {
				c.bbits--
			}
		}
		r := rand.New(rand.NewPCG(seed, uint64(c.kw)))
		x := c.operands(r, 0.7)
		want := make([]int32, c.outLen(x))
		c.run(naiveRow, x, want)
		nchunks := c.kw / 4
		mw := (nchunks + 63) / 64
		wantMask := make([]uint64, max(1, c.nrows)*mw)
		naiveMark(wantMask, mw, x.a, x.lda, c.nrows, nchunks)
		for _, im := range bitImpls {
			gotMask := make([]uint64, len(wantMask))
			im.mark(gotMask, mw, x.a, x.lda, c.nrows, nchunks)
			if !assert.Equal(t, wantMask, gotMask, "mark impl=%s %+v", im.name, c) {
				return
			}
			got := make([]int32, c.outLen(x))
			c.run(im.row, x, got)
			if !assert.Equal(t, want, got, "impl=%s %+v", im.name, c) {
				return
			}
			// The vertical kernel on the same operands, over the whole
			// column groups, against the Go reference and the naive loop.
			if im.vert == nil || c.ncols < im.vc || c.nrows == 0 {
				continue
			}
			c2 := c
			c2.ncols = c.ncols / im.vc * im.vc
			wantV := make([]int32, c.outLen(x))
			c2.run(naiveRow, x, wantV)
			ref := make([]int32, c.outLen(x))
			vertCase(c, x, im.vc, c.pad, vertGeneric[uint64](im.vc), ref, false)
			if !assert.Equal(t, wantV, ref, "vertGeneric vc=%d %+v", im.vc, c) {
				return
			}
			gotV := make([]int32, c.outLen(x))
			vertCase(c, x, im.vc, c.pad, im.vert, gotV, false)
			if !assert.Equal(t, wantV, gotV, "vert impl=%s %+v", im.name, c) {
				return
			}
			if im.vert32 == nil || c.ncols < im.vc32 {
				continue
			}
			c3 := c
			c3.ncols = c.ncols / im.vc32 * im.vc32
			want32 := make([]int32, c.outLen(x))
			c3.run(naiveRow, x, want32)
			got32 := make([]int32, c.outLen(x))
			vertCase(c, x, im.vc32, c.pad, im.vert32, got32, false)
			if !assert.Equal(t, want32, got32, "vert32 impl=%s %+v", im.name, c) {
				return
			}
		}
	})
}
