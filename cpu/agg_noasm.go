//go:build !amd64 || purego

package cpu

var useAggAsm = false

func aggRowAsm(acc []int32, x Codes, idx []int32) { aggRowGeneric(acc, x, idx) }
