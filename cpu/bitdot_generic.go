package cpu

import "math/bits"

// popcntLinesGeneric is the reference inner kernel:
//
//	out[v] += popcount(a[0:kw] & b[v*ldb : v*ldb+kw])   for v < nlines
//
// Four lines at a time share each word of a, as in the assembly.
func popcntLinesGeneric(out []uint32, a, b []uint64, ldb, kw, nlines int) {
	if nlines <= 0 || kw <= 0 {
		return
	}
	a = a[:kw]
	out = out[:nlines]
	v := 0
	for ; v+4 <= nlines; v += 4 {
		b0 := b[v*ldb : v*ldb+kw]
		b1 := b[(v+1)*ldb : (v+1)*ldb+kw]
		b2 := b[(v+2)*ldb : (v+2)*ldb+kw]
		b3 := b[(v+3)*ldb : (v+3)*ldb+kw]
		var s0, s1, s2, s3 int
		for w, x := range a {
			s0 += bits.OnesCount64(x & b0[w])
			s1 += bits.OnesCount64(x & b1[w])
			s2 += bits.OnesCount64(x & b2[w])
			s3 += bits.OnesCount64(x & b3[w])
		}
		out[v] += uint32(s0)
		out[v+1] += uint32(s1)
		out[v+2] += uint32(s2)
		out[v+3] += uint32(s3)
	}
	for ; v < nlines; v++ {
		out[v] += uint32(popcount1(a, b[v*ldb:v*ldb+kw]))
	}
}
