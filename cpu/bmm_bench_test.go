package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/templates"
)

// Benchmarks report, besides ns/op:
//
//	GOPS             logical ops/s ÷ 1e9: 2·M·K·N / t
//	bitGOPS          GOPS × a_bits × b_bits (1-bit AND+popcount ops)
//	bitMAC/cyc/core  M·K·N·a_bits·b_bits / (t · clock · GOMAXPROCS)
//	bitMAC/cpucyc    the same per cycle of process CPU time (getrusage):
//	                 per-core efficiency that other programs on the
//	                 machine do not dilute
//	bitMAC/bestcyc/core  the same over the fastest single run's wall time
//	                 (the run least disturbed by other programs)
//	x_fp32           the float32 GEMM's time for the same logical shape ÷ t
//	x_fp32cpu        the same in process CPU time (mean per run of each)
//
// The clock comes from ClockHz (a calibration loop), not a constant.

// cpuMeter measures the process CPU time of a benchmark's loop.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	c, ok := processCPU()
	return cpuMeter{c, ok}
}

// perOp is the mean CPU seconds per iteration since start, or 0.
func (m cpuMeter) perOp(b *testing.B) float64 {
	c, ok := processCPU()
	if !m.ok || !ok || c <= m.start || b.N == 0 {
		return 0
	}
	return (c - m.start).Seconds() / float64(b.N)
}

func reportBit(b *testing.B, m, k, n, abits, bbits int, cpuSec float64) {
	sec := b.Elapsed().Seconds() / float64(b.N)
	logical := 2 * float64(m) * float64(k) * float64(n)
	b.ReportMetric(logical/sec/1e9, "GOPS")
	b.ReportMetric(logical*float64(abits*bbits)/sec/1e9, "bitGOPS")
	cores := min(runtime.GOMAXPROCS(0), runtime.NumCPU())
	b.ReportMetric(logical/2*float64(abits*bbits)/sec/ClockHz()/float64(cores), "bitMAC/cyc/core")
	if cpuSec > 0 {
		b.ReportMetric(logical/2*float64(abits*bbits)/cpuSec/ClockHz(), "bitMAC/cpucyc")
	}
}

// BenchmarkRow is the inner kernel on L1-resident lines: one line of A
// against 16 columns of B of bbits planes (at most 32 KiB), one goroutine.
func BenchmarkRow(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct{ kw, bbits int }{{4, 1}, {4, 4}, {16, 1}, {64, 1}, {64, 4}} {
		const nc = 16
		a := randWords(r, c.kw, 1)
		bw := randWords(r, c.bbits*nc*c.kw, 1)
		out := make([]int32, nc)
		for _, im := range bitImpls {
			b.Run(fmt.Sprintf("kw=%d/bbits=%d/impl=%s", c.kw, c.bbits, im.name), func(b *testing.B) {
				b.SetBytes(int64(8 * c.kw * (c.bbits*nc + 1)))
				meter := startCPU()
				for b.Loop() {
					im.row(out, 0, a, 0, c.kw, 1, bw, c.kw, nc*c.kw, c.bbits, c.kw, nc, 1)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(64*c.kw*nc*c.bbits)/sec/ClockHz(), "bitMAC/cyc/core")
				if cpuSec := meter.perOp(b); cpuSec > 0 {
					b.ReportMetric(float64(64*c.kw*nc*c.bbits)/cpuSec/ClockHz(), "bitMAC/cpucyc")
				}
			})
		}
	}
}

// benchOperands caches packed operands and float copies across sub-benchmarks.
type benchOperands struct {
	a, b   *bittensor.Tensor
	af, bf []float32
}

var benchCache sync.Map

func operands(name string, m, k, n, abits, bbits int, aVals func(r *rand.Rand) []int32) *benchOperands {
	key := fmt.Sprintf("%s/%d/%d/%d/%d/%d", name, m, k, n, abits, bbits)
	if v, ok := benchCache.Load(key); ok {
		return v.(*benchOperands)
	}
	r := rand.New(rand.NewPCG(uint64(m), uint64(k*n)))
	av := aVals(r)
	bv := randInts(r, k*n, bbits, 1)
	a, err := bittensor.PackRows(av, m, k, abits)
	if err != nil {
		panic(err)
	}
	b, err := bittensor.PackCols(bv, k, n, bbits)
	if err != nil {
		panic(err)
	}
	o := &benchOperands{a: a, b: b, af: toF32(av), bf: toF32(bv)}
	benchCache.Store(key, o)
	return o
}

func toF32(v []int32) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// fp32Seconds times Sgemm on the same logical shape: the best wall time
// of a few runs and their mean process CPU time (0 where unknown).
func fp32Seconds(o *benchOperands, m, k, n int) (wall, cpu float64) {
	c := make([]float32, m*n)
	best := 0.0
	c0, ok0 := processCPU()
	deadline := time.Now().Add(300 * time.Millisecond)
	reps := 0
	for ; reps < 3 || time.Now().Before(deadline); reps++ {
		start := time.Now()
		templates.Sgemm(false, false, m, n, k, 1, o.af, k, o.bf, n, 0, c, n)
		if s := time.Since(start).Seconds(); best == 0 || s < best {
			best = s
		}
		if reps >= 50 {
			reps++
			break
		}
	}
	if c1, ok1 := processCPU(); ok0 && ok1 && c1 > c0 {
		cpu = (c1 - c0).Seconds() / float64(reps)
	}
	return best, cpu
}

func benchMM2Int(b *testing.B, o *benchOperands, m, k, n int, withFP32 bool) {
	var fp32, fp32CPU float64
	if withFP32 {
		fp32, fp32CPU = fp32Seconds(o, m, k, n)
	}
	for _, kv := range benchKernels(b) {
		kern := kv.k
		if kern.Path() == "generic" && m*k*n > 1<<28 {
			continue // minutes per run; the inner-kernel benchmark covers it
		}
		b.Run("impl="+kv.name, func(b *testing.B) {
			dst := make([]int32, m*n)
			b.ReportAllocs()
			meter := startCPU()
			best := time.Duration(1 << 62)
			for b.Loop() {
				t0 := time.Now()
				if err := kern.MulInt(dst, o.a, o.b); err != nil {
					b.Fatal(err)
				}
				best = min(best, time.Since(t0))
			}
			cpuSec := meter.perOp(b)
			reportBit(b, m, k, n, o.a.Bits(), o.b.Bits(), cpuSec)
			cores := min(runtime.GOMAXPROCS(0), runtime.NumCPU())
			b.ReportMetric(float64(m)*float64(k)*float64(n)*float64(o.a.Bits()*o.b.Bits())/best.Seconds()/ClockHz()/float64(cores), "bitMAC/bestcyc/core")
			if withFP32 {
				b.ReportMetric(fp32/(b.Elapsed().Seconds()/float64(b.N)), "x_fp32")
				if fp32CPU > 0 && cpuSec > 0 {
					b.ReportMetric(fp32CPU/cpuSec, "x_fp32cpu")
				}
			}
		})
	}
	if withFP32 {
		b.Run("impl=fp32", func(b *testing.B) {
			c := make([]float32, m*n)
			meter := startCPU()
			for b.Loop() {
				templates.Sgemm(false, false, m, n, k, 1, o.af, k, o.bf, n, 0, c, n)
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(2*float64(m)*float64(k)*float64(n)/sec/1e9, "GFLOPS")
			if cpuSec := meter.perOp(b); cpuSec > 0 {
				b.ReportMetric(2*float64(m)*float64(k)*float64(n)/cpuSec/1e9, "GFLOPS/cpu")
			}
		})
	}
}

// benchKernel is a kernel under a benchmark name: each path as chosen by
// shape ("avx512": the vertical kernel with 32-bit lanes wherever it can),
// and, where a path has the vertical kernel, forced onto its 64-bit lanes
// ("avx512-v64") and onto the row kernels ("avx512-rows"), so that one
// run compares them side by side. QGTC_BENCH_ROWS=0 drops the forced
// variants.
type benchKernel struct {
	name string
	k    *Kernel
}

func benchKernels(b *testing.B) []benchKernel {
	var ks []benchKernel
	for _, k := range kernels(b) {
		ks = append(ks, benchKernel{k.Path(), k})
		if k.impl.vert != nil && os.Getenv("QGTC_BENCH_ROWS") != "0" {
			ks = append(ks, benchKernel{k.Path() + "-v64", &Kernel{impl: k.impl, vert: vert64}},
				benchKernel{k.Path() + "-rows", &Kernel{impl: k.impl, vert: vertOff}})
		}
	}
	return ks
}

// BenchmarkMM2Int is the aggregation grid: A (N×N, 1 bit, random dense
// adjacency bits) times X (N×D, s bits), next to a float32 GEMM.
func BenchmarkMM2Int(b *testing.B) {
	for _, nn := range []int{1024, 2048, 4096} {
		for _, d := range []int{16, 32, 64} {
			for s := 1; s <= 8; s++ {
				b.Run(fmt.Sprintf("n=%d/d=%d/s=%d", nn, d, s), func(b *testing.B) {
					o := operands("dense", nn, nn, d, 1, s, func(r *rand.Rand) []int32 { return randInts(r, nn*nn, 1, 0.5) })
					benchMM2Int(b, o, nn, nn, d, true)
				})
			}
		}
	}
}

// BenchmarkMM2IntUpdate is the layer update X (4096×256, s bits) × W (256×64, t bits).
func BenchmarkMM2IntUpdate(b *testing.B) {
	for _, s := range []int{1, 2, 4, 8} {
		for _, t := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("s=%d/t=%d", s, t), func(b *testing.B) {
				o := operands("update", 4096, 256, 64, s, t, func(r *rand.Rand) []int32 { return randInts(r, 4096*256, s, 1) })
				benchMM2Int(b, o, 4096, 256, 64, true)
			})
		}
	}
}

// BenchmarkMM2IntBlockDiag shows zero-tile jumping: the same N×N × N×64
// product with a dense random A and with a block-diagonal A (batched
// subgraphs of 256 nodes, 32% dense inside the blocks: 2% overall).
func BenchmarkMM2IntBlockDiag(b *testing.B) {
	const nn, d, s = 4096, 64, 4
	for _, shape := range []string{"dense", "blockdiag"} {
		b.Run(fmt.Sprintf("n=%d/d=%d/s=%d/a=%s", nn, d, s, shape), func(b *testing.B) {
			o := operands(shape, nn, nn, d, 1, s, func(r *rand.Rand) []int32 {
				if shape == "dense" {
					return randInts(r, nn*nn, 1, 0.5)
				}
				return blockDiag(r, nn, 256, 0.32)
			})
			benchMM2Int(b, o, nn, nn, d, false)
		})
	}
}

// BenchmarkMulBit is the fused re-quantizing product on a grid shape.
func BenchmarkMulBit(b *testing.B) {
	const nn, d, s = 4096, 64, 4
	o := operands("dense", nn, nn, d, 1, s, func(r *rand.Rand) []int32 { return randInts(r, nn*nn, 1, 0.5) })
	for _, kern := range kernels(b) {
		if kern.Path() == "generic" {
			continue
		}
		b.Run("impl="+kern.Path(), func(b *testing.B) {
			dst, err := bittensor.New(nn, d, 4, bittensor.ByRows, bittensor.DefaultPadding)
			if err != nil {
				b.Fatal(err)
			}
			rq := bmm.Requant{Scale: 1.0 / 256, Offset: 0}
			meter := startCPU()
			for b.Loop() {
				if err := kern.MulBit(dst, o.a, o.b, nil, rq); err != nil {
					b.Fatal(err)
				}
			}
			reportBit(b, nn, nn, d, 1, s, meter.perOp(b))
		})
	}
}

// BenchmarkMark is the zero-chunk mask of one task's 64 rows of one plane
// of A, per path (chunks: 256-bit chunks per row), and the per-chunk AVX2
// loop ("avx2-loop") that the bit-stream marks replace from 4 chunks a row.
func BenchmarkMark(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, nc := range []int{1, 4, 16, 64} {
		const rows = 64
		a := randWords(r, rows*nc*bitChunkWords, 0.5)
		mw := (nc + 63) / 64
		mask := make([]uint64, rows*mw)
		type markImpl struct {
			name string
			mark markFunc
		}
		var impls []markImpl
		for _, im := range bitImpls {
			impls = append(impls, markImpl{im.name, im.mark})
		}
		if markLoopAVX2 != nil && hasAVX2 {
			impls = append(impls, markImpl{"avx2-loop", markLoopAVX2})
		}
		for _, im := range impls {
			b.Run(fmt.Sprintf("chunks=%d/impl=%s", nc, im.name), func(b *testing.B) {
				b.SetBytes(int64(8 * len(a)))
				meter := startCPU()
				for b.Loop() {
					im.mark(mask, mw, a, nc*bitChunkWords, rows, nc)
				}
				if cpuSec := meter.perOp(b); cpuSec > 0 {
					b.ReportMetric(cpuSec*1e9, "cpu-ns/op")
				}
			})
		}
	}
}

// BenchmarkMM2IntNarrow is a GNN's output-layer update, H (M×K, 4 bits) ×
// W (K×n classes, 4 bits), where n is not a whole number of vertical
// column groups: the columns past the last whole group as one zero-padded
// vertical group (pad=group, the default up to vertPadWords words of K)
// against the row kernels (pad=rows), side by side; ns/op per path.
func BenchmarkMM2IntNarrow(b *testing.B) {
	const m = 16384
	for _, k := range []int{64, 256, 512, 1024} {
		for _, n := range []int{5, 10, 40} {
			o := operands("narrow", m, k, n, 4, 4, func(r *rand.Rand) []int32 { return randInts(r, m*k, 4, 1) })
			for _, kern := range kernels(b) {
				if kern.Path() == "generic" {
					continue
				}
				for _, pad := range []string{"group", "rows"} {
					b.Run(fmt.Sprintf("k=%d/n=%d/impl=%s/pad=%s", k, n, kern.Path(), pad), func(b *testing.B) {
						defer func(w int) { vertPadWords = w }(vertPadWords)
						vertPadWords = 0
						if pad == "group" {
							vertPadWords = 1 << 30
						}
						dst := make([]int32, m*n)
						meter := startCPU()
						for b.Loop() {
							if err := kern.MulInt(dst, o.a, o.b); err != nil {
								b.Fatal(err)
							}
						}
						reportBit(b, m, k, n, 4, 4, meter.perOp(b))
					})
				}
			}
		}
	}
}
