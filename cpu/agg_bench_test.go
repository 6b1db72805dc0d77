package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/qgtc/qgtc/templates"
)

// BenchmarkAgg compares, on one random graph (2,000 rows of degree ~10,
// the size of a Cluster-GCN batch), the code aggregation over byte codes
// (unweighted and weighted) with the float32 template SpMM (copy_u, sum)
// that the full-precision path runs: the same sums over the same CSR.
//
//	go test -run '^$' -bench BenchmarkAgg ./cpu
func BenchmarkAgg(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, deg = 2000, 10
	for _, d := range []int{10, 64, 256} {
		g := CSR{Indptr: make([]int32, n+1)}
		var w []uint8
		for v := 0; v < n; v++ {
			for e := 0; e < deg; e++ {
				g.Indices = append(g.Indices, int32(r.IntN(n)))
				w = append(w, uint8(1+r.IntN(15)))
			}
			g.Indptr[v+1] = int32(len(g.Indices))
		}
		vals := make([]int32, n*d)
		xf := make([]float32, n*d)
		for i := range vals {
			vals[i] = int32(r.IntN(16))
			xf[i] = float32(vals[i])
		}
		x, err := CodesFromInts(vals, n, d, 4)
		if err != nil {
			b.Fatal(err)
		}
		ones, err := NewAdj(g, nil, 0, n)
		if err != nil {
			b.Fatal(err)
		}
		weighted, err := NewAdj(g, w, 4, n)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]int32, n*d)
		out := make([]float32, n*d)
		// Process CPU time (all threads) moves less than wall time on a
		// shared machine; both are reported.
		report := func(b *testing.B, cpu0 time.Duration, ok0 bool) {
			edges := float64(len(g.Indices)) * float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/edges, "ns/edge")
			if cpu1, ok1 := processCPU(); ok0 && ok1 {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/edges, "cpu-ns/edge")
			}
		}
		for _, c := range []struct {
			name string
			run  func() error
		}{
			{"codes-u8", func() error { return AggInt(dst, ones, x) }},
			{"codes-u8-weighted", func() error { return AggInt(dst, weighted, x) }},
			{"fp32-spmm", func() error { return templates.SpMM(out, g, templates.CopyU, templates.Sum, xf, nil, nil, d, nil, nil) }},
		} {
			b.Run(fmt.Sprintf("d=%d/impl=%s", d, c.name), func(b *testing.B) {
				cpu0, ok0 := processCPU()
				for i := 0; i < b.N; i++ {
					if err := c.run(); err != nil {
						b.Fatal(err)
					}
				}
				report(b, cpu0, ok0)
			})
		}
	}
}
