//go:build !amd64 || purego

package cpu

var useAggAVX2 = false

func aggRowsAsm(acc []int32, x Codes, a Adj, v0, rows int) {
	panic("cpu: no aggregation assembly in this build")
}
