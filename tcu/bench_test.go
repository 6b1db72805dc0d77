package tcu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// randomBits returns a rows×cols tensor whose bits are uniformly random
// (density 1/2), padding kept zero, written word by word.
func randomBits(r *rand.Rand, rows, cols, bits int, packing bittensor.Packing) *bittensor.Tensor {
	t, err := bittensor.New(rows, cols, bits, packing, bittensor.DefaultPadding)
	if err != nil {
		panic(err)
	}
	k := t.K()
	for p := 0; p < bits; p++ {
		for l := 0; l < t.Lines(); l++ {
			line := t.Line(p, l)
			for w := range line {
				v := r.Uint64()
				if rem := k - 64*w; rem < 64 {
					if rem <= 0 {
						v = 0
					} else {
						v &= 1<<rem - 1
					}
				}
				line[w] = v
			}
		}
	}
	return t
}

// benchOne times as[i]·bs[i] and reports logical ops/s (2·M·K·N per
// product), bit-ops/s (times a·b) and the share of the wgmma b1 limit.
func benchOne(b *testing.B, k *Kernel, as, bs []*bittensor.Tensor, o BenchOptions) BenchResult {
	var res BenchResult
	var err error
	for i := 0; i < b.N; i++ {
		res, err = k.Bench(as, bs, o)
		require.NoError(b, err)
	}
	ops := 0.0
	for i := range as {
		ops += 2 * float64(as[i].Rows()) * float64(as[i].Cols()) * float64(bs[i].Cols())
	}
	bitops := ops * float64(as[0].Bits()*bs[0].Bits())
	sec := res.Time.Seconds()
	b.ReportMetric(res.Time.Seconds()*1e6, "us/launch")
	b.ReportMetric(ops/sec/1e12, "Tops/s")
	b.ReportMetric(bitops/sec/1e15, "Pbitops/s")
	b.ReportMetric(100*bitops/sec/WGMMALimit, "%limit")
	b.ReportMetric(res.NonZero, "visited")
	// Zero-tile jumping skips work: the rate of the bit products actually
	// executed is the one to hold against the hardware limit.
	b.ReportMetric(100*bitops*res.NonZero/sec/WGMMALimit, "%limit-exec")
	b.Logf("config: %s", res.Config)
	return res
}

// benchRequant maps K-long products of random 0/1 bits (density 1/2) by
// uniform s-bit values onto outBits-bit codes spread over ±4 standard
// deviations around their mean, so every plane of a MulBit result has
// both zeros and ones.
func benchRequant(k, s, outBits int) bmm.Requant {
	top := float64(int(1)<<s - 1)
	ex, ex2 := top/2, top*(2*top+1)/6 // E[x], E[x²] of x uniform in 0..top
	mean := float64(k) * ex / 2
	sd := math.Sqrt(float64(k) * (ex2/2 - ex*ex/4))
	scale := math.Ldexp(1, outBits) / (8 * sd)
	return bmm.Requant{Scale: float32(scale), Offset: float32(math.Ldexp(1, outBits-1) - mean*scale)}
}

// benchBit times the MulBit twin of a product whose int32 result ints
// (from the same kernel's MulInt bench) is known, and checks its codes
// bit for bit against ints re-quantized on the host.
func benchBit(b *testing.B, k *Kernel, a, x *bittensor.Tensor, ints []int32, o BenchOptions) {
	o.Requant = benchRequant(a.Cols(), x.Bits(), o.OutBits)
	res := benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, o)
	got, n := res.Bits[0], x.Cols()
	for i, c := range ints {
		if w := o.Requant.Quantize(float32(c), o.OutBits); got.At(i/n, i%n) != w {
			b.Fatalf("MulBit (%s) at (%d, %d): code %d, want %d (product %d)", res.Config, i/n, i%n, got.At(i/n, i%n), w, c)
		}
	}
}

// outs are the MulBit outputs the benchmarks time beside MulInt: name
// (b: packed by rows, the next product's A; c: by columns, its B) and bits.
var outs = []struct {
	name string
	bits int
	cols bool
}{{"b1", 1, false}, {"b4", 4, false}, {"b8", 8, false}, {"c4", 4, true}}

// benchPaths is paths with "out32": the auto kernel keeping int32 outputs
// on the device, beside auto, which stores uint16 where every product
// fits (config "o161").
func benchPaths(b *testing.B) map[string]*Kernel {
	ks := paths(b)
	ks["out32"] = ks["auto"].withTuning(tuning{out16: -1})
	return ks
}

// BenchmarkAggregation: A is an N×N 1-bit adjacency (random bits), X an
// N×D s-bit feature matrix: the aggregation step of a GNN layer.
func BenchmarkAggregation(b *testing.B) {
	ks := benchPaths(b)
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1024, 2048, 4096} {
		a := randomBits(r, n, n, 1, bittensor.ByRows)
		for _, d := range []int{16, 32, 64} {
			for s := 1; s <= 8; s++ {
				x := randomBits(r, n, d, s, bittensor.ByCols)
				for _, impl := range []string{"auto", "out32", PathMMA, PathWGMMA} {
					k, ok := ks[impl]
					if !ok {
						continue
					}
					var res BenchResult
					b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=%s", n, d, s, impl), func(b *testing.B) {
						res = benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 15, Inner: 20})
					})
					if impl != "auto" || res.Out == nil {
						continue
					}
					// MulBit beside it: the re-quantized output a GNN layer uses.
					for _, out := range outs[:3] {
						b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/out=%s/impl=%s", n, d, s, out.name, impl), func(b *testing.B) {
							benchBit(b, k, a, x, res.Out[0], BenchOptions{Repeats: 15, Inner: 20, OutBits: out.bits, OutCols: out.cols})
						})
					}
				}
			}
		}
	}
}

// largeN, largeD are the compute-bound shape: an N×N 1-bit adjacency by N×D
// s-bit features, for s in largeBits.
const largeN, largeD = 16384, 256

var largeBits = []int{1, 4}

// largeOperands draws the large shape's operands: A, then X for each of
// largeBits in turn.
func largeOperands() (a *bittensor.Tensor, xs []*bittensor.Tensor) {
	r := rand.New(rand.NewPCG(2, 2))
	a = randomBits(r, largeN, largeN, 1, bittensor.ByRows)
	for _, s := range largeBits {
		xs = append(xs, randomBits(r, largeN, largeD, s, bittensor.ByCols))
	}
	return a, xs
}

// BenchmarkLarge: compute-bound shapes, N = 16384, D = 256.
func BenchmarkLarge(b *testing.B) {
	ks := benchPaths(b)
	const n, d = largeN, largeD
	a, xs := largeOperands()
	for i, s := range largeBits {
		x := xs[i]
		for _, impl := range []string{"auto", "out32", PathMMA, PathWGMMA} {
			k, ok := ks[impl]
			if !ok {
				continue
			}
			var res BenchResult
			b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=%s", n, d, s, impl), func(b *testing.B) {
				res = benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 9, Inner: 5})
			})
			if impl != "auto" || res.Out == nil {
				continue
			}
			// MulBit beside it.
			for _, out := range outs {
				b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/out=%s/impl=%s", n, d, s, out.name, impl), func(b *testing.B) {
					benchBit(b, k, a, x, res.Out[0], BenchOptions{Repeats: 9, Inner: 5, OutBits: out.bits, OutCols: out.cols})
				})
			}
		}
	}
}

// BenchmarkCall times whole MulInt calls on the large shapes (operands
// uploaded, zero-tile lists built, the launch, the result copied back and,
// for uint16 outputs, widened), auto against out32: what a caller of the
// Go API waits for, where the kernel benchmarks time the launch alone.
func BenchmarkCall(b *testing.B) {
	ks := benchPaths(b)
	a, xs := largeOperands()
	dst := make([]int32, largeN*largeD)
	for i, s := range largeBits {
		for _, impl := range []string{"auto", "out32"} {
			k := ks[impl]
			b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=%s", largeN, largeD, s, impl), func(b *testing.B) {
				require.NoError(b, k.MulInt(dst, a, xs[i])) // compile and warm the pool outside the timing
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					require.NoError(b, k.MulInt(dst, a, xs[i]))
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "us/call")
			})
		}
	}
}

// blockBatch draws the operands of a block-diagonal benchmark point: X
// (n×d, s bits) for the whole adjacency, and the n/bs independent block
// products of the batched launch (a bs×bs block and its bs×d features).
func blockBatch(r *rand.Rand, n, bs, d, s int) (x *bittensor.Tensor, as, xs []*bittensor.Tensor) {
	x = randomBits(r, n, d, s, bittensor.ByCols)
	for q := 0; q < n/bs; q++ {
		as = append(as, blockDiag(r, bs, bs, 1))
		xs = append(xs, randomBits(r, bs, d, s, bittensor.ByCols))
	}
	return x, as, xs
}

// BenchmarkBlockDiag: the subgraph batches of QGTC. A block-diagonal N×N
// adjacency with blocks of bs nodes, run whole with zero-tile jumping
// (ztj), and as N/bs independent products in one launch (batched). Ops are
// counted on the dense N×N shape for ztj and on the blocks for batched.
func BenchmarkBlockDiag(b *testing.B) {
	ks := benchPaths(b)
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct{ n, bs, d int }{{4096, 256, 64}, {16384, 512, 64}, {16384, 1024, 256}} {
		a := blockDiag(r, c.n, c.bs, 1)
		for _, s := range []int{1, 4} {
			x, as, xs := blockBatch(r, c.n, c.bs, c.d, s)
			for _, impl := range []string{"auto", "out32", PathMMA, PathWGMMA} {
				k, ok := ks[impl]
				if !ok {
					continue
				}
				b.Run(fmt.Sprintf("N=%d/bs=%d/D=%d/s=%d/mode=ztj/impl=%s", c.n, c.bs, c.d, s, impl), func(b *testing.B) {
					benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 15, Inner: 20})
				})
				b.Run(fmt.Sprintf("N=%d/bs=%d/D=%d/s=%d/mode=batched/impl=%s", c.n, c.bs, c.d, s, impl), func(b *testing.B) {
					benchOne(b, k, as, xs, BenchOptions{Repeats: 15, Inner: 20})
				})
			}
		}
	}
}

// BenchmarkTune sweeps the wgmma pipeline (k-steps per stage, stages, N
// tile) on the large shapes and the latency-bound N=4096, D=64 points, to
// choose chooseConfig's defaults; "default" is what it picks.
func BenchmarkTune(b *testing.B) {
	k := gpuKernel(b)
	if ok, why := k.WGMMA(); !ok {
		b.Skipf("wgmma off: %s", why)
	}
	r := rand.New(rand.NewPCG(2, 2))
	type variant struct {
		name string
		t    tuning
	}
	run := func(n, d int, ss []int, vs []variant, o BenchOptions) {
		a := randomBits(r, n, n, 1, bittensor.ByRows)
		for _, s := range ss {
			x := randomBits(r, n, d, s, bittensor.ByCols)
			for _, v := range vs {
				b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/tune=%s", n, d, s, v.name), func(b *testing.B) {
					benchOne(b, k.withTuning(v.t), []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, o)
				})
			}
		}
	}
	run(16384, 256, []int{1, 4}, []variant{
		{"default", tuning{}}, {"ks2", tuning{ks: 2}}, {"ks3", tuning{ks: 3}}, {"ks4s3", tuning{ks: 4, stages: 3}},
		{"ks6s3", tuning{ks: 6, stages: 3}}, {"wg1", tuning{wgs: 1}}, {"wg1ks4s2", tuning{wgs: 1, ks: 4, stages: 2}},
		{"epi0", tuning{epi: -1}},
		// The producer warpgroup (bmm_wgmma.cu WS): release lag 1 or 2,
		// with 4 stages of 4 k-steps, 9 of 2, 6 of 3.
		{"ws1", tuning{ws: 1}}, {"ws2", tuning{ws: 2}},
		{"ws1ks2", tuning{ws: 1, ks: 2}}, {"ws2ks2", tuning{ws: 2, ks: 2}}, {"ws1ks3", tuning{ws: 1, ks: 3}}, {"ws2ks3", tuning{ws: 2, ks: 3}},
		{"nows", tuning{ws: -1}},
		// The output stored evict-first (l2, the default of 256-column
		// tiles) or not; the last stages multiplied by one warpgroup at a
		// time (tail).
		{"l2off", tuning{l2: -1}}, {"notail", tuning{tail: -1}}, {"notaill2off", tuning{tail: -1, l2: -1}}, {"tail1", tuning{tail: 1}}, {"tail2", tuning{tail: 2}}, {"tail3", tuning{tail: 3}},
		{"tail4", tuning{tail: 4}}, {"ks2tail4", tuning{ks: 2, ws: 1, tail: 4}}, {"ks2tail8", tuning{ks: 2, ws: 1, tail: 8}},
		{"tail3epi0", tuning{tail: 3, epi: -1}}, {"tail3te", tuning{tail: 3, tailepi: 1}},
		{"tail3tel2off", tuning{tail: 3, tailepi: 1, l2: -1}}, {"tail3l2off", tuning{tail: 3, l2: -1}},
		// int32 outputs on the device where the default stores uint16 (s=1).
		{"out32", tuning{out16: -1}}, {"out32notail", tuning{out16: -1, tail: -1}},
	}, BenchOptions{Repeats: 9, Inner: 5})
	// Phase times (TIMING lines, summarized by tune.sh's timing step), and
	// fewer row tiles of the same shape (a half and a quarter wave): what
	// a block costs when fewer share the L2 and the HBM.
	run(16384, 256, []int{1, 4}, []variant{{"timing", tuning{timing: 1}}, {"timingepi0", tuning{timing: 1, epi: -1}},
		{"timingbn128", tuning{timing: 1, bn: 128}}, {"timingws1", tuning{timing: 1, ws: 1}}, {"timingws2", tuning{timing: 1, ws: 2}},
		{"timingws1ks2", tuning{timing: 1, ws: 1, ks: 2}}, {"timingws2ks2", tuning{timing: 1, ws: 2, ks: 2}}, {"timingnows", tuning{timing: 1, ws: -1}},
		{"timingl2off", tuning{timing: 1, l2: -1}}, {"timingtail2", tuning{timing: 1, tail: 2}}, {"timingtail4", tuning{timing: 1, tail: 4}},
		{"timingtail3", tuning{timing: 1, tail: 3}}, {"timingtail3te", tuning{timing: 1, tail: 3, tailepi: 1}},
		{"timingout32", tuning{timing: 1, out16: -1}}},
		BenchOptions{Repeats: 3, Inner: 5})
	// MulBit phase times: the same shape re-quantized to 1 and 8 bits.
	a1 := randomBits(r, 16384, 16384, 1, bittensor.ByRows)
	x1 := randomBits(r, 16384, 256, 1, bittensor.ByCols)
	for _, bits := range []int{1, 8} {
		b.Run(fmt.Sprintf("N=16384/D=256/s=1/tune=timingb%d", bits), func(b *testing.B) {
			benchOne(b, k.withTuning(tuning{timing: 1}), []*bittensor.Tensor{a1}, []*bittensor.Tensor{x1},
				BenchOptions{Repeats: 3, Inner: 5, OutBits: bits, Requant: benchRequant(16384, 1, bits)})
		})
	}
	// MulBit (1-bit output) with and without the producer warp, and its
	// phase times.
	for _, v := range []variant{{"b1", tuning{}}, {"b1nows", tuning{ws: -1}}, {"b1ws1", tuning{ws: 1}}, {"b1ws2", tuning{ws: 2}},
		{"b1ws1ks2", tuning{ws: 1, ks: 2}}, {"b1ws2ks2", tuning{ws: 2, ks: 2}},
		{"timingb1ws1", tuning{timing: 1, ws: 1}}, {"timingb1ws2", tuning{timing: 1, ws: 2}},
	} {
		b.Run(fmt.Sprintf("N=16384/D=256/s=1/tune=%s", v.name), func(b *testing.B) {
			benchOne(b, k.withTuning(v.t), []*bittensor.Tensor{a1}, []*bittensor.Tensor{x1},
				BenchOptions{Repeats: 9, Inner: 5, OutBits: 1, Requant: benchRequant(16384, 1, 1)})
		})
	}
	// 4- and 8-bit MulBit codes (by rows) and 4-bit by columns, with and
	// without the producer warpgroup.
	for _, v := range []variant{{"", tuning{}}, {"ws1", tuning{ws: 1}}} {
		for _, o := range []struct {
			name string
			bits int
			cols bool
		}{{"b4", 4, false}, {"b8", 8, false}, {"c4", 4, true}} {
			b.Run(fmt.Sprintf("N=16384/D=256/s=1/tune=%s%s", o.name, v.name), func(b *testing.B) {
				benchOne(b, k.withTuning(v.t), []*bittensor.Tensor{a1}, []*bittensor.Tensor{x1},
					BenchOptions{Repeats: 9, Inner: 5, OutBits: o.bits, OutCols: o.cols, Requant: benchRequant(16384, 1, o.bits)})
			})
		}
	}
	for _, m := range []int{4096, 8192} {
		a := randomBits(r, m, 16384, 1, bittensor.ByRows)
		x := randomBits(r, 16384, 256, 1, bittensor.ByCols)
		// The large shape's tile (128x256, two warpgroups), forced.
		for _, v := range []variant{{"default", tuning{bn: 256, wgs: 2}}, {"timing", tuning{bn: 256, wgs: 2, timing: 1}}} {
			b.Run(fmt.Sprintf("M=%dxK=16384/D=256/s=1/tune=%s", m, v.name), func(b *testing.B) {
				benchOne(b, k.withTuning(v.t), []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 9, Inner: 5})
			})
		}
	}
	run(4096, 64, []int{1, 2, 4}, []variant{
		{"default", tuning{}}, {"bn64", tuning{minTiles: -1}}, {"mt132", tuning{minTiles: 132}},
		{"ks2", tuning{ks: 2}}, {"epi", tuning{epi: 1}},
	}, BenchOptions{Repeats: 15, Inner: 20})
}

// BenchmarkWS times the wgmma kernel with and without the producer
// warpgroup (tuning ws; bmm_wgmma.cu WS) and the descriptor passed by
// value (oneprob; p0 reads it from global memory as before, p1 forces it
// by value, no suffix is the default choice), side by side,
// on the benchmark shapes whose launch takes two-warpgroup blocks (the
// only ones the producer applies to): the large shapes (MulInt and
// MulBit), the block-diagonal batches and the aggregation points.
func BenchmarkWS(b *testing.B) {
	k := gpuKernel(b)
	if ok, why := k.WGMMA(); !ok {
		b.Skipf("wgmma off: %s", why)
	}
	type variant struct {
		name string
		t    tuning
	}
	base := []variant{{"nowsp0", tuning{ws: -1, oneprob: -1}}, {"nowsp1", tuning{ws: -1, oneprob: 1}}, {"ws1", tuning{ws: 1}}}
	large := append(base, variant{"ws1p0", tuning{ws: 1, oneprob: -1}}, variant{"ws1p1", tuning{ws: 1, oneprob: 1}},
		variant{"default", tuning{}})
	// applies: the launch of as·xs takes two warpgroups, so ws1 differs.
	applies := func(as, xs []*bittensor.Tensor) bool {
		m, n, ks := 0, 0, 0
		for i := range as {
			m, n, ks = max(m, as[i].Rows()), max(n, xs[i].Cols()), max(ks, (as[i].Cols()+255)/256)
		}
		l := launch{abits: as[0].Bits(), bbits: xs[0].Bits(), m: m, n: n, ksteps: ks, nprob: len(as), allInt: true}
		return chooseConfig(l, k.target(), tuning{ws: 1}).ws > 0
	}
	run := func(name string, vs []variant, as, xs []*bittensor.Tensor, o BenchOptions) {
		if !applies(as, xs) {
			return
		}
		for _, v := range vs {
			b.Run(name+"/tune="+v.name, func(b *testing.B) { benchOne(b, k.withTuning(v.t), as, xs, o) })
		}
	}
	T := func(t *bittensor.Tensor) []*bittensor.Tensor { return []*bittensor.Tensor{t} }
	r := rand.New(rand.NewPCG(2, 2))
	a := randomBits(r, 16384, 16384, 1, bittensor.ByRows)
	for s := 1; s <= 4; s++ {
		x := randomBits(r, 16384, 256, s, bittensor.ByCols)
		o := BenchOptions{Repeats: 9, Inner: 5}
		run(fmt.Sprintf("N=16384/D=256/s=%d", s), large, T(a), T(x), o)
		if s == 1 || s == 4 {
			for _, out := range outs {
				ob := o
				ob.OutBits, ob.OutCols, ob.Requant = out.bits, out.cols, benchRequant(16384, s, out.bits)
				run(fmt.Sprintf("N=16384/D=256/s=%d/out=%s", s, out.name), large, T(a), T(x), ob)
			}
		}
	}
	for _, c := range []struct{ n, bs, d int }{{4096, 256, 64}, {16384, 512, 64}, {16384, 1024, 256}} {
		ad := blockDiag(r, c.n, c.bs, 1)
		for _, s := range []int{1, 4} {
			x, as, xs := blockBatch(r, c.n, c.bs, c.d, s)
			o := BenchOptions{Repeats: 15, Inner: 20}
			run(fmt.Sprintf("N=%d/bs=%d/D=%d/s=%d/mode=ztj", c.n, c.bs, c.d, s), base, T(ad), T(x), o)
			run(fmt.Sprintf("N=%d/bs=%d/D=%d/s=%d/mode=batched", c.n, c.bs, c.d, s), base, as, xs, o)
		}
	}
	for _, n := range []int{1024, 2048, 4096} {
		an := randomBits(r, n, n, 1, bittensor.ByRows)
		for _, d := range []int{16, 32, 64} {
			for s := 1; s <= 8; s++ {
				x := randomBits(r, n, d, s, bittensor.ByCols)
				run(fmt.Sprintf("N=%d/D=%d/s=%d", n, d, s), base, T(an), T(x), BenchOptions{Repeats: 15, Inner: 20})
			}
		}
	}
}

// BenchmarkBitReg times MulBit packed by rows through shared memory
// (tune=old: packTileBits) and straight from the accumulators (reg:
// bmm_wgmma.cu BITREG; with and without the producer warpgroup and the
// by-value descriptor), side by side on the large shapes, and the
// default; every code is checked against the int32 product (int, timed
// first) re-quantized on the host.
func BenchmarkBitReg(b *testing.B) {
	k := gpuKernel(b)
	if ok, why := k.WGMMA(); !ok {
		b.Skipf("wgmma off: %s", why)
	}
	vs := []struct {
		name string
		t    tuning
	}{{"old", tuning{bitreg: -1}}, {"reg", tuning{bitreg: 1}}, {"regws1", tuning{bitreg: 1, ws: 1}}, {"regnows", tuning{bitreg: 1, ws: -1}},
		{"regp0", tuning{bitreg: 1, oneprob: -1}}, {"regp1", tuning{bitreg: 1, oneprob: 1}}, {"reg2", tuning{bitreg: 2}}, {"default", tuning{}}}
	r := rand.New(rand.NewPCG(2, 2))
	a := randomBits(r, 16384, 16384, 1, bittensor.ByRows)
	for _, s := range []int{1, 4} {
		x := randomBits(r, 16384, 256, s, bittensor.ByCols)
		o := BenchOptions{Repeats: 9, Inner: 5}
		var res BenchResult
		b.Run(fmt.Sprintf("N=16384/D=256/s=%d/int", s), func(b *testing.B) {
			res = benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, o)
		})
		if res.Out == nil {
			continue
		}
		for _, out := range outs[:3] {
			for _, v := range vs {
				b.Run(fmt.Sprintf("N=16384/D=256/s=%d/out=%s/tune=%s", s, out.name, v.name), func(b *testing.B) {
					ob := o
					ob.OutBits = out.bits
					benchBit(b, k.withTuning(v.t), a, x, res.Out[0], ob)
				})
			}
		}
	}
}
