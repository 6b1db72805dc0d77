package nn

// gemm computes C = alpha·op(A)·op(B) + beta·C (row-major, op = transpose
// when the flag is set), the signature of cpu.Sgemm.
func gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	parallelFor(m, n*k, func(lo, hi int) {
		row := make([]float32, n)
		for i := lo; i < hi; i++ {
			clear(row)
			for p := range k {
				var av float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if av == 0 {
					continue
				}
				if transB {
					for j := range n {
						row[j] += av * b[j*ldb+p]
					}
				} else {
					br := b[p*ldb : p*ldb+n]
					for j, bv := range br {
						row[j] += av * bv
					}
				}
			}
			cr := c[i*ldc : i*ldc+n]
			for j := range cr {
				if beta == 0 {
					cr[j] = alpha * row[j]
				} else {
					cr[j] = alpha*row[j] + beta*cr[j]
				}
			}
		}
	})
}
