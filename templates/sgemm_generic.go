package templates

// sgemmKernelGeneric is the reference microkernel: c[i*ldc+j] +=
// alpha·Σ_p a[p*sgMR+i]·b[p*sgNR+j] over a full sgMR×sgNR tile, from packed
// panels (see packA and packB).
func sgemmKernelGeneric(k int, a, b, c []float32, ldc int, alpha float32) {
	var acc [sgMR][sgNR]float32
	a = a[:k*sgMR]
	b = b[:k*sgNR]
	for p := 0; p < k; p++ {
		bp := (*[sgNR]float32)(b[p*sgNR:])
		ap := (*[sgMR]float32)(a[p*sgMR:])
		for i := range ap {
			ai := ap[i]
			r := &acc[i]
			for j := range bp {
				r[j] += ai * bp[j]
			}
		}
	}
	for i := range acc {
		row := c[i*ldc : i*ldc+sgNR]
		for j := range row {
			row[j] += alpha * acc[i][j]
		}
	}
}

// sgemmKernelGenericDirect is sgemmKernelGeneric with A read in place:
// c[i*ldc+j] += alpha·Σ_p a[i*lda+p]·b[p*sgNR+j] for a full tile.
func sgemmKernelGenericDirect(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32) {
	var acc [sgMR][sgNR]float32
	b = b[:k*sgNR]
	for i := range acc {
		row := a[i*lda : i*lda+k]
		r := &acc[i]
		for p, ai := range row {
			bp := (*[sgNR]float32)(b[p*sgNR:])
			for j := range bp {
				r[j] += ai * bp[j]
			}
		}
	}
	for i := range acc {
		row := c[i*ldc : i*ldc+sgNR]
		for j := range row {
			row[j] += alpha * acc[i][j]
		}
	}
}
