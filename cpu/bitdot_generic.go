package cpu

import "math/bits"

// popcntRowGeneric is the reference inner kernel:
//
//	out[r*ldo+n] += Σ_i Σ_j popcount(a[r*lda+i*aps:][:kw] & b[j*bps+n*ldb:][:kw]) << (i+j)
//
// for r < nrows, n < ncols, i < abits, j < bbits.
func popcntRowGeneric(out []int32, ldo int, a []uint64, lda, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols, nrows int) {
	for r := 0; r < nrows; r++ {
		popcntRow1(out[r*ldo:], a[r*lda:], aps, abits, b, ldb, bps, bbits, kw, ncols)
	}
}

// popcntRow1 is one row of popcntRowGeneric. Four columns at a time share
// each word of A, as in the assembly.
func popcntRow1(out []int32, a []uint64, aps, abits int, b []uint64, ldb, bps, bbits, kw, ncols int) {
	if ncols <= 0 || kw <= 0 {
		return
	}
	out = out[:ncols]
	n := 0
	for ; n+4 <= ncols; n += 4 {
		var s0, s1, s2, s3 int
		for i := 0; i < abits; i++ {
			ai := a[i*aps : i*aps+kw]
			for j := 0; j < bbits; j++ {
				o := j*bps + n*ldb
				b0 := b[o : o+kw]
				b1 := b[o+ldb : o+ldb+kw]
				b2 := b[o+2*ldb : o+2*ldb+kw]
				b3 := b[o+3*ldb : o+3*ldb+kw]
				var p0, p1, p2, p3 int
				for w, x := range ai {
					p0 += bits.OnesCount64(x & b0[w])
					p1 += bits.OnesCount64(x & b1[w])
					p2 += bits.OnesCount64(x & b2[w])
					p3 += bits.OnesCount64(x & b3[w])
				}
				sh := uint(i + j)
				s0 += p0 << sh
				s1 += p1 << sh
				s2 += p2 << sh
				s3 += p3 << sh
			}
		}
		out[n] += int32(s0)
		out[n+1] += int32(s1)
		out[n+2] += int32(s2)
		out[n+3] += int32(s3)
	}
	for ; n < ncols; n++ {
		s := 0
		for i := 0; i < abits; i++ {
			for j := 0; j < bbits; j++ {
				o := j*bps + n*ldb
				s += popcount1(a[i*aps:i*aps+kw], b[o:o+kw]) << uint(i+j)
			}
		}
		out[n] += int32(s)
	}
}

// markRowsGeneric is the reference zero-chunk mask: for r < nrows and
// c < nchunks, bit c of mask[r*mw:] is ORed with (a[r*lda+4c:][:4] != 0).
func markRowsGeneric(mask []uint64, mw int, a []uint64, lda, nrows, nchunks int) {
	for r := 0; r < nrows; r++ {
		line := a[r*lda : r*lda+nchunks*bitChunkWords]
		m := mask[r*mw : r*mw+mw]
		for c := 0; c < nchunks; c++ {
			w := (*[bitChunkWords]uint64)(line[c*bitChunkWords:])
			or := w[0] | w[1] | w[2] | w[3]
			// Branch-free: sparse rows would mispredict a test per chunk.
			m[c/64] |= (or | -or) >> 63 << (c % 64)
		}
	}
}
