package tcu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
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
func benchOne(b *testing.B, k *Kernel, as, bs []*bittensor.Tensor, o BenchOptions) {
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
}

// BenchmarkAggregation: A is an N×N 1-bit adjacency (random bits), X an
// N×D s-bit feature matrix: the aggregation step of a GNN layer.
func BenchmarkAggregation(b *testing.B) {
	ks := paths(b)
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1024, 2048, 4096} {
		a := randomBits(r, n, n, 1, bittensor.ByRows)
		for _, d := range []int{16, 32, 64} {
			for s := 1; s <= 8; s++ {
				x := randomBits(r, n, d, s, bittensor.ByCols)
				for _, impl := range []string{"auto", PathMMA, PathWGMMA} {
					k, ok := ks[impl]
					if impl == "auto" {
						// Split-K is off by default; show what it does here.
						b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=split4", n, d, s), func(b *testing.B) {
							benchOne(b, k.WithSplits(4), []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 15, Inner: 20})
						})
					}
					if !ok {
						continue
					}
					b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=%s", n, d, s, impl), func(b *testing.B) {
						benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 15, Inner: 20})
					})
				}
			}
		}
	}
}

// BenchmarkLarge: compute-bound shapes, N = 16384, D = 256.
func BenchmarkLarge(b *testing.B) {
	ks := paths(b)
	r := rand.New(rand.NewPCG(2, 2))
	const n, d = 16384, 256
	a := randomBits(r, n, n, 1, bittensor.ByRows)
	for _, s := range []int{1, 4} {
		x := randomBits(r, n, d, s, bittensor.ByCols)
		for _, impl := range []string{"auto", PathMMA, PathWGMMA} {
			k, ok := ks[impl]
			if !ok {
				continue
			}
			b.Run(fmt.Sprintf("N=%d/D=%d/s=%d/impl=%s", n, d, s, impl), func(b *testing.B) {
				benchOne(b, k, []*bittensor.Tensor{a}, []*bittensor.Tensor{x}, BenchOptions{Repeats: 9, Inner: 5})
			})
		}
	}
}

// BenchmarkBlockDiag: the subgraph batches of QGTC. A block-diagonal N×N
// adjacency with blocks of bs nodes, run whole with zero-tile jumping
// (ztj), and as N/bs independent products in one launch (batched). Ops are
// counted on the dense N×N shape for ztj and on the blocks for batched.
func BenchmarkBlockDiag(b *testing.B) {
	ks := paths(b)
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range []struct{ n, bs, d int }{{4096, 256, 64}, {16384, 512, 64}, {16384, 1024, 256}} {
		a := blockDiag(r, c.n, c.bs, 1)
		for _, s := range []int{1, 4} {
			x := randomBits(r, c.n, c.d, s, bittensor.ByCols)
			var as, xs []*bittensor.Tensor
			for q := 0; q < c.n/c.bs; q++ {
				as = append(as, blockDiag(r, c.bs, c.bs, 1))
				xs = append(xs, randomBits(r, c.bs, c.d, s, bittensor.ByCols))
			}
			for _, impl := range []string{"auto", PathMMA, PathWGMMA} {
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
// choose wgmmaConfig's defaults; "default" is what wgmmaConfig picks.
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
		{"ks6s3", tuning{ks: 6, stages: 3}}, {"wg1", tuning{wgs: 1}}, {"wg1ks4s2", tuning{wgs: 1, ks: 4, stages: 2}}, {"cl2", tuning{cluster: 2}},
		{"epi0", tuning{epi: -1}},
	}, BenchOptions{Repeats: 9, Inner: 5})
	// Phase times (TIMING lines, summarized by tune.sh's timing step), and
	// fewer row tiles of the same shape (a half and a quarter wave): what
	// a block costs when fewer share the L2 and the HBM.
	run(16384, 256, []int{1, 4}, []variant{{"timing", tuning{timing: 1}}, {"timingepi0", tuning{timing: 1, epi: -1}},
		{"timingcl2", tuning{timing: 1, cluster: 2}}, {"timingcl2ks2", tuning{timing: 1, cluster: 2, ks: 2}},
		{"timingbn128", tuning{timing: 1, bn: 128}}}, BenchOptions{Repeats: 3, Inner: 5})
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
		{"ks2", tuning{ks: 2}}, {"cl2", tuning{cluster: 2}}, {"epi", tuning{epi: 1}},
	}, BenchOptions{Repeats: 15, Inner: 20})
}
