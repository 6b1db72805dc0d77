package cpu

// aggRowsGeneric is the reference of the aggregation kernels: for each of
// rows rows v = v0+r of a, acc[r*x.Stride+j] += w·x[u][j] for every entry
// (u, w) of row v (w = 1 without weights) and every byte j of the stride.
func aggRowsGeneric(acc []int32, x Codes, a Adj, v0, rows int) {
	for r := 0; r < rows; r++ {
		out := acc[r*x.Stride : (r+1)*x.Stride]
		for p := a.g.Indptr[v0+r]; p < a.g.Indptr[v0+r+1]; p++ {
			w := int32(1)
			if a.w != nil {
				w = int32(a.w[p])
			}
			u := int(a.g.Indices[p])
			for j, c := range x.data[u*x.Stride : (u+1)*x.Stride] {
				out[j] += w * int32(c)
			}
		}
	}
}
