package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// vertCase runs a vertical kernel on a rowCase's operands: B's first
// ngroups·vc columns are transposed with wstride = ngroups·vc + extra
// columns per word (a kernel must not touch those), K is the whole line.
func vertCase[T lane](c rowCase, x rowArgs, vc, extra int, f vertFunc[T], out []int32, set bool) {
	ng := c.ncols / vc
	ws := ng*vc + extra
	bt := make([]T, lanesPerWord[T]()*c.bbits*c.kw*ws)
	for i := range bt {
		bt[i] = 0x5555 // never read: only columns < ng·vc count
	}
	transposeB(bt, x.b, c.bbits, x.bps, x.ldb, c.kw, ng*vc, ws)
	pairs := appendVertPairs(nil, c.abits, c.bbits, x.aps, c.kw*ws)
	f(out, x.ldo, x.a, x.lda, pairs, bt, ws, c.kw, ng, c.nrows, set)
}

// TestVertVsNaive checks the vertical kernels (assembly tiles and their
// remainders, the Go reference) against the naive loop: word counts
// around the AVX2 flush (31), group counts around each tile (1, 2, 4, 8
// groups and odd ones), row counts around the row tiles (4, 8), plane
// pairs with one and several pairs per diagonal.
func TestVertVsNaive(t *testing.T) {
	var cases []rowCase
	for _, kw := range []int{1, 3, 4, 15, 16, 30, 31, 32, 33, 64, 65} {
		for _, nc := range []int{4, 8, 12, 16, 24, 32, 40, 48, 64, 72} {
			for _, ab := range [][2]int{{1, 1}, {1, 3}, {3, 2}, {4, 4}} {
				for _, nr := range []int{1, 3, 4, 8, 9, 13} {
					cases = append(cases, rowCase{kw, nc, nr, ab[0], ab[1], (kw + nc) % 3, nr % 2})
				}
			}
		}
	}
	type impl struct {
		name string
		vc   int
		f    vertFunc[uint64]
		f32  vertFunc[uint32]
	}
	impls := []impl{{"generic/vc=8", 8, vertGeneric[uint64](8), nil}, {"generic/vc=4", 4, vertGeneric[uint64](4), nil},
		{"generic32/vc=16", 16, nil, vertGeneric[uint32](16)}, {"generic32/vc=8", 8, nil, vertGeneric[uint32](8)}}
	for _, im := range bitImpls {
		if im.vert != nil {
			impls = append(impls, impl{im.name, im.vc, im.vert, nil})
		}
		if im.vert32 != nil {
			impls = append(impls, impl{im.name + "/lanes32", im.vc32, nil, im.vert32})
		}
	}
	for _, im := range impls {
		t.Run("impl="+im.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			for _, c := range cases {
				if c.ncols < im.vc {
					continue
				}
				x := c.operands(r, 1)
				want := make([]int32, c.outLen(x))
				for i := range want {
					want[i] = int32(i * 1000) // the kernel adds to what is there
				}
				got := append([]int32(nil), want...)
				nv := c.ncols / im.vc * im.vc
				c2 := c
				c2.ncols = nv
				// With set, the outputs are replaced: even cases start
				// from a tile that holds garbage where the product goes.
				set := (c.kw+c.nrows)%2 == 0
				if set {
					for r := 0; r < c.nrows; r++ {
						clear(want[r*x.ldo : r*x.ldo+nv])
					}
				}
				c2.run(naiveRow, x, want)
				if im.f != nil {
					vertCase(c, x, im.vc, c.pad, im.f, got, set)
				} else {
					vertCase(c, x, im.vc, c.pad, im.f32, got, set)
				}
				require.Equal(t, want, got, "%+v set=%v", c, set)
			}
		})
	}
}

// TestVertAllOnes drives the AVX2 byte counters to their limit (8 per
// word, 31 words) and the sums to their largest weights.
func TestVertAllOnes(t *testing.T) {
	for _, im := range bitImpls {
		if im.vert == nil {
			continue
		}
		for _, kw := range []int{15, 16, 31, 32, 62, 200} {
			for _, ab := range [][2]int{{1, 1}, {1, 8}, {8, 8}} {
				c := rowCase{kw, 16, 5, ab[0], ab[1], 0, 0}
				if float64(64*kw)*float64(int(1)<<c.abits-1)*float64(int(1)<<c.bbits-1) > math.MaxInt32 {
					continue
				}
				t.Run(fmt.Sprintf("impl=%s/kw=%d/bits=%dx%d", im.name, kw, ab[0], ab[1]), func(t *testing.T) {
					x := c.operands(rand.New(rand.NewPCG(1, 1)), 1)
					for i := range x.a {
						x.a[i] = math.MaxUint64
					}
					for i := range x.b {
						x.b[i] = math.MaxUint64
					}
					want := make([]int32, c.outLen(x))
					got := make([]int32, c.outLen(x))
					c.run(naiveRow, x, want)
					vertCase(c, x, im.vc, 0, im.vert, got, false)
					require.Equal(t, want, got)
					if im.vert32 != nil {
						got32 := make([]int32, c.outLen(x))
						vertCase(c, x, im.vc32, 0, im.vert32, got32, false)
						require.Equal(t, want, got32, "32-bit lanes")
					}
				})
			}
		}
	}
}

// TestConformanceVert runs the conformance suite with each assembly path
// forced onto the vertical kernel (the columns past the last whole group
// padded into one more group, or left to the row kernels) and onto the row
// kernels.
func TestConformanceVert(t *testing.T) {
	for _, im := range bitImpls {
		if im.vert == nil {
			continue
		}
		for _, mode := range []struct {
			name string
			m    vertMode
			pad  int
		}{
			{"vert", vertAuto, vertPadWords}, {"vert32", vert32, vertPadWords}, {"vert64", vert64, vertPadWords},
			{"vert-nopad", vertAuto, 0}, {"vert64-padall", vert64, 1 << 30}, {"rows", vertOff, vertPadWords},
		} {
			t.Run(im.name+"/"+mode.name, func(t *testing.T) {
				defer func(w int) { vertPadWords = w }(vertPadWords)
				vertPadWords = mode.pad
				bmmtest.Conformance(t, &Kernel{impl: im, vert: mode.m})
			})
		}
	}
}
