package cpu

import "math/bits"

//go:generate sh -c "cd _asm && go run ./bitdot -out ../bitdot_amd64.s -stubs ../bitdot_amd64.go -pkg cpu"

// bitImpl is one implementation of the inner AND+popcount kernel:
//
//	out[v] += popcount(a[0:kw] & b[v*ldb : v*ldb+kw])   for v < nlines
//
// lines takes any kw; the assembly paths handle whole 256-bit steps and
// leave a tail of kw%4 words (non-default padding only) to the Go loop.
type bitImpl struct {
	name  string
	lines func(out []uint32, a, b []uint64, ldb, kw, nlines int)
}

var implGeneric = &bitImpl{name: "generic", lines: popcntLinesGeneric}

// bitImpls lists the kernels this CPU can run, best first: the assembly
// ones cpuid allows, then the generic one.
var bitImpls = append(asmBitImpls(), implGeneric)

// Impls names the bit-kernel paths usable on this CPU, best first: some of
// "avx512" (AVX-512 VPOPCNTDQ), "avx2" (vpshufb nibble popcount) and
// "generic" (math/bits.OnesCount64, always there).
func Impls() []string {
	names := make([]string, len(bitImpls))
	for i, im := range bitImpls {
		names[i] = im.name
	}
	return names
}

// Path names the bit-kernel path the default kernel uses.
func Path() string { return bitImpls[0].name }

func findImpl(name string) *bitImpl {
	if name == "" {
		return bitImpls[0]
	}
	for _, im := range bitImpls {
		if im.name == name {
			return im
		}
	}
	return nil
}

// asmLines wraps an assembly kernel: it checks the bounds the assembly
// relies on, runs it on the whole 256-bit steps and finishes a tail of
// kw%4 words in Go.
func asmLines(kern func(out *uint32, a, b *uint64, ldb, kw, nlines int)) func(out []uint32, a, b []uint64, ldb, kw, nlines int) {
	return func(out []uint32, a, b []uint64, ldb, kw, nlines int) {
		if nlines <= 0 || kw <= 0 {
			return
		}
		_ = out[nlines-1]
		_ = a[kw-1]
		_ = b[(nlines-1)*ldb+kw-1]
		if k4 := kw &^ 3; k4 > 0 {
			kern(&out[0], &a[0], &b[0], ldb, k4, nlines)
		}
		if kw&3 != 0 {
			k4 := kw &^ 3
			popcntLinesGeneric(out, a[k4:kw], b[k4:], ldb, kw-k4, nlines)
		}
	}
}

// popcount1 is the scalar popcount of a & b over len(a) words.
func popcount1(a, b []uint64) int {
	b = b[:len(a)]
	s := 0
	for w, x := range a {
		s += bits.OnesCount64(x & b[w])
	}
	return s
}
