//go:build !purego

package cpu

import "unsafe"

// useAggAsm switches the AVX2 aggregation kernel on; tests turn it off to
// compare it with aggRowGeneric.
var useAggAsm = hasAVX2

// aggRowAsm runs aggRowWeightedAVX2 on one row (wt != nil). checkAgg and
// NewAdj have checked that every index is a row of x and that len(x.data)
// is Rows·Stride, the reads the kernels make.
func aggRowAsm(acc []int32, x Codes, idx []int32, wt []uint8, chunk int) {
	_ = acc[x.Stride-1]
	_ = wt[len(idx)-1]
	aggRowWeightedAVX2(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, unsafe.SliceData(idx), unsafe.SliceData(wt), len(idx), chunk)
}

// aggRowsAsm runs aggRowsAVX2 or aggRowsWideAVX2 on rows [v0, v0+rows) of
// a (unweighted), into acc (rows × x.Stride).
// Codes of up to aggByteBits bits are summed as bytes (at least 17 sources
// between flushes); wider ones as uint16 (at least 257).
const aggByteBits = 4

func aggRowsAsm(acc []int32, x Codes, a Adj, v0, rows int) {
	if rows == 0 {
		return
	}
	_ = acc[rows*x.Stride-1]
	_ = a.g.Indptr[v0+rows]
	xmax := 1<<x.Bits - 1
	if x.Bits <= aggByteBits {
		aggRowsAVX2(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, &a.g.Indptr[v0], unsafe.SliceData(a.g.Indices), rows, 255/xmax)
		return
	}
	aggRowsWideAVX2(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, &a.g.Indptr[v0], unsafe.SliceData(a.g.Indices), rows, 65535/xmax)
}
