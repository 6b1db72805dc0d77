package tcu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// These tests run on a GPU host and skip, saying why, anywhere else.

var (
	gpuOnce sync.Once
	gpuK    *Kernel
	gpuErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fpDev != nil {
		if err := fpDev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the fp tests' device:", err)
			code = 1
		}
	}
	if gpuK != nil {
		if err := gpuK.d.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing device:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// gpuKernel opens device 0 once, or skips.
func gpuKernel(tb testing.TB) *Kernel {
	gpuOnce.Do(func() {
		d, err := Open(0)
		if err != nil {
			gpuErr = err
			return
		}
		gpuK, gpuErr = NewKernel(d)
		if gpuErr == nil {
			ok, why := gpuK.WGMMA()
			fmt.Fprintf(os.Stderr, "tcu: %v; NVRTC %s; wgmma on: %v %s\n", d.Info(), d.NVRTCVersion(), ok, why)
		}
	})
	if errors.Is(gpuErr, ErrUnavailable) {
		tb.Skipf("no GPU: %v", gpuErr)
	}
	require.NoError(tb, gpuErr)
	return gpuK
}

// testPaths are the kernels the correctness tests run: the automatic
// choice (wgmma where a variant fits, on Hopper), mma.sync everywhere,
// the wgmma producer warpgroup (WS=1, two consumer warpgroups on every
// shape), and int32 outputs on the device where auto stores uint16
// (out32).
func testPaths(tb testing.TB) map[string]*Kernel {
	k := gpuKernel(tb)
	out := map[string]*Kernel{"auto": k, "ws1": k.withTuning(tuning{ws: 1, wgs: 2}), "out32": k.withTuning(tuning{out16: -1})}
	if kp, err := k.WithPath(PathMMA); err == nil {
		out[PathMMA] = kp
	}
	return out
}

// paths returns the auto kernel and each forced path the device has.
func paths(tb testing.TB) map[string]*Kernel {
	k := gpuKernel(tb)
	out := map[string]*Kernel{"auto": k}
	for _, p := range []string{PathMMA, PathWGMMA} {
		if kp, err := k.WithPath(p); err == nil {
			out[p] = kp
		} else {
			tb.Logf("path %s off: %v", p, err)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	for name, k := range testPaths(t) {
		t.Run(name, func(t *testing.T) { bmmtest.Conformance(t, k) })
	}
}

// TestLargeVsGeneric checks shapes big enough for several blocks in each
// direction, and every wgmma N, against the reference.
func TestLargeVsGeneric(t *testing.T) {
	ks := testPaths(t)
	// wgmma pipelines other than the chosen ones: one k-step per stage, a
	// shallow pipeline whose stages end part-filled, one-warpgroup blocks.
	k := gpuKernel(t)
	ks["ks1"] = k.withTuning(tuning{ks: 1})
	ks["ks2s3"] = k.withTuning(tuning{ks: 2, stages: 3})
	ks["wg1ks3"] = k.withTuning(tuning{wgs: 1, ks: 3})
	ks["epi"] = k.withTuning(tuning{epi: 1})
	ks["epi0"] = k.withTuning(tuning{epi: -1})
	ks["epiks3s3"] = k.withTuning(tuning{epi: 1, ks: 3, stages: 3})
	ks["epiwg1ks2"] = k.withTuning(tuning{epi: 1, wgs: 1, ks: 2})
	// The large shapes' 128x256 tile.
	ks["bn256"] = k.withTuning(tuning{bn: 256, wgs: 2})
	// 16-column tiles: MulBit rows shared by two blocks go the per-output
	// way, columns (and rows of a single column tile) are packed whole.
	ks["bn16"] = k.withTuning(tuning{bn: 16, minBN: 16})
	// The producer warpgroup (WS): release lags 1 and 2, the large
	// shapes' tile, 3 k-steps per stage, a shallow pipeline, 16-column
	// tiles; and without it.
	ks["ws1"] = k.withTuning(tuning{ws: 1, wgs: 2})
	ks["ws2"] = k.withTuning(tuning{ws: 2, wgs: 2})
	ks["ws1bn256"] = k.withTuning(tuning{ws: 1, bn: 256, wgs: 2})
	ks["ws2ks3"] = k.withTuning(tuning{ws: 2, wgs: 2, ks: 3})
	ks["ws1ks2s3epi"] = k.withTuning(tuning{ws: 1, wgs: 2, ks: 2, stages: 3, epi: 1})
	ks["ws1bn16"] = k.withTuning(tuning{ws: 1, wgs: 2, bn: 16, minBN: 16})
	ks["nows"] = k.withTuning(tuning{ws: -1})
	ks["ws1p0"] = k.withTuning(tuning{ws: 1, wgs: 2, oneprob: -1})
	ks["p0"] = k.withTuning(tuning{oneprob: -1})
	ks["p1"] = k.withTuning(tuning{oneprob: 1})
	// MulBit by rows packed from the registers (BITREG): the default
	// tiles, with the producer warpgroup on the large shapes' tile, with
	// the by-value descriptor, 64- and 128-column tiles (2 and 4 words a
	// row); and through shared memory.
	ks["reg"] = k.withTuning(tuning{bitreg: 1})
	ks["regws1bn256"] = k.withTuning(tuning{bitreg: 1, ws: 1, bn: 256, wgs: 2})
	ks["regws1p1"] = k.withTuning(tuning{bitreg: 1, ws: 1, wgs: 2, oneprob: 1})
	ks["regbn64"] = k.withTuning(tuning{bitreg: 1, bn: 64, wgs: 2})
	ks["regbn128"] = k.withTuning(tuning{bitreg: 1, bn: 128, wgs: 1})
	ks["reg0"] = k.withTuning(tuning{bitreg: -1})
	ks["reg2"] = k.withTuning(tuning{bitreg: 2})
	ks["reg2bn64"] = k.withTuning(tuning{bitreg: 2, bn: 64, wgs: 2})
	ks["reg2bn128"] = k.withTuning(tuning{bitreg: 2, bn: 128, wgs: 1})
	// The last stages multiplied by one warpgroup at a time (tail, int32
	// launches only; the kernel runs a tail of n on loops of 4n stages or
	// more, so the 520x12800x256 shape's 13 stages of 4 k-steps run tails
	// of 1 to 3, and the longer ones below only meet after their loops as
	// every shorter product does): the first warpgroup's rows from the
	// registers and through shared memory (te), the second's from the
	// registers (epi0); without the evict-first stores; with no tail.
	ks["tail1"] = k.withTuning(tuning{tail: 1, ws: 1, wgs: 2})
	ks["tail2bn256"] = k.withTuning(tuning{tail: 2, ws: 1, wgs: 2, bn: 256})
	ks["tail4bn256"] = k.withTuning(tuning{tail: 4, ws: 1, wgs: 2, bn: 256})
	ks["tail8ks2bn256"] = k.withTuning(tuning{tail: 8, ks: 2, ws: 1, wgs: 2, bn: 256})
	ks["tail3reg0"] = k.withTuning(tuning{tail: 3, ws: 1, wgs: 2, bitreg: -1})
	ks["tail3epi0"] = k.withTuning(tuning{tail: 3, ws: 1, wgs: 2, epi: -1})
	ks["tail16ks1"] = k.withTuning(tuning{tail: 16, ks: 1, ws: 1, wgs: 2})
	ks["tail3tebn256"] = k.withTuning(tuning{tail: 3, tailepi: 1, ws: 1, wgs: 2, bn: 256})
	ks["l2off"] = k.withTuning(tuning{l2: -1})
	ks["notailbn256"] = k.withTuning(tuning{tail: -1, bn: 256, wgs: 2})
	// int32 on the device for the shapes whose products fit uint16 (the
	// default there): the large shapes' tail and tile, the registers.
	ks["out32tail3tebn256"] = k.withTuning(tuning{tail: 3, tailepi: 1, ws: 1, wgs: 2, bn: 256, out16: -1})
	ks["out32bn256"] = k.withTuning(tuning{bn: 256, wgs: 2, out16: -1})
	ks["out32epi0"] = k.withTuning(tuning{epi: -1, out16: -1})
	r := rand.New(rand.NewPCG(7, 8))
	// Each shape's operands and references once; each kernel a subtest
	// (-run 'TestLargeVsGeneric/ws' picks the producer-warp ones).
	type bitCase struct {
		bits    int
		packing bittensor.Packing
		ep      *bmm.Epilogue
		neg     bool
		rq      bmm.Requant
		ref     *bittensor.Tensor
	}
	type shape struct {
		m, k, n, a, b int
		at, bt        *bittensor.Tensor
		want          []int32
		bits          []bitCase
	}
	var shapes []shape
	for _, s := range []shape{
		{m: 1000, k: 1300, n: 256, a: 1, b: 1}, {m: 520, k: 12800, n: 256, a: 1, b: 1}, {m: 700, k: 2048, n: 64, a: 1, b: 4},
		{m: 515, k: 777, n: 130, a: 2, b: 2}, {m: 600, k: 1024, n: 32, a: 1, b: 8}, {m: 300, k: 512, n: 100, a: 3, b: 5},
		{m: 257, k: 300, n: 512, a: 1, b: 2}, {m: 2048, k: 512, n: 16, a: 1, b: 3},
	} {
		var err error
		s.at, s.bt, err = randomPair(r, s.m, s.k, s.n, s.a, s.b)
		require.NoError(t, err)
		s.want = make([]int32, s.m*s.n)
		require.NoError(t, bmm.Generic{}.MulInt(s.want, s.at, s.bt))
		// MulBit: plain re-quantization and one with an epilogue, into
		// both packings, against Generic.
		lo, hi := slices.Min(s.want), slices.Max(s.want)
		ep := &bmm.Epilogue{ColScale: make([]float32, s.n), ColBias: make([]float32, s.n), ReLU: true}
		for j := range ep.ColScale {
			ep.ColScale[j] = 0.5 + r.Float32()
			ep.ColBias[j] = float32(lo-hi) * r.Float32() / 4
		}
		// (A negative scale too: codes fall as products grow.)
		// (By rows with no epilogue at 1, 3 and 8 bits: the codes packed
		// from the registers, bmm_wgmma.cu BITREG.)
		s.bits = []bitCase{{bits: 1, packing: bittensor.ByRows}, {bits: 4, packing: bittensor.ByRows, ep: ep}, {bits: 8, packing: bittensor.ByCols},
			{bits: 3, packing: bittensor.ByCols, ep: ep}, {bits: 1, packing: bittensor.ByCols, neg: true},
			{bits: 8, packing: bittensor.ByRows}, {bits: 3, packing: bittensor.ByRows, neg: true}}
		for i := range s.bits {
			c := &s.bits[i]
			scale := float32(float64(int(1)<<c.bits) / float64(hi-lo+1))
			c.rq = bmm.Requant{Scale: scale, Offset: -float32(lo) * scale}
			if c.neg {
				c.rq = bmm.Requant{Scale: -scale, Offset: float32(hi) * scale}
			}
			c.ref, err = bittensor.New(s.m, s.n, c.bits, c.packing, bittensor.DefaultPadding)
			require.NoError(t, err)
			require.NoError(t, bmm.Generic{}.MulBit(c.ref, s.at, s.bt, c.ep, c.rq))
		}
		shapes = append(shapes, s)
	}
	for name, k := range ks {
		t.Run(name, func(t *testing.T) {
			for _, s := range shapes {
				dims := fmt.Sprintf("%dx%dx%d a%d b%d", s.m, s.k, s.n, s.a, s.b)
				got := make([]int32, s.m*s.n)
				require.NoError(t, k.MulInt(got, s.at, s.bt), "%s %s", name, dims)
				l := launch{abits: s.a, bbits: s.b, m: s.m, n: s.n, ksteps: (s.k + 255) / 256, nprob: 1, allInt: true, fits16: fitsOut16(s.a, s.b, s.k)}
				cfg := chooseConfig(l, k.target(), k.tune)
				assert.True(t, equalInts(t, got, s.want, s.n), "%s %s (%v)", name, dims, cfg)
				for _, c := range s.bits {
					dst, err := bittensor.New(s.m, s.n, c.bits, c.packing, bittensor.DefaultPadding)
					require.NoError(t, err)
					require.NoError(t, k.MulBit(dst, s.at, s.bt, c.ep, c.rq), "%s %s", name, dims)
					assert.True(t, c.ref.Equal(dst), "%s %s MulBit %d-bit %v ep=%v rq=%+v (%v)", name, dims, c.bits, c.packing, c.ep != nil, c.rq, cfg)
				}
			}
		})
	}
}

// TestOut16Bound runs products whose every output is the largest value
// their widths allow, K·(2^a-1)·(2^b-1), on either side of 65535, the
// largest a uint16 output holds: the launch must store uint16 exactly
// where it fits (config "o161"), and both must come back exact. Shapes
// for the tile stored through shared memory (N a multiple of 8), from
// the registers (N even) and per output (N odd).
func TestOut16Bound(t *testing.T) {
	for name, k := range paths(t) {
		for _, s := range []struct{ m, k, n, a, b int }{
			{200, 65535, 256, 1, 1}, {200, 65536, 256, 1, 1}, {130, 65535, 250, 1, 1}, {70, 7281, 40, 2, 2},
			{70, 7282, 40, 2, 2}, {129, 4369, 33, 1, 4}, {129, 4370, 33, 1, 4},
		} {
			av := make([]int32, s.m*s.k)
			for i := range av {
				av[i] = 1<<s.a - 1
			}
			bv := make([]int32, s.k*s.n)
			for i := range bv {
				bv[i] = 1<<s.b - 1
			}
			a, err := bittensor.PackRows(av, s.m, s.k, s.a)
			require.NoError(t, err)
			b, err := bittensor.PackCols(bv, s.k, s.n, s.b)
			require.NoError(t, err)
			v := int32(s.k * (1<<s.a - 1) * (1<<s.b - 1))
			res, err := k.Bench([]*bittensor.Tensor{a}, []*bittensor.Tensor{b}, BenchOptions{Warmup: 1, Repeats: 1, Inner: 1})
			require.NoError(t, err)
			dims := fmt.Sprintf("%s %dx%dx%d a%d b%d (%s)", name, s.m, s.k, s.n, s.a, s.b, res.Config)
			assert.Equal(t, v <= 65535, strings.Contains(res.Config, "o161"), "%s: uint16 outputs exactly where %d fits", dims, v)
			want := slices.Repeat([]int32{v}, s.m*s.n)
			assert.True(t, equalInts(t, res.Out[0], want, s.n), dims)
			got := make([]int32, s.m*s.n)
			require.NoError(t, k.MulInt(got, a, b))
			assert.True(t, equalInts(t, got, want, s.n), "MulInt %s", dims)
		}
	}
}

func equalInts(t *testing.T, got, want []int32, n int) bool {
	for i := range want {
		if got[i] != want[i] {
			t.Logf("first difference at C[%d][%d]: got %d, want %d", i/n, i%n, got[i], want[i])
			return false
		}
	}
	return true
}

// randomB returns a random B (a.Cols()×n, bits wide, packed by columns)
// and the reference product a·B.
func randomB(t *testing.T, r *rand.Rand, a *bittensor.Tensor, n, bits int) (*bittensor.Tensor, []int32) {
	t.Helper()
	vals := make([]int32, a.Cols()*n)
	for i := range vals {
		vals[i] = int32(r.IntN(1 << bits))
	}
	b, err := bittensor.PackCols(vals, a.Cols(), n, bits)
	require.NoError(t, err)
	want := make([]int32, a.Rows()*n)
	require.NoError(t, bmm.Generic{}.MulInt(want, a, b))
	return b, want
}

// TestZeroTileJumping: a block-diagonal A gives the same result with and
// without zero-tile lists, and the lists visit only the diagonal tiles.
func TestZeroTileJumping(t *testing.T) {
	k := gpuKernel(t)
	r := rand.New(rand.NewPCG(9, 10))
	a := blockDiag(r, 2048, 256, 1)
	b, want := randomB(t, r, a, 64, 4)
	for name, kk := range paths(t) {
		for _, dense := range []bool{false, true} {
			res, err := kk.Bench([]*bittensor.Tensor{a}, []*bittensor.Tensor{b}, BenchOptions{Dense: dense, Repeats: 2, Inner: 2})
			require.NoError(t, err)
			assert.True(t, equalInts(t, res.Out[0], want, 64), "%s dense=%v", name, dense)
			if dense {
				assert.Equal(t, 1.0, res.NonZero)
			} else {
				assert.Less(t, res.NonZero, 0.2, "%s: only diagonal tiles are visited (%s)", name, res.Config)
			}
		}
	}
	// The large shapes' 128x256 tile (1-bit B of 256 columns) with the
	// zero-tile lists (k-steps not consecutive).
	b1, want1 := randomB(t, r, a, 256, 1)
	// With and without the producer warp.
	for _, tu := range []tuning{{bn: 256, wgs: 2, ws: -1}, {bn: 256, wgs: 2, ws: 1}, {bn: 256, wgs: 2, ws: 2}} {
		res, err := k.withTuning(tu).Bench([]*bittensor.Tensor{a}, []*bittensor.Tensor{b1}, BenchOptions{Repeats: 2, Inner: 2})
		require.NoError(t, err)
		assert.True(t, equalInts(t, res.Out[0], want1, 256), "%s", res.Config)
		assert.Less(t, res.NonZero, 0.2, "only diagonal tiles are visited (%s)", res.Config)
		assert.Contains(t, res.Config, "128x256", "the tile under test ran")
		assert.Contains(t, res.Config, fmt.Sprintf("ws%d", max(tu.ws, 0)), "the pipeline under test ran")
	}
}

// blockDiag returns an n×n 1-bit A (packed by rows) with random bits in
// its diagonal blocks of size bs, built word by word.
func blockDiag(r *rand.Rand, n, bs int, density float64) *bittensor.Tensor {
	a, err := bittensor.New(n, n, 1, bittensor.ByRows, bittensor.DefaultPadding)
	if err != nil {
		panic(err)
	}
	for row := 0; row < n; row++ {
		blk := row / bs
		line := a.Line(0, row)
		for c := blk * bs; c < min(n, (blk+1)*bs); c++ {
			if r.Float64() < density*2 && r.IntN(2) == 0 {
				line[c/64] |= 1 << (c % 64)
			}
		}
	}
	return a
}

func TestBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for name, k := range testPaths(t) {
		var as, bs []*bittensor.Tensor
		var want [][]int32
		for i := 0; i < 37; i++ {
			m, kk, n := 1+r.IntN(300), 1+r.IntN(600), 1+r.IntN(70)
			a, b, err := randomPair(r, m, kk, n, 1, 3)
			require.NoError(t, err)
			w := make([]int32, m*n)
			require.NoError(t, bmm.Generic{}.MulInt(w, a, b))
			as, bs, want = append(as, a), append(bs, b), append(want, w)
		}
		dsts := make([][]int32, len(as))
		for i := range dsts {
			dsts[i] = make([]int32, len(want[i]))
		}
		require.NoError(t, k.MulIntBatch(dsts, as, bs))
		for i := range dsts {
			assert.True(t, equalInts(t, dsts[i], want[i], bs[i].Cols()), "%s product %d", name, i)
		}
		// MulBit batch: each result as Generic packs it.
		bits := make([]*bittensor.Tensor, len(as))
		rq := bmm.Requant{Scale: 0.01, Offset: 0.5}
		for i := range as {
			var err error
			bits[i], err = bittensor.New(as[i].Rows(), bs[i].Cols(), 3, bittensor.ByRows, bittensor.DefaultPadding)
			require.NoError(t, err)
		}
		require.NoError(t, k.MulBitBatch(bits, as, bs, nil, rq))
		for i := range as {
			ref, err := bittensor.New(as[i].Rows(), bs[i].Cols(), 3, bittensor.ByRows, bittensor.DefaultPadding)
			require.NoError(t, err)
			require.NoError(t, bmm.Generic{}.MulBit(ref, as[i], bs[i], nil, rq))
			assert.True(t, ref.Equal(bits[i]), "%s MulBit product %d", name, i)
		}
	}
	k := gpuKernel(t)
	a1, b1, _ := randomPair(r, 10, 10, 10, 1, 1)
	a2, b2, _ := randomPair(r, 10, 10, 10, 2, 1)
	err := k.MulIntBatch([][]int32{make([]int32, 100), make([]int32, 100)}, []*bittensor.Tensor{a1, a2}, []*bittensor.Tensor{b1, b2})
	assert.ErrorIs(t, err, ErrShape, "one launch takes one pair of widths")
}

func TestDeviceResources(t *testing.T) {
	k := gpuKernel(t)
	d := k.Device()
	buf, err := d.Alloc(1 << 20)
	require.NoError(t, err)
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i * 7)
	}
	require.NoError(t, buf.Write(src))
	back := make([]byte, len(src))
	require.NoError(t, buf.Read(back))
	assert.Equal(t, src, back)
	assert.ErrorIs(t, buf.Write(make([]byte, 2<<20)), ErrShape)
	require.NoError(t, buf.Free())
	h, err := d.AllocHost(4096)
	require.NoError(t, err)
	assert.Len(t, h.Bytes(), 4096)
	require.NoError(t, h.Free())
	s, err := d.NewStream()
	require.NoError(t, err)
	e1, err := d.NewEvent()
	require.NoError(t, err)
	e2, err := d.NewEvent()
	require.NoError(t, err)
	require.NoError(t, e1.Record(s))
	require.NoError(t, e2.Record(s))
	el, err := Elapsed(e1, e2)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, el.Nanoseconds(), int64(0))
	require.NoError(t, s.Sync())
	require.NoError(t, e1.Close())
	require.NoError(t, e2.Close())
	require.NoError(t, s.Close())
	// A driver error carries the call and CUDA's message.
	_, err = d.Alloc(1 << 50)
	var ce *CUDAError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, ErrDriver)
	assert.Equal(t, "cuMemAlloc_v2", ce.Call)
	assert.NotEmpty(t, ce.Message)
}

func TestCompileError(t *testing.T) {
	k := gpuKernel(t)
	err := k.d.run(func() error {
		_, err := k.d.function("broken.cu", "extern \"C\" __global__ void f() { this is not C++; }", nil, nil, "f")
		return err
	})
	require.ErrorIs(t, err, ErrCompile)
	assert.Contains(t, err.Error(), "broken.cu")
	assert.Contains(t, err.Error(), "error", "the NVRTC log is in the message")
}
