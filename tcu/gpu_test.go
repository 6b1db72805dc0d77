package tcu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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
// split-K forced on every launch, and wgmma clusters sharing B wherever
// the launch allows them (dense A).
func testPaths(tb testing.TB) map[string]*Kernel {
	k := gpuKernel(tb)
	out := map[string]*Kernel{"auto": k, "split3": k.WithSplits(3), "cluster": k.withTuning(tuning{cluster: 2})}
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
	// The large shapes' 128x256 tile; MulBit through the per-output path.
	ks["bn256"] = k.withTuning(tuning{bn: 256, wgs: 2})
	ks["pack0"] = k.withTuning(tuning{bitepi: -1})
	// 16-column tiles: MulBit rows shared by two blocks go the per-output
	// way, columns (and rows of a single column tile) are packed whole.
	ks["bn16"] = k.withTuning(tuning{bn: 16, minBN: 16})
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct{ m, k, n, a, b int }{
		{1000, 1300, 256, 1, 1}, {520, 8192, 256, 1, 1}, {700, 2048, 64, 1, 4}, {515, 777, 130, 2, 2},
		{600, 1024, 32, 1, 8}, {300, 512, 100, 3, 5}, {257, 300, 512, 1, 2}, {2048, 512, 16, 1, 3},
	} {
		a, b, err := randomPair(r, s.m, s.k, s.n, s.a, s.b)
		require.NoError(t, err)
		want := make([]int32, s.m*s.n)
		require.NoError(t, bmm.Generic{}.MulInt(want, a, b))
		// MulBit: plain re-quantization and one with an epilogue, into
		// both packings, against Generic.
		lo, hi := slices.Min(want), slices.Max(want)
		ep := &bmm.Epilogue{ColScale: make([]float32, s.n), ColBias: make([]float32, s.n), ReLU: true}
		for j := range ep.ColScale {
			ep.ColScale[j] = 0.5 + r.Float32()
			ep.ColBias[j] = float32(lo-hi) * r.Float32() / 4
		}
		// (A negative scale too: codes fall as products grow.)
		type bitCase struct {
			bits    int
			packing bittensor.Packing
			ep      *bmm.Epilogue
			neg     bool
		}
		bitCases := []bitCase{{1, bittensor.ByRows, nil, false}, {4, bittensor.ByRows, ep, false}, {8, bittensor.ByCols, nil, false},
			{3, bittensor.ByCols, ep, false}, {1, bittensor.ByCols, nil, true}}
		refs := make([]*bittensor.Tensor, len(bitCases))
		rqs := make([]bmm.Requant, len(bitCases))
		for i, c := range bitCases {
			scale := float32(float64(int(1)<<c.bits) / float64(hi-lo+1))
			rqs[i] = bmm.Requant{Scale: scale, Offset: -float32(lo) * scale}
			if c.neg {
				rqs[i] = bmm.Requant{Scale: -scale, Offset: float32(hi) * scale}
			}
			var err error
			refs[i], err = bittensor.New(s.m, s.n, c.bits, c.packing, bittensor.DefaultPadding)
			require.NoError(t, err)
			require.NoError(t, bmm.Generic{}.MulBit(refs[i], a, b, c.ep, rqs[i]))
		}
		for name, k := range ks {
			got := make([]int32, s.m*s.n)
			require.NoError(t, k.MulInt(got, a, b), "%s %+v", name, s)
			cfg := k.config(s.a, s.b, s.m, s.n, (s.k+255)/256, 1)
			assert.True(t, equalInts(t, got, want, s.n), "%s %+v (%v)", name, s, cfg)
			for i, c := range bitCases {
				dst, err := bittensor.New(s.m, s.n, c.bits, c.packing, bittensor.DefaultPadding)
				require.NoError(t, err)
				require.NoError(t, k.MulBit(dst, a, b, c.ep, rqs[i]), "%s %+v", name, s)
				assert.True(t, refs[i].Equal(dst), "%s %+v MulBit %d-bit %v ep=%v rq=%+v (%v)", name, s, c.bits, c.packing, c.ep != nil, rqs[i], cfg)
			}
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

// TestZeroTileJumping: a block-diagonal A gives the same result with and
// without zero-tile lists, and the lists visit only the diagonal tiles.
func TestZeroTileJumping(t *testing.T) {
	k := gpuKernel(t)
	r := rand.New(rand.NewPCG(9, 10))
	a := blockDiag(r, 2048, 256, 1)
	bv := make([]int32, 2048*64)
	for i := range bv {
		bv[i] = int32(r.IntN(16))
	}
	b, err := bittensor.PackCols(bv, 2048, 64, 4)
	require.NoError(t, err)
	want := make([]int32, 2048*64)
	require.NoError(t, bmm.Generic{}.MulInt(want, a, b))
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
	bits := make([]int32, 2048*256)
	for i := range bits {
		bits[i] = int32(r.IntN(2))
	}
	b1, err := bittensor.PackCols(bits, 2048, 256, 1)
	require.NoError(t, err)
	want1 := make([]int32, 2048*256)
	require.NoError(t, bmm.Generic{}.MulInt(want1, a, b1))
	res, err := k.withTuning(tuning{bn: 256, wgs: 2}).Bench([]*bittensor.Tensor{a}, []*bittensor.Tensor{b1}, BenchOptions{Repeats: 2, Inner: 2})
	require.NoError(t, err)
	assert.True(t, equalInts(t, res.Out[0], want1, 256), "%s", res.Config)
	assert.Less(t, res.NonZero, 0.2, "only diagonal tiles are visited (%s)", res.Config)
	assert.Contains(t, res.Config, "128x256", "the tile under test ran")
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
