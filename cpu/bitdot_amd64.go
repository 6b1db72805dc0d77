//go:build !purego

package cpu

// asmBitImpls are the assembly inner kernels cpuid allows, best first.
func asmBitImpls() []*bitImpl {
	var impls []*bitImpl
	// The AVX-512 path shares the AVX2 reductions and per-chunk mask loop.
	if hasVPOPCNTDQ && hasAVX2 {
		impls = append(impls, implAVX512())
	}
	if hasAVX2 {
		impls = append(impls, implAVX2())
	}
	return impls
}

var (
	rowAVX512 = withRow4(asmRow(popcntRowAVX512), popcntRow4AVX512, 8)
	rowAVX2   = withRow4(asmRow(popcntRowAVX2), popcntRow4AVX2, 4)
)

// withRow4 sends runs of one 256-bit chunk (kw = 4 words: every GNN
// update product with up to 256 features, and the rows of a block-diagonal
// adjacency whose blocks fit one chunk) to row4, which takes ncols in
// multiples of group (the AVX-512 one holds two columns per register), and
// the rest of the columns, or any other shape, to the general kernel.
func withRow4(general rowFunc,
	row4 func(out *int32, ldo int, a *uint64, lda, aps, abits int, b *uint64, ldb, bps, bbits, ncols, nrows int), group int,
) rowFunc {
	return func(out []int32, ldo int, a []uint64, lda, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols, nrows int) {
		ng := ncols / group * group
		if kw != 4 || ng == 0 || nrows <= 0 || abits <= 0 || bbits <= 0 {
			general(out, ldo, a, lda, aps, abits, b, ldb, bps, bbits, kw, ncols, nrows)
			return
		}
		_ = out[(nrows-1)*ldo+ng-1]
		_ = a[(nrows-1)*lda+(abits-1)*aps+3]
		_ = b[(bbits-1)*bps+(ng-1)*ldb+3]
		row4(&out[0], ldo, &a[0], lda, aps, abits, &b[0], ldb, bps, bbits, ng, nrows)
		if ng < ncols {
			general(out[ng:], ldo, a, lda, aps, abits, b[ng*ldb:], ldb, bps, bbits, kw, ncols-ng, nrows)
		}
	}
}
