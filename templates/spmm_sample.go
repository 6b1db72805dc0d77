package templates

import (
	"github.com/klauspost/cpuid/v2"
)

// SampleCSR is ES-SpMM's edge sampling, as a graph transform for the CPU:
// every row keeps at most limit edges, cache-first. Edges whose source lies
// within window/2 rows of the row itself come first: a pull traversal in
// row order has just gathered those sources, so they are cache-resident
// (on graphs whose numbering has locality, as most real ones do). The
// rest of the budget goes to the other edges, evenly strided. Rows with at
// most limit edges are kept whole. With cacheFirst false every row is
// strided evenly, the plain sampling baseline.
//
// The sample numbers its edges by position; orig[p] is the id in g of its
// edge p, for gathering edge features. Every template (backward included)
// runs on it unchanged. scale[v] is
// deg(v)/kept(v): multiplying a Sum over the sample by it gives an unbiased
// estimate of the full Sum; Mean needs no scale. Sampling trades accuracy
// for speed: BenchmarkSampledSpMM measures both.
func SampleCSR(g CSR, limit, window int, cacheFirst bool) (sample CSR, orig []int32, scale []float32) {
	rows := g.Rows()
	indptr := make([]int32, rows+1)
	var idx, ids []int32
	scale = make([]float32, rows)
	near := make([]int32, 0, 64)
	far := make([]int32, 0, 64)
	for v := 0; v < rows; v++ {
		p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
		deg := p1 - p0
		keep := func(p int) {
			idx = append(idx, g.Indices[p])
			ids = append(ids, int32(g.eid(p)))
		}
		switch {
		case limit <= 0 || deg <= limit:
			for p := p0; p < p1; p++ {
				keep(p)
			}
		default:
			near, far = near[:0], far[:0]
			for p := p0; p < p1; p++ {
				if d := int(g.Indices[p]) - v; cacheFirst && d <= window/2 && -d <= window/2 {
					near = append(near, int32(p))
				} else {
					far = append(far, int32(p))
				}
			}
			if len(near) >= limit {
				near = strided(near, limit)
				far = far[:0]
			} else {
				far = strided(far, limit-len(near))
			}
			// Merge the two position lists to keep the row in source order.
			i, j := 0, 0
			for i < len(near) || j < len(far) {
				if j == len(far) || (i < len(near) && near[i] < far[j]) {
					keep(int(near[i]))
					i++
				} else {
					keep(int(far[j]))
					j++
				}
			}
		}
		indptr[v+1] = int32(len(idx))
		scale[v] = 1
		if k := int(indptr[v+1] - indptr[v]); k > 0 {
			scale[v] = float32(deg) / float32(k)
		}
	}
	return CSR{Indptr: indptr, Indices: idx}, ids, scale
}

// strided keeps n of the positions in ps, evenly spaced, in place.
func strided(ps []int32, n int) []int32 {
	if n >= len(ps) {
		return ps
	}
	for i := 0; i < n; i++ {
		ps[i] = ps[i*len(ps)/n]
	}
	return ps[:n]
}

// CacheWindow is the number of f-wide float32 source rows that fit in half
// of one core's L2 cache: the window SampleCSR treats as cache-resident.
func CacheWindow(f int) int {
	l2 := cpuid.CPU.Cache.L2
	if l2 <= 0 {
		l2 = 1 << 20
	}
	return max(1, l2/2/(4*max(f, 1)))
}
