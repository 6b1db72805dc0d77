package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

func kernels(t testing.TB) []*Kernel {
	var ks []*Kernel
	for _, n := range Impls() {
		k, err := NewKernel(n)
		require.NoError(t, err)
		ks = append(ks, k)
	}
	return ks
}

func TestConformance(t *testing.T) {
	for _, k := range kernels(t) {
		t.Run(k.Name(), func(t *testing.T) {
			if testing.Short() && k.Path() == "generic" && len(bitImpls) > 1 {
				t.Skip("-short: the Go path is cross-checked by TestVsGeneric and TestRowVsNaive")
			}
			bmmtest.Conformance(t, k)
		})
	}
}

func TestRegistered(t *testing.T) {
	assert.Equal(t, "cpu/"+Path(), bmm.Default().Name())
}

func randInts(r *rand.Rand, n, nbits int, density float64) []int32 {
	v := make([]int32, n)
	for i := range v {
		if r.Float64() < density {
			v[i] = int32(r.Uint64() & (1<<nbits - 1))
		}
	}
	return v
}

// blockDiag is an n×n 0/1 matrix with ones (at density d) only inside
// diagonal blocks of bs rows: a batch of subgraphs' adjacency.
func blockDiag(r *rand.Rand, n, bs int, d float64) []int32 {
	v := make([]int32, n*n)
	for i := 0; i < n; i++ {
		b0 := i / bs * bs
		for j := b0; j < min(n, b0+bs); j++ {
			if r.Float64() < d {
				v[i*n+j] = 1
			}
		}
	}
	return v
}

// TestVsGeneric cross-checks every path with bmm.Generic on products
// shaped like the workloads (dense, block-diagonal, several 64-row blocks,
// K blocks of the L2 panel), with every output form.
func TestVsGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	type tc struct {
		name         string
		m, k, n      int
		abits, bbits int
		a            []int32
	}
	var cases []tc
	for _, c := range []struct{ m, k, n, ab, bb int }{
		{130, 300, 17, 1, 3}, {64, 64, 64, 2, 2}, {200, 513, 9, 3, 1}, {65, 1000, 40, 1, 8}, {3, 5000, 70, 2, 2},
		// Short K with a partial last column group (the vertical kernel's
		// zero-padded group): a GCN's output layer, 5 and 10 classes.
		{1000, 64, 10, 4, 4}, {300, 200, 5, 2, 3}, {130, 512, 21, 1, 2}, {90, 256, 33, 8, 8},
	} {
		cases = append(cases, tc{fmt.Sprintf("dense/%dx%dx%d/a=%d/b=%d", c.m, c.k, c.n, c.ab, c.bb), c.m, c.k, c.n, c.ab, c.bb,
			randInts(r, c.m*c.k, c.ab, 0.8)})
	}
	for _, bs := range []int{1, 7, 64, 100, 300} {
		cases = append(cases, tc{fmt.Sprintf("blockdiag/bs=%d", bs), 700, 700, 24, 1, 4, blockDiag(r, 700, bs, 0.3)})
	}
	for _, bs := range []int{7, 100} { // K of 8 words: a padded group in the vertical kernel's mixed rows
		cases = append(cases, tc{fmt.Sprintf("blockdiag-short/bs=%d", bs), 480, 480, 13, 1, 4, blockDiag(r, 480, bs, 0.3)})
	}
	// Rows alternate between dense (batched into one kernel call) and
	// sparse (run by run), in runs of varying length.
	mixed := blockDiag(r, 900, 50, 0.2)
	for i := 0; i < 900; i++ {
		if i%7 < 3 {
			copy(mixed[i*900:(i+1)*900], randInts(r, 900, 1, 0.9))
		}
	}
	cases = append(cases, tc{"mixed", 900, 900, 33, 1, 3, mixed})
	// K longer than the L2 panel: several K blocks (bmm.go's kc < lw).
	cases = append(cases, tc{"kblocks", 70, 20000, 40, 1, 8, randInts(r, 70*20000, 1, 0.5)})
	for _, c := range cases {
		a, err := bittensor.PackRows(c.a, c.m, c.k, c.abits)
		require.NoError(t, err)
		b, err := bittensor.PackCols(randInts(r, c.k*c.n, c.bbits, 0.9), c.k, c.n, c.bbits)
		require.NoError(t, err)
		want, err := bmm.MM2IntWith(bmm.Generic{}, a, b)
		require.NoError(t, err)
		ep := &bmm.Epilogue{ColScale: randScale(r, c.n), RowScale: randScale(r, c.m), ColBias: randScale(r, c.n), ReLU: true}
		wantF, err := bmm.MM2FloatWith(bmm.Generic{}, a, b, ep)
		require.NoError(t, err)
		rq := bmm.Requant{Scale: 0.37, Offset: -1.5}
		wantR, err := bmm.MM2BitWith(bmm.Generic{}, a, b, 3, rq, bittensor.ByRows, bittensor.DefaultPadding, ep)
		require.NoError(t, err)
		wantC, err := bmm.MM2BitWith(bmm.Generic{}, a, b, 3, rq, bittensor.ByCols, bittensor.Padding{Lines: 1, Bits: 64}, ep)
		require.NoError(t, err)
		for _, k := range kernels(t) {
			t.Run(c.name+"/"+k.Name(), func(t *testing.T) {
				got, err := bmm.MM2IntWith(k, a, b)
				require.NoError(t, err)
				assert.Equal(t, want, got, "MulInt")
				gotF, err := bmm.MM2FloatWith(k, a, b, ep)
				require.NoError(t, err)
				assert.Equal(t, wantF, gotF, "MulFloat")
				gotR, err := bmm.MM2BitWith(k, a, b, 3, rq, bittensor.ByRows, bittensor.DefaultPadding, ep)
				require.NoError(t, err)
				assert.True(t, wantR.Equal(gotR), "MulBit by rows")
				gotC, err := bmm.MM2BitWith(k, a, b, 3, rq, bittensor.ByCols, bittensor.Padding{Lines: 1, Bits: 64}, ep)
				require.NoError(t, err)
				assert.True(t, wantC.Equal(gotC), "MulBit by columns")
			})
		}
	}
}

func randScale(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.Float64()*2 - 0.5)
	}
	return s
}

func TestKernelErrors(t *testing.T) {
	k, err := NewKernel("")
	require.NoError(t, err)
	a, err := bittensor.PackRows(make([]int32, 6), 2, 3, 1)
	require.NoError(t, err)
	b, err := bittensor.PackCols(make([]int32, 12), 3, 4, 2)
	require.NoError(t, err)
	assert.ErrorIs(t, k.MulInt(make([]int32, 7), a, b), bmm.ErrShape)
	assert.ErrorIs(t, k.MulFloat(make([]float32, 7), a, b, nil), bmm.ErrShape)
	assert.ErrorIs(t, k.MulInt(make([]int32, 8), b, a), bmm.ErrPacking)
	dst, err := bittensor.New(3, 4, 2, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.ErrorIs(t, k.MulBit(dst, a, b, nil, bmm.Requant{Scale: 1}), bmm.ErrShape)
	assert.ErrorIs(t, k.MulFloat(make([]float32, 8), a, b, &bmm.Epilogue{ColBias: make([]float32, 3)}), bmm.ErrShape)
}

func TestTranspose64(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for nbits := 1; nbits <= 32; nbits++ {
		var vals [64]uint32
		for j := range vals {
			vals[j] = uint32(r.Uint64() & (1<<nbits - 1))
		}
		var planes [bittensor.MaxBits]uint64
		transpose64(&planes, &vals, nbits)
		for p := 0; p < nbits; p++ {
			var want uint64
			for j, v := range vals {
				want |= uint64(v>>p&1) << j
			}
			require.Equal(t, want, planes[p], "bits=%d plane %d", nbits, p)
		}
	}
}

// TestAddChainCount checks that the clock calibration loop returns the
// number of steps it ran (ClockHz divides by it), with and without
// assembly.
func TestAddChainCount(t *testing.T) {
	for _, n := range []int{0, 1, 7, 256} {
		assert.Equal(t, 64*n, addChain(n), "n=%d", n)
	}
}
