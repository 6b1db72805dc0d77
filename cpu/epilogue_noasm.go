//go:build !amd64 || purego

package cpu

import "github.com/qgtc/qgtc/bmm"

var useEpilogueAVX2, useEpilogueAVX512, useEpilogueGFNI = false, false, false

var epRowsNarrow = 8 // unused without assembly; tests set it

func applyRowAsm([]float32, []int32, int, *bmm.Epilogue) bool { return false }

func quantizeRowAsm([]uint32, []float32, bmm.Requant, int) int { return 0 }

func quantizeRowBytesAsm([]uint8, []float32, bmm.Requant, int) int { return 0 }

func bitPlanes8[T codes]([]uint64, []T, int, int, int, int) {
	panic("cpu: no bitPlanes8 without assembly")
}

func transposeTiles(a []uint64) { transposeTilesGeneric(a) }

func applyRowsAsm([]float32, int, []int32, int, int, int, int, *bmm.Epilogue) bool { return false }

func applyQuantizeRowsAsm([]uint8, int, []int32, int, int, int, int, *bmm.Epilogue, bmm.Requant, int) bool {
	return false
}

func applyQuantizeRows32Asm([]uint32, int, []int32, int, int, int, int, *bmm.Epilogue, bmm.Requant, int) bool {
	return false
}
