package templates

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSgemm reports GFLOP/s of the float32 GEMM.
func BenchmarkSgemm(b *testing.B) {
	for _, sh := range [][3]int{{512, 512, 512}, {1024, 1024, 1024}, {4096, 64, 4096}, {4096, 64, 256}} {
		m, n, k := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(2, 2))
		a, bb, c := randF32(r, m*k), randF32(r, k*n), make([]float32, m*n)
		for name, kern := range sgemmImpls() {
			if name == "generic" && m*n*k > 1<<27 {
				continue // seconds per run
			}
			b.Run(fmt.Sprintf("m=%d/n=%d/k=%d/impl=%s", m, n, k, name), func(b *testing.B) {
				withSgemmKernel(b, kern)
				c0, ok0 := processCPU()
				for b.Loop() {
					Sgemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*float64(m)*float64(n)*float64(k)/sec/1e9, "GFLOPS")
				if c1, ok1 := processCPU(); ok0 && ok1 && c1 > c0 {
					cpuSec := (c1 - c0).Seconds() / float64(b.N)
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)/cpuSec/1e9, "GFLOPS/cpu")
				}
			})
		}
	}
}
