//go:build !purego

package templates

import "github.com/klauspost/cpuid/v2"

// useSpmmAVX2 switches the templates' AVX2+FMA inner loops on; tests turn it
// off to compare them with the generic ones.
var useSpmmAVX2 = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)

// useSpmmAVX512 switches on the AVX-512 gather-sum, which holds a
// 256-column chunk of a row in registers.
var useSpmmAVX512 = useSpmmAVX2 && cpuid.CPU.Supports(cpuid.AVX512F)

// spmmGatherSumAVX2 is gatherSumGeneric over w columns, w a multiple of 8.
//
//go:noescape
func spmmGatherSumAVX2(acc, x *float32, idx *int32, n, ldx, w int)

// spmmGatherSumAVX512 is gatherSumGeneric over w columns, w a multiple of 16.
//
//go:noescape
func spmmGatherSumAVX512(acc, x *float32, idx *int32, n, ldx, w int)

// spmmGatherAxpyAVX512 is gatherAxpyGeneric over w columns, w a multiple of 16.
//
//go:noescape
func spmmGatherAxpyAVX512(acc, x *float32, idx *int32, wt *float32, n, ldx, w int)

// spmmGatherAxpyAVX2 is gatherAxpyGeneric over w columns, w a multiple of 8.
//
//go:noescape
func spmmGatherAxpyAVX2(acc, x *float32, idx *int32, wt *float32, n, ldx, w int)

// spmmDotAVX2 is dotGeneric over n values, n a multiple of 8.
//
//go:noescape
func spmmDotAVX2(a, b *float32, n int) float32

// spmmDotRowsAVX2 is dotRowsGeneric over w columns, w a multiple of 8.
//
//go:noescape
func spmmDotRowsAVX2(dst, x *float32, idx *int32, n, ldx int, y *float32, w int)

// spmmGatherMaxAVX2 and spmmGatherMinAVX2 are gatherArgMaxGeneric over w
// columns, w a multiple of 8.
//
//go:noescape
func spmmGatherMaxAVX2(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)

//go:noescape
func spmmGatherMinAVX2(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)

// spmmGatherMaxAVX512 and spmmGatherMinAVX512 are gatherArgMaxGeneric over
// w columns, w a multiple of 16.
//
//go:noescape
func spmmGatherMaxAVX512(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)

//go:noescape
func spmmGatherMinAVX512(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)

// spmmExpAVX2 is expf in place over n values (n a multiple of 8, x ≤ 0).
//
//go:noescape
func spmmExpAVX2(x *float32, n int)

// checkGather panics, as a slice expression would, when a gathered row
// reaches past x: the assembly does not check bounds.
func checkGather(x []float32, idx []int32, ldx, w int) {
	if len(x) < w {
		panic(errGatherRange)
	}
	lim := uint(len(x) - w)
	for _, u := range idx {
		if uint(u)*uint(ldx) > lim || u < 0 {
			panic(errGatherRange)
		}
	}
}

func gatherSum(acc, x []float32, idx []int32, ldx int) {
	w := len(acc)
	if !useSpmmAVX2 || w < 8 || len(idx) == 0 {
		gatherSumGeneric(acc, x, idx, ldx)
		return
	}
	checkGather(x, idx, ldx, w)
	w8 := w &^ 7
	switch w16 := w &^ 15; {
	case useSpmmAVX512 && w16 > 0:
		spmmGatherSumAVX512(&acc[0], &x[0], &idx[0], len(idx), ldx, w16)
		if w16 < w8 {
			spmmGatherSumAVX2(&acc[w16], &x[w16], &idx[0], len(idx), ldx, 8)
		}
	default:
		spmmGatherSumAVX2(&acc[0], &x[0], &idx[0], len(idx), ldx, w8)
	}
	if w8 < w {
		gatherSumGeneric(acc[w8:], x[w8:], idx, ldx)
	}
}

func gatherAxpy(acc, x []float32, idx []int32, wt []float32, ldx int) {
	w := len(acc)
	if !useSpmmAVX2 || w < 8 || len(idx) == 0 {
		gatherAxpyGeneric(acc, x, idx, wt, ldx)
		return
	}
	checkGather(x, idx, ldx, w)
	wt = wt[:len(idx)]
	w8 := w &^ 7
	switch w16 := w &^ 15; {
	case useSpmmAVX512 && w16 > 0:
		spmmGatherAxpyAVX512(&acc[0], &x[0], &idx[0], &wt[0], len(idx), ldx, w16)
		if w16 < w8 {
			spmmGatherAxpyAVX2(&acc[w16], &x[w16], &idx[0], &wt[0], len(idx), ldx, 8)
		}
	default:
		spmmGatherAxpyAVX2(&acc[0], &x[0], &idx[0], &wt[0], len(idx), ldx, w8)
	}
	if w8 < w {
		gatherAxpyGeneric(acc[w8:], x[w8:], idx, wt, ldx)
	}
}

func sdot(a, b []float32) float32 {
	n := len(a)
	if !useSpmmAVX2 || n < 8 {
		return dotGeneric(a, b)
	}
	b = b[:n]
	n8 := n &^ 7
	s := spmmDotAVX2(&a[0], &b[0], n8)
	if n8 < n {
		s += dotGeneric(a[n8:], b[n8:])
	}
	return s
}

func dotRows(dst, x []float32, idx []int32, ldx int, y []float32) {
	w := len(y)
	if !useSpmmAVX2 || w < 8 || len(idx) == 0 {
		dotRowsGeneric(dst, x, idx, ldx, y)
		return
	}
	checkGather(x, idx, ldx, w)
	dst = dst[:len(idx)]
	w8 := w &^ 7
	spmmDotRowsAVX2(&dst[0], &x[0], &idx[0], len(idx), ldx, &y[0], w8)
	if w8 < w {
		for j, u := range idx {
			dst[j] += dotGeneric(y[w8:], x[int(u)*ldx+w8:])
		}
	}
}

func gatherArgMax(acc []float32, arg []int32, x []float32, idx, eids []int32, eid0, ldx int, isMin bool) {
	w := len(acc)
	if !useSpmmAVX2 || w < 8 || len(idx) == 0 {
		gatherArgMaxGeneric(acc, arg, x, idx, eids, eid0, ldx, isMin)
		return
	}
	checkGather(x, idx, ldx, w)
	arg = arg[:w]
	var ep *int32
	if eids != nil {
		ep = &eids[:len(idx)][0]
	}
	w8, done := w&^7, 0
	if w16 := w &^ 15; useSpmmAVX512 && w16 > 0 {
		if isMin {
			spmmGatherMinAVX512(&acc[0], &arg[0], &x[0], &idx[0], ep, eid0, len(idx), ldx, w16)
		} else {
			spmmGatherMaxAVX512(&acc[0], &arg[0], &x[0], &idx[0], ep, eid0, len(idx), ldx, w16)
		}
		done = w16
	}
	if done < w8 {
		if isMin {
			spmmGatherMinAVX2(&acc[done], &arg[done], &x[done], &idx[0], ep, eid0, len(idx), ldx, w8-done)
		} else {
			spmmGatherMaxAVX2(&acc[done], &arg[done], &x[done], &idx[0], ep, eid0, len(idx), ldx, w8-done)
		}
	}
	if w8 < w {
		gatherArgMaxGeneric(acc[w8:], arg[w8:], x[w8:], idx, eids, eid0, ldx, isMin)
	}
}

// expInPlace sets xs[i] = e^xs[i] for xs ≤ 0 (softmax arguments; below
// −87 the vector lanes give 0). When cap(xs) allows, it rounds the length
// up to a multiple of 8 and clobbers those few values past len(xs): the
// short rows of real graphs then need no scalar tail.
func expInPlace(xs []float32) {
	n := len(xs)
	if n == 0 {
		return
	}
	n8 := 0
	if useSpmmAVX2 {
		if up := (n + 7) &^ 7; cap(xs) >= up {
			spmmExpAVX2(&xs[:up][0], up)
			return
		}
		n8 = n &^ 7
		if n8 > 0 {
			spmmExpAVX2(&xs[0], n8)
		}
	}
	for i := n8; i < n; i++ {
		xs[i] = expf(xs[i])
	}
}
