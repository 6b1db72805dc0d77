package templates

// The reference loops of the sparse templates' inner kernels. The assembly
// versions (spmm_amd64.s) implement the same sums; tests compare them on
// widths around every vector width.

// gatherSumGeneric adds, for every j, row idx[j] of x (row stride ldx) to
// acc: acc[k] += Σ_j x[idx[j]·ldx + k] for k < len(acc).
func gatherSumGeneric(acc, x []float32, idx []int32, ldx int) {
	w := len(acc)
	for _, u := range idx {
		xs := x[int(u)*ldx : int(u)*ldx+w]
		for k, v := range xs {
			acc[k] += v
		}
	}
}

// gatherAxpyGeneric is gatherSumGeneric with a weight per row:
// acc[k] += Σ_j wt[j]·x[idx[j]·ldx + k].
func gatherAxpyGeneric(acc, x []float32, idx []int32, wt []float32, ldx int) {
	w := len(acc)
	for j, u := range idx {
		xs := x[int(u)*ldx : int(u)*ldx+w]
		c := wt[j]
		for k, v := range xs {
			acc[k] += c * v
		}
	}
}

// dotGeneric is Σ_k a[k]·b[k] over len(a).
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	k := 0
	for ; k+4 <= len(a); k += 4 {
		s0 += a[k] * b[k]
		s1 += a[k+1] * b[k+1]
		s2 += a[k+2] * b[k+2]
		s3 += a[k+3] * b[k+3]
	}
	for ; k < len(a); k++ {
		s0 += a[k] * b[k]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotRowsGeneric is dst[j] = Σ_k x[idx[j]·ldx + k]·y[k] over len(y).
func dotRowsGeneric(dst, x []float32, idx []int32, ldx int, y []float32) {
	dst = dst[:len(idx)]
	for j, u := range idx {
		dst[j] = dotGeneric(y, x[int(u)*ldx:int(u)*ldx+len(y)])
	}
}

// gatherArgMaxGeneric is the copy_u max (or min) reduction: for each j in
// order, where row idx[j] of x is strictly greater (smaller) than acc, acc
// takes it and arg the edge id, eids[j] or eid0+j when eids is nil.
func gatherArgMaxGeneric(acc []float32, arg []int32, x []float32, idx, eids []int32, eid0, ldx int, isMin bool) {
	w := len(acc)
	arg = arg[:w]
	for j, u := range idx {
		e := int32(eid0 + j)
		if eids != nil {
			e = eids[j]
		}
		xs := x[int(u)*ldx : int(u)*ldx+w]
		for k, v := range xs {
			if (!isMin && v > acc[k]) || (isMin && v < acc[k]) {
				acc[k] = v
				arg[k] = e
			}
		}
	}
}

// addTo is dst[k] += src[k] over len(dst).
func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for k, v := range src {
		dst[k] += v
	}
}
