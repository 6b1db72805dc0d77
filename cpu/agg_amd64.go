//go:build !purego

package cpu

import "unsafe"

// useAggAVX2 switches the AVX2 aggregation kernels on; tests turn it off to
// compare them with aggRowsGeneric.
var useAggAVX2 = hasAVX2

// aggByteBits is the widest code the unweighted kernel sums as bytes (at
// least 17 sources between flushes); wider ones go as uint16 (at least 257).
const aggByteBits = 4

// aggRowsAsm runs rows [v0, v0+rows) of a into acc (rows × x.Stride) on the
// kernel for a's weights and x's width, with its flush interval. checkAgg
// and NewAdj have checked that every index is a row of x and that
// len(x.data) is Rows·Stride, the reads the kernels make.
func aggRowsAsm(acc []int32, x Codes, a Adj, v0, rows int) {
	if rows == 0 || len(a.g.Indices) == 0 {
		return
	}
	_ = acc[rows*x.Stride-1]
	_ = a.g.Indptr[v0+rows]
	xmax := 1<<x.Bits - 1
	kern, chunk := aggRowsAVX2, 255/xmax
	var wt *uint8
	switch {
	case a.w != nil:
		kern, chunk, wt = aggRowsWeightedAVX2, 65535/(xmax*int(max(a.wmax, 1))), unsafe.SliceData(a.w)
	case x.Bits > aggByteBits:
		kern, chunk = aggRowsWideAVX2, 65535/xmax
	}
	kern(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, &a.g.Indptr[v0], unsafe.SliceData(a.g.Indices), wt, rows, chunk)
}
