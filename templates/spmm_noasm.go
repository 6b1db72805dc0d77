//go:build !amd64 || purego

package templates

var useSpmmAVX2, useSpmmAVX512 = false, false

func gatherSum(acc, x []float32, idx []int32, ldx int) { gatherSumGeneric(acc, x, idx, ldx) }

func gatherAxpy(acc, x []float32, idx []int32, wt []float32, ldx int) {
	gatherAxpyGeneric(acc, x, idx, wt, ldx)
}

func sdot(a, b []float32) float32 { return dotGeneric(a, b) }

func dotRows(dst, x []float32, idx []int32, ldx int, y []float32) {
	dotRowsGeneric(dst, x, idx, ldx, y)
}

func gatherArgMax(acc []float32, arg []int32, x []float32, idx, eids []int32, eid0, ldx int, isMin bool) {
	gatherArgMaxGeneric(acc, arg, x, idx, eids, eid0, ldx, isMin)
}

func expInPlace(xs []float32) {
	for i, x := range xs {
		xs[i] = expf(x)
	}
}
