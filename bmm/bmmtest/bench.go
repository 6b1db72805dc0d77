package bmmtest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// BenchShape is one product of the benchmark suite: A is M×K with ABits,
// B is K×N with BBits; Density is the fraction of non-zero A values.
type BenchShape struct {
	Name         string
	M, K, N      int
	ABits, BBits int
	Density      float64
}

// BenchShapes are the products Benchmark times: a GNN layer's aggregation
// (1-bit adjacency times quantized features), its update (features times
// weights) and a square product, at the bit widths QGTC reports.
var BenchShapes = []BenchShape{
	{"agg", 2048, 2048, 64, 1, 4, 0.01},
	{"agg", 2048, 2048, 64, 1, 8, 0.01},
	{"update", 2048, 512, 64, 4, 4, 1},
	{"update", 2048, 512, 64, 8, 8, 1},
	{"square", 512, 512, 512, 2, 2, 1},
	{"square", 512, 512, 512, 8, 8, 1},
}

// Benchmark times k's MulInt and MulBit (re-quantized to ABits, packed by
// rows, as a layer chains them) on BenchShapes, reporting ops/s as 2·M·N·K
// per second (one multiply and one add per term, as for a float GEMM).
// Call it from a kernel's benchmark: bmmtest.Benchmark(b, kernel).
func Benchmark(b *testing.B, k bmm.Kernel) {
	r := rand.New(rand.NewPCG(DefaultSeed, 99))
	for _, s := range BenchShapes {
		av := randVals(r, s.M*s.K, s.ABits, s.Density)
		bv := randVals(r, s.K*s.N, s.BBits, 1)
		a, err := bittensor.PackRows(av, s.M, s.K, s.ABits)
		if err != nil {
			b.Fatal(err)
		}
		bt, err := bittensor.PackCols(bv, s.K, s.N, s.BBits)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := bmm.Check(a, bt); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("%s/m=%d/k=%d/n=%d/bits=%d.%d/impl=%s", s.Name, s.M, s.K, s.N, s.ABits, s.BBits, k.Name())
		ops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
		dst := make([]int32, s.M*s.N)
		b.Run("MulInt/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := k.MulInt(dst, a, bt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		q, err := bittensor.New(s.M, s.N, s.ABits, bittensor.ByRows, bittensor.DefaultPadding)
		if err != nil {
			b.Fatal(err)
		}
		rq := bmm.Requant{Scale: 1 / float32(bmm.MaxSum(s.K, s.ABits, s.BBits)/float64(uint64(1)<<s.ABits)*0.1)}
		b.Run("MulBit/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := k.MulBit(q, a, bt, nil, rq); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
