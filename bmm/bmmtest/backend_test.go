package bmmtest_test

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/quantize"
)

// The generic backend is the suite's reference, so it is checked here
// against direct computations: the Generic kernel's MM2* on the same
// tensors, aggregations as dense products with the packed weight matrix,
// row sums as quantize.LineSums, Argmax as layers.Argmax.

func genVals(r *rand.Rand, n, bits int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(uint32(r.Uint64() & (1<<bits - 1)))
	}
	return v
}

func pack(t *testing.T, vals []int32, rows, cols, bits int, p bittensor.Packing) *bittensor.Tensor {
	x, err := bittensor.Pack(vals, rows, cols, bits, p, bittensor.DefaultPadding)
	require.NoError(t, err)
	return x
}

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// upEpi uploads ep's vectors to b.
func upEpi(t *testing.T, b bmm.Backend, ep *bmm.Epilogue) *bmm.Epi {
	up := func(s []float32) bmm.Vector {
		if s == nil {
			return nil
		}
		v, err := b.UploadVector(s)
		require.NoError(t, err)
		return v
	}
	return &bmm.Epi{ColScale: up(ep.ColScale), RowTerm: up(ep.RowTerm), ColTerm: up(ep.ColTerm),
		ColConst: up(ep.ColConst), RowScale: up(ep.RowScale), ColBias: up(ep.ColBias), ReLU: ep.ReLU}
}

func readAll(t *testing.T, b bmm.Backend, v bmm.Vector) []float32 {
	out := make([]float32, v.Len())
	require.NoError(t, b.ReadVector(out, v))
	return out
}

func TestGenericBackendMatchesKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	b := bmm.NewGenericBackend()
	defer b.Close()
	for i := 0; i < 40; i++ {
		m, k, n := r.IntN(70), r.IntN(300), r.IntN(70)
		ab, bb, ob := 1+r.IntN(8), 1+r.IntN(8), 1+r.IntN(32)
		at := pack(t, genVals(r, m*k, ab), m, k, ab, bittensor.ByRows)
		bt := pack(t, genVals(r, k*n, bb), k, n, bb, bittensor.ByCols)
		ep := &bmm.Epilogue{ColScale: randFloats(r, n), RowTerm: randFloats(r, m), ColTerm: randFloats(r, n), ColBias: randFloats(r, n), ReLU: i%2 == 0}
		rq := bmm.Requant{Scale: 0.01 * float32(1+r.IntN(100)), Offset: float32(r.IntN(20)) - 5}
		a, err := b.UploadBits(at)
		require.NoError(t, err)
		w, err := b.UploadBits(bt)
		require.NoError(t, err)
		e := upEpi(t, b, ep)

		want, err := bmm.MM2FloatWith(bmm.Generic{}, at, bt, ep)
		require.NoError(t, err)
		y, err := b.NewVector(m * n)
		require.NoError(t, err)
		require.NoError(t, b.MulFloat(y, a, w, e))
		assert.Equal(t, want, readAll(t, b, y), "MulFloat %d×%d·%d×%d", m, k, k, n)

		for _, p := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			wantBits, err := bmm.MM2BitWith(bmm.Generic{}, at, bt, ob, rq, p, bittensor.DefaultPadding, ep)
			require.NoError(t, err)
			d, err := b.NewBits(m, n, ob, p)
			require.NoError(t, err)
			require.NoError(t, b.MulBit(d, a, w, e, rq))
			got, err := b.ReadBits(d)
			require.NoError(t, err)
			assert.True(t, wantBits.Equal(got), "MulBit %d×%d·%d×%d into %v", m, k, k, n, p)
		}
		cb := 1 + r.IntN(8)
		wantCodes, err := bmm.MM2BitWith(bmm.Generic{}, at, bt, cb, rq, bittensor.ByRows, bittensor.DefaultPadding, ep)
		require.NoError(t, err)
		c, err := b.NewCodes(m, n, cb)
		require.NoError(t, err)
		require.NoError(t, b.MulCodes(c, a, w, e, rq))
		codes := make([]uint8, m*n)
		require.NoError(t, b.ReadCodes(codes, c))
		for j, v := range wantCodes.Ints() {
			require.Equal(t, uint8(v), codes[j], "MulCodes code %d", j)
		}

		sums, err := b.NewVector(m)
		require.NoError(t, err)
		require.NoError(t, b.RowSums(sums, a))
		for j, s := range quantize.LineSums(at) {
			require.Equal(t, float32(s), readAll(t, b, sums)[j], "row sum %d", j)
		}
	}
}

// TestGenericBackendWide checks products past int32 against exact int64
// sums (values and K kept so that every sum is below 2^53).
func TestGenericBackendWide(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	b := bmm.NewGenericBackend()
	defer b.Close()
	for _, w := range [][2]int{{16, 16}, {32, 8}, {8, 32}, {20, 12}, {16, 9}} {
		m, k, n := 1+r.IntN(20), 1+r.IntN(300), 1+r.IntN(20)
		av, bv := genVals(r, m*k, w[0]), genVals(r, k*n, w[1])
		at, bt := pack(t, av, m, k, w[0], bittensor.ByRows), pack(t, bv, k, n, w[1], bittensor.ByCols)
		a, err := b.UploadBits(at)
		require.NoError(t, err)
		bb, err := b.UploadBits(bt)
		require.NoError(t, err)
		y, err := b.NewVector(m * n)
		require.NoError(t, err)
		require.NoError(t, b.MulFloat(y, a, bb, nil))
		got := readAll(t, b, y)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s int64
				for l := 0; l < k; l++ {
					s += int64(uint32(av[i*k+l])) * int64(uint32(bv[l*n+j]))
				}
				require.Equal(t, float32(s), got[i*n+j], "%d×%d bits, K=%d, (%d, %d)", w[0], w[1], k, i, j)
			}
		}
	}
	ga, gb := bmm.PlaneGroups(1000, 32, 32)
	assert.True(t, bmm.Fits(1000, ga, gb), "PlaneGroups(1000, 32, 32) = %d, %d", ga, gb)
	ga, gb = bmm.PlaneGroups(100, 8, 8)
	assert.Equal(t, [2]int{8, 8}, [2]int{ga, gb}, "a product that fits keeps its widths")
}

// TestGenericBackendAggIsDenseProduct checks aggregations against the
// dense product of the graph's weight matrix (1-bit without weights) and
// the codes: rows list each source at most once here, so the matrix holds
// the weights themselves.
func TestGenericBackendAggIsDenseProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	b := bmm.NewGenericBackend()
	defer b.Close()
	for i := 0; i < 30; i++ {
		rows, src, cols, bits := r.IntN(80), 1+r.IntN(80), r.IntN(40), 1+r.IntN(8)
		wbits := r.IntN(9) // 0: no weights
		g := &bmm.Graph{Indptr: []int32{0}}
		dense := make([]int32, rows*src)
		if wbits > 0 {
			g.Weights, g.WeightBits = []uint8{}, wbits
		}
		for v := 0; v < rows; v++ {
			for u := 0; u < src; u++ {
				if r.IntN(6) != 0 {
					continue
				}
				wt := 1
				if wbits > 0 {
					wt = r.IntN(1 << wbits)
					g.Weights = append(g.Weights, uint8(wt))
				}
				g.Indices = append(g.Indices, int32(u))
				dense[v*src+u] = int32(wt)
			}
			g.Indptr = append(g.Indptr, int32(len(g.Indices)))
		}
		xv := genVals(r, src*cols, bits)
		xc := make([]uint8, len(xv))
		for j, v := range xv {
			xc[j] = uint8(v)
		}
		at := pack(t, dense, rows, src, max(wbits, 1), bittensor.ByRows)
		xt := pack(t, xv, src, cols, bits, bittensor.ByCols)
		ep := &bmm.Epilogue{RowScale: randFloats(r, rows), ColBias: randFloats(r, cols), ReLU: true}
		rq := bmm.Requant{Scale: 0.1, Offset: 1}

		go_, err := b.UploadGraph(g, src)
		require.NoError(t, err)
		x, err := b.UploadCodes(xc, src, cols, bits)
		require.NoError(t, err)
		e := upEpi(t, b, ep)
		want, err := bmm.MM2FloatWith(bmm.Generic{}, at, xt, ep)
		require.NoError(t, err)
		y, err := b.NewVector(rows * cols)
		require.NoError(t, err)
		require.NoError(t, b.AggFloat(y, go_, x, e))
		assert.Equal(t, want, readAll(t, b, y), "AggFloat case %d", i)

		wantBits, err := bmm.MM2BitWith(bmm.Generic{}, at, xt, 5, rq, bittensor.ByCols, bittensor.DefaultPadding, ep)
		require.NoError(t, err)
		d, err := b.NewBits(rows, cols, 5, bittensor.ByCols)
		require.NoError(t, err)
		require.NoError(t, b.AggBit(d, go_, x, e, rq))
		got, err := b.ReadBits(d)
		require.NoError(t, err)
		assert.True(t, wantBits.Equal(got), "AggBit case %d", i)

		c, err := b.NewCodes(rows, cols, 5)
		require.NoError(t, err)
		require.NoError(t, b.AggCodes(c, go_, x, e, rq))
		codes := make([]uint8, rows*cols)
		require.NoError(t, b.ReadCodes(codes, c))
		for j, v := range wantBits.Ints() {
			require.Equal(t, uint8(v), codes[j], "AggCodes case %d code %d", i, j)
		}
	}
}

// TestArgmaxRowIsQArgmax: the backends' argmax is the one predictions
// came from before the redesign, ties, NaN, signed zeros and all.
func TestArgmaxRowIsQArgmax(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	pool := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, cols := range []int{1, 2, 3, 5, 8, 17} {
		rows := 500
		logits := make([]float32, rows*cols)
		for i := range logits {
			logits[i] = pool[r.IntN(len(pool))]
		}
		nodes := make([]int32, rows)
		for i := range nodes {
			nodes[i] = int32(i)
		}
		want := make([]int32, rows)
		layers.Argmax(want, logits, cols, nodes)
		b := bmm.NewGenericBackend()
		v, err := b.UploadVector(logits)
		require.NoError(t, err)
		got := make([]int32, rows)
		require.NoError(t, b.Argmax(got, v, cols))
		require.Equal(t, want, got, "%d columns", cols)
	}
}

// brokenBackend is the generic backend with one deliberate bug; the suite
// must catch each.
type brokenBackend struct {
	bmm.Backend
	bug string
}

func (b brokenBackend) Argmax(dst []int32, logits bmm.Vector, cols int) error {
	if err := b.Backend.Argmax(dst, logits, cols); err != nil || b.bug != "lasttie" {
		return err
	}
	v := make([]float32, logits.Len())
	_ = b.Backend.ReadVector(v, logits)
	for r := range dst {
		for j := cols - 1; j >= 0; j-- {
			if v[r*cols+j] == v[r*cols+int(dst[r])] {
				dst[r] = int32(j)
				break
			}
		}
	}
	return nil
}

func (b brokenBackend) ArgmaxTo(dst bmm.Ints, at bmm.Index, logits bmm.Vector, cols int) error {
	if b.bug != "argmaxrows" {
		return b.Backend.ArgmaxTo(dst, at, logits, cols)
	}
	// Each row written at its own position instead of its index.
	pred := make([]int32, at.Len())
	if err := b.Backend.Argmax(pred, logits, cols); err != nil {
		return err
	}
	copy(dst.(*bmm.HostInts).V, pred)
	return nil
}

func (b brokenBackend) AggFloat(dst bmm.Vector, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi) error {
	if b.bug == "noepilogue" {
		ep = nil // the float output changes whenever an epilogue is set
	}
	return b.Backend.AggFloat(dst, g, x, ep)
}

func (b brokenBackend) MulCodes(dst bmm.Codes, a, w bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	if b.bug == "rqoffset" {
		rq.Offset += 0.5
	}
	return b.Backend.MulCodes(dst, a, w, ep, rq)
}

func (b brokenBackend) RowSums(dst bmm.Vector, a bmm.Bits) error {
	if b.bug == "rowsums" && a.Bits() > 8 {
		return nil // leaves the destination as it was
	}
	return b.Backend.RowSums(dst, a)
}

func (b brokenBackend) MulBit(dst bmm.Bits, a, w bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	if b.bug == "nomulbit" {
		return nil
	}
	return b.Backend.MulBit(dst, a, w, ep, rq)
}

func (b brokenBackend) AddCodes(dst bmm.Codes, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	if b.bug == "addrelu" {
		relu = !relu
	}
	return b.Backend.AddCodes(dst, x, y, relu, rq)
}

// TestBackendMutantsAreCaught runs TestBackend on each broken backend in a
// child process and requires it to fail, naming the seed.
func TestBackendMutantsAreCaught(t *testing.T) {
	if bug := os.Getenv("BMMTEST_BACKEND_MUTANT"); bug != "" {
		bmmtest.TestBackend(t, func(*testing.T) bmm.Backend { return brokenBackend{bmm.NewGenericBackend(), bug} })
		return
	}
	if testing.Short() {
		t.Skip("runs the suite seven more times in child processes; not in -short")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, bug := range []string{"lasttie", "noepilogue", "rqoffset", "rowsums", "nomulbit", "addrelu", "argmaxrows"} {
		t.Run(bug, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestBackendMutantsAreCaught$", "-test.short")
			cmd.Env = append(os.Environ(), "BMMTEST_BACKEND_MUTANT="+bug)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed a backend with bug %q:\n%s", bug, out)
			assert.Contains(t, string(out), `bmmtest: backend "generic" failed with seed`)
		})
	}
}
