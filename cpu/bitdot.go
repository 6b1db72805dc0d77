package cpu

import "math/bits"

//go:generate sh -c "cd _asm && go run ./bitdot -out ../bitdot_gen_amd64.s -stubs ../bitdot_gen_amd64.go -pkg cpu"

// bitImpl is one implementation of the inner AND+popcount kernel: for
// nrows rows of A with abits planes and ncols columns of B with bbits
// planes,
//
//	out[r*ldo+n] += Σ_i Σ_j popcount(A_i[r][0:kw] & B_j[n][0:kw]) << (i+j)
//
// where A_i[r] = a[r*lda + i*aps:] and B_j[n] = b[j*bps + n*ldb:] (lda,
// ldb: line strides, aps, bps: plane strides, in words). Each sum must fit
// in int32, as bmm.Check guarantees for the whole product (the assembly
// packs two partial sums into one 64-bit lane while reducing). row takes
// any kw; the assembly paths run whole 256-bit steps and leave a tail of
// kw%4 words (non-default padding only) to the Go loop.
//
// mark is the zero-chunk mask: for r < nrows and c < nchunks, it sets bit
// c of mask[r*mw:] when words [4c, 4c+4) of a[r*lda:] are not all zero.
type bitImpl struct {
	name string
	row  rowFunc
	mark markFunc
	// vert is the vertical short-K kernel over groups of vc columns (see
	// bitdot_vert.go), nil where the path has none.
	vert vertFunc[uint64]
	vc   int
	// vert32 is the same over 32-bit lanes: groups of vc32 columns.
	vert32 vertFunc[uint32]
	vc32   int
}

// rowFunc is an inner AND+popcount kernel (bitImpl.row).
type rowFunc func(out []int32, ldo int, a []uint64, lda, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols, nrows int)

// markFunc is a zero-chunk mask (bitImpl.mark).
type markFunc func(mask []uint64, mw int, a []uint64, lda, nrows, nchunks int)

var implGeneric = &bitImpl{name: "generic", row: popcntRowGeneric, mark: markRowsGeneric}

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

// asmRow wraps an assembly row kernel: it checks the bounds the assembly
// relies on, runs it on the whole 256-bit steps and finishes a tail of
// kw%4 words in Go.
func asmRow(kern func(out *int32, ldo int, a *uint64, lda, aps, abits int, b *uint64, ldb, bps, bbits, kw, ncols, nrows int)) rowFunc {
	return func(out []int32, ldo int, a []uint64, lda, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols, nrows int) {
		if ncols <= 0 || nrows <= 0 || kw <= 0 || abits <= 0 || bbits <= 0 {
			return
		}
		_ = out[(nrows-1)*ldo+ncols-1]
		_ = a[(nrows-1)*lda+(abits-1)*aps+kw-1]
		_ = b[(bbits-1)*bps+(ncols-1)*ldb+kw-1]
		k4 := kw &^ 3
		if k4 > 0 {
			kern(&out[0], ldo, &a[0], lda, aps, abits, &b[0], ldb, bps, bbits, k4, ncols, nrows)
		}
		if k4 < kw {
			popcntRowGeneric(out, ldo, a[k4:], lda, aps, abits, b[k4:], ldb, bps, bbits, kw-k4, ncols, nrows)
		}
	}
}

// asmMark wraps the assembly zero-chunk mask, checking its bounds.
func asmMark(kern func(mask *uint64, mw int, a *uint64, lda, nrows, nchunks int)) markFunc {
	return func(mask []uint64, mw int, a []uint64, lda, nrows, nchunks int) {
		if nrows <= 0 || nchunks <= 0 {
			return
		}
		_ = mask[(nrows-1)*mw+(nchunks-1)/64]
		_ = a[(nrows-1)*lda+nchunks*bitChunkWords-1]
		kern(&mask[0], mw, &a[0], lda, nrows, nchunks)
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
