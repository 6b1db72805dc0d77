//go:build !purego

package cpu

import "unsafe"

// useAggAsm switches the AVX2 aggregation kernel on; tests turn it off to
// compare it with aggRowGeneric.
var useAggAsm = hasAVX2

// aggRowAsm runs aggRowAVX2 or aggRowWeightedAVX2. checkAgg has checked
// that every index is a row of x and that len(x.data) is Rows·Stride, the
// reads the kernels make.
func aggRowAsm(acc []int32, x Codes, idx []int32, wt []uint8, chunk int) {
	_ = acc[x.Stride-1]
	if wt != nil {
		_ = wt[len(idx)-1]
		aggRowWeightedAVX2(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, unsafe.SliceData(idx), unsafe.SliceData(wt), len(idx), chunk)
		return
	}
	aggRowAVX2(unsafe.SliceData(acc), unsafe.SliceData(x.data), x.Stride, unsafe.SliceData(idx), len(idx), chunk)
}
