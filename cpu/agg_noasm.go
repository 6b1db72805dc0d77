//go:build !amd64 || purego

package cpu

var useAggAsm = false

func aggRowAsm(acc []int32, x Codes, idx []int32, wt []uint8, chunk int) {
	panic("cpu: no aggregation assembly in this build")
}

func aggRowsAsm(acc []int32, x Codes, a Adj, v0, rows int) {
	panic("cpu: no aggregation assembly in this build")
}
