package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// BenchmarkEpilogueRow times the fused epilogue of one output row on each
// path, reporting ns per element: applyRow with every epilogue field (the
// zero-point corrected, normalized, biased ReLU of a quantized GCN layer),
// then the 4-bit re-quantizer into uint32 and into bytes.
//
//	go test -run '^$' -bench EpilogueRow ./cpu
func BenchmarkEpilogueRow(b *testing.B) {
	for _, n := range []int{64, 256} {
		r := rand.New(rand.NewPCG(3, 3))
		vec := func() []float32 { return benchVec(r, n) }
		c := benchProducts(r, n)
		ep := &bmm.Epilogue{ColScale: vec(), RowTerm: vec(), ColTerm: vec(), ColConst: vec(), RowScale: vec(), ColBias: vec(), ReLU: true}
		y, q, qb := make([]float32, n), make([]uint32, n), make([]uint8, n)
		rq := bmm.Requant{Scale: 0.7, Offset: 3}
		ops := []struct {
			name string
			run  func()
		}{
			{"applyRow", func() { applyRow(y, c, 1, ep) }},
			{"quantizeRow", func() { quantizeRow(q, y, rq, 4) }},
			{"quantizeRowBytes", func() { quantizeRowBytes(qb, y, rq, 4) }},
		}
		for _, op := range ops {
			for _, impl := range epImpls() {
				b.Run(fmt.Sprintf("op=%s/n=%d/impl=%s", op.name, n, impl), func(b *testing.B) {
					useEpImpl(b, impl)
					applyRow(y, c, 1, ep)
					b.SetBytes(int64(4 * n))
					b.ReportAllocs()
					for b.Loop() {
						op.run()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
				})
			}
		}
	}
}

// BenchmarkPackBitBlock times packing one block of 64 rows of 4-bit codes
// into bit planes, per element, for both packings on each path.
//
//	go test -run '^$' -bench PackBitBlock ./cpu
func BenchmarkPackBitBlock(b *testing.B) {
	const rows, bits = 64, 4
	for _, n := range []int{64, 256} {
		for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			for _, impl := range epImpls() {
				b.Run(fmt.Sprintf("packing=%v/n=%d/impl=%s", packing, n, impl), func(b *testing.B) {
					useEpImpl(b, impl)
					dst, err := bittensor.New(rows, n, bits, packing, bittensor.DefaultPadding)
					if err != nil {
						b.Fatal(err)
					}
					r := rand.New(rand.NewPCG(4, 4))
					q := make([]uint32, rows*n)
					for j := range q {
						q[j] = uint32(r.IntN(1 << bits))
					}
					for b.Loop() {
						packBitBlock(dst, q, 0, rows, n)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*n), "ns/elem")
				})
			}
		}
	}
}

// BenchmarkApplyQuantizeRows times the fused epilogue and 4-bit
// re-quantization of a block of 64 rows into byte codes, per element:
// impl=rows is the loop of applyRow and quantizeRowBytes that the
// aggregations ran per row, impl=block one applyQuantizeRows call (the
// kernel cpuid picks), and block-<kernel> each block kernel forced.
// ep=full has every epilogue field (a quantized linear layer's), ep=agg
// those of a GCN aggregation (no ColConst, no ColBias). Strides are those
// of the aggregation scratch and Codes (16-aligned).
//
//	go test -run '^$' -bench ApplyQuantizeRows ./cpu
func BenchmarkApplyQuantizeRows(b *testing.B) {
	const rows, bits = 64, 4
	for _, n := range []int{5, 10, 16, 64, 256} {
		ld := (n + 15) / 16 * 16
		r := rand.New(rand.NewPCG(5, 5))
		vec := func(k int) []float32 { return benchVec(r, k) }
		c := benchProducts(r, rows*ld)
		full := &bmm.Epilogue{ColScale: vec(n), RowTerm: vec(rows), ColTerm: vec(n), ColConst: vec(n), RowScale: vec(rows), ColBias: vec(n), ReLU: true}
		agg := &bmm.Epilogue{ColScale: full.ColScale, RowTerm: full.RowTerm, ColTerm: full.ColTerm, RowScale: full.RowScale, ReLU: true}
		rq := bmm.Requant{Scale: 0.7, Offset: 3}
		q, y := make([]uint8, rows*ld), make([]float32, n)
		impls := []struct{ name, path string }{{"rows", ""}, {"block", ""}}
		for _, impl := range rowsImpls()[1:] {
			impls = append(impls, struct{ name, path string }{"block-" + impl, impl})
		}
		for _, impl := range impls {
			for _, epc := range []struct {
				name string
				ep   *bmm.Epilogue
			}{{"full", full}, {"agg", agg}} {
				ep := epc.ep
				b.Run(fmt.Sprintf("n=%d/rows=%d/ep=%s/impl=%s", n, rows, epc.name, impl.name), func(b *testing.B) {
					if impl.path != "" {
						useRowsImpl(b, impl.path)
					}
					b.SetBytes(int64(4 * rows * n))
					b.ReportAllocs()
					for b.Loop() {
						if impl.name == "rows" {
							for i := 0; i < rows; i++ {
								applyRow(y, c[i*ld:i*ld+n], i, ep)
								quantizeRowBytes(q[i*ld:i*ld+n], y, rq, bits)
							}
							continue
						}
						applyQuantizeRows(q, ld, c, ld, 0, rows, n, ep, rq, bits)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*n), "ns/elem")
				})
			}
		}
	}
}

// BenchmarkApplyQuantizePackRows times the fused epilogue, 4-bit
// re-quantization and plane packing of a block of 64 rows (AggBit's
// finish), per element: via=u32 through uint32 codes (applyQuantizeRows32
// then packBitBlock), via=bytes through byte codes (applyQuantizePackRows).
//
//	go test -run '^$' -bench ApplyQuantizePackRows ./cpu
func BenchmarkApplyQuantizePackRows(b *testing.B) {
	if !haveAsm || !hasAVX2 {
		b.Skip("the byte path needs the AVX2 plane gather")
	}
	const rows, bits = 64, 4
	for _, n := range []int{64, 256} {
		r := rand.New(rand.NewPCG(6, 6))
		vec := func(k int) []float32 { return benchVec(r, k) }
		c := benchProducts(r, rows*n)
		ep := &bmm.Epilogue{ColScale: vec(n), RowTerm: vec(rows), ColTerm: vec(n), RowScale: vec(rows), ReLU: true}
		rq := bmm.Requant{Scale: 0.7, Offset: 3}
		for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			dst, err := bittensor.New(rows, n, bits, packing, bittensor.DefaultPadding)
			if err != nil {
				b.Fatal(err)
			}
			for _, via := range []string{"u32", "bytes"} {
				b.Run(fmt.Sprintf("n=%d/packing=%v/via=%s", n, packing, via), func(b *testing.B) {
					var buf []uint32
					b.ReportAllocs()
					for b.Loop() {
						if via == "bytes" {
							applyQuantizePackRows(dst, &buf, c, n, 0, rows, n, ep, rq)
							continue
						}
						buf = growSlice(buf, rows*n)
						applyQuantizeRows32(buf, n, c, n, 0, rows, n, ep, rq, bits)
						packBitBlock(dst, buf, 0, rows, n)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*n), "ns/elem")
				})
			}
		}
	}
}

// benchVec is k standard normal values, a benchmark's epilogue vector.
func benchVec(r *rand.Rand, k int) []float32 {
	v := make([]float32, k)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	return v
}

// benchProducts is k bit products in [−2000, 2000].
func benchProducts(r *rand.Rand, k int) []int32 {
	c := make([]int32, k)
	for j := range c {
		c[j] = int32(r.IntN(4001) - 2000)
	}
	return c
}
