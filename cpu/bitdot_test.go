package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naiveLines is the definition, one word at a time.
func naiveLines(out []uint32, a, b []uint64, ldb, kw, nlines int) {
	for v := 0; v < nlines; v++ {
		out[v] += uint32(popcount1(a[:kw], b[v*ldb:v*ldb+kw]))
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

// TestLinesVsGeneric checks every inner-kernel path against the naive loop
// over word counts around each vector width (4 words = 256 bits, 8 = 512,
// 31·4 = the AVX2 byte-counter flush), line counts around the 4-line
// blocking, strides and unaligned starts.
func TestLinesVsGeneric(t *testing.T) {
	kws := []int{0, 1, 3, 4, 5, 7, 8, 9, 12, 16, 63, 64, 65, 120, 124, 128, 132, 252, 256, 257}
	nls := []int{0, 1, 3, 4, 5, 8, 13}
	for _, im := range bitImpls {
		t.Run("impl="+im.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for _, kw := range kws {
				for _, nl := range nls {
					for _, shift := range []int{0, 1, 3} {
						ldb := kw + shift
						a := randWords(r, kw+7, 1)[shift:]
						b := randWords(r, max(1, nl)*ldb+7, 1)[shift:]
						want := make([]uint32, nl+1)
						for i := range want {
							want[i] = uint32(i * 1000) // lines add to what is there
						}
						got := append([]uint32(nil), want...)
						naiveLines(want, a, b, ldb, kw, nl)
						im.lines(got, a, b, ldb, kw, nl)
						require.Equal(t, want, got, "kw=%d nlines=%d ldb=%d offset=%d", kw, nl, ldb, shift)
					}
				}
			}
		})
	}
}

// TestLinesAllOnes drives the AVX2 byte counters to their limit: every
// byte gains 8 per step for 31 steps (248 <= 255) before each flush.
func TestLinesAllOnes(t *testing.T) {
	for _, im := range bitImpls {
		for _, kw := range []int{4 * 31, 4 * 32, 4 * 62, 4*93 + 4} {
			t.Run(fmt.Sprintf("impl=%s/kw=%d", im.name, kw), func(t *testing.T) {
				a := make([]uint64, kw)
				b := make([]uint64, 5*kw)
				for i := range a {
					a[i] = ^uint64(0)
				}
				for i := range b {
					b[i] = ^uint64(0)
				}
				got := make([]uint32, 5)
				im.lines(got, a, b, kw, kw, 5)
				for v := range got {
					assert.Equal(t, uint32(64*kw), got[v], "line %d", v)
				}
			})
		}
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

// FuzzLines compares every assembly path with the generic loop on
// arbitrary bits, lengths, line counts and offsets.
func FuzzLines(f *testing.F) {
	f.Add(uint64(1), uint16(64), uint8(5), uint8(0), uint8(0))
	f.Add(uint64(2), uint16(4), uint8(4), uint8(1), uint8(3))
	f.Add(uint64(3), uint16(127), uint8(1), uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, kw16 uint16, nl8, pad8, off8 uint8) {
		kw, nl, pad, off := int(kw16%600), int(nl8%16), int(pad8%9), int(off8%8)
		r := rand.New(rand.NewPCG(seed, uint64(kw)))
		ldb := kw + pad
		a := randWords(r, kw+off, 0.7)[off:]
		b := randWords(r, max(1, nl)*ldb+off, 0.7)[off:]
		want := make([]uint32, nl)
		popcntLinesGeneric(want, a, b, ldb, kw, nl)
		for _, im := range bitImpls {
			got := make([]uint32, nl)
			im.lines(got, a, b, ldb, kw, nl)
			if !assert.Equal(t, want, got, "impl=%s kw=%d nlines=%d ldb=%d off=%d", im.name, kw, nl, ldb, off) {
				return
			}
		}
	})
}
