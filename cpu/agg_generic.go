package cpu

// aggRowGeneric is the reference of the aggregation kernels: acc[j] +=
// x[u][j] for every source u in idx and every byte j of the stride.
func aggRowGeneric(acc []int32, x Codes, idx []int32) {
	acc = acc[:x.Stride]
	for _, u := range idx {
		row := x.data[int(u)*x.Stride : (int(u)+1)*x.Stride]
		for j, c := range row {
			acc[j] += int32(c)
		}
	}
}

// aggRowWeightedGeneric is aggRowGeneric with weights: acc[j] +=
// wt[e]·x[idx[e]][j].
func aggRowWeightedGeneric(acc []int32, x Codes, idx []int32, wt []uint8) {
	acc = acc[:x.Stride]
	wt = wt[:len(idx)]
	for e, u := range idx {
		w := int32(wt[e])
		row := x.data[int(u)*x.Stride : (int(u)+1)*x.Stride]
		for j, c := range row {
			acc[j] += w * int32(c)
		}
	}
}
