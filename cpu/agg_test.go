package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// aggCase is a random sparse 0/1 matrix A (m×k, as CSR and packed by rows)
// and k×d codes X (as Codes and packed by columns).
type aggCase struct {
	a    Adj
	g    CSR     // a's lists
	w    []uint8 // a's weights, nil for ones
	adj  *bittensor.Tensor
	x    Codes
	xt   *bittensor.Tensor
	m, d int
}

// newAggCase makes the case; wbits > 0 gives A weights of that width
// (entries in 1..2^wbits-1, the largest often), 0 a 0/1 matrix.
func newAggCase(t testing.TB, r *rand.Rand, m, k, d, bits, wbits int, deg float64) aggCase {
	a := struct {
		CSR
		W []uint8
	}{CSR: CSR{Indptr: make([]int32, m+1)}}
	adjVals := make([]int32, m*k)
	for v := 0; v < m; v++ {
		for u := 0; u < k; u++ {
			if r.Float64() < deg/float64(max(k, 1)) {
				a.Indices = append(a.Indices, int32(u))
				w := 1
				if wbits > 0 {
					w = 1 + r.IntN(1<<wbits-1)
					if r.IntN(3) == 0 {
						w = 1<<wbits - 1
					}
					a.W = append(a.W, uint8(w))
				}
				adjVals[v*k+u] = int32(w)
			}
		}
		a.Indptr[v+1] = int32(len(a.Indices))
	}
	if wbits > 0 && a.W == nil {
		a.W = []uint8{}
	}
	adj, err := bittensor.PackRows(adjVals, m, k, max(wbits, 1))
	require.NoError(t, err)
	op, err := NewAdj(a.CSR, a.W, wbits, k)
	require.NoError(t, err)
	vals := make([]int32, k*d)
	for u := 0; u < k; u++ {
		for j := 0; j < d; j++ {
			c := r.IntN(1 << bits)
			if r.IntN(4) == 0 {
				c = 1<<bits - 1 // the largest codes stress the partial sums
			}
			vals[u*d+j] = int32(c)
		}
	}
	x, err := CodesFromInts(vals, k, d, bits)
	require.NoError(t, err)
	xt, err := bittensor.PackCols(vals, k, d, bits)
	require.NoError(t, err)
	return aggCase{a: op, g: a.CSR, w: a.W, adj: adj, x: x, xt: xt, m: m, d: d}
}

// naiveAgg is A·X in int64 from the CSR lists.
func naiveAgg(c aggCase) []int32 {
	out := make([]int32, c.m*c.d)
	for v := 0; v < c.m; v++ {
		for p := c.g.Indptr[v]; p < c.g.Indptr[v+1]; p++ {
			w := int32(1)
			if c.w != nil {
				w = int32(c.w[p])
			}
			for j := 0; j < c.d; j++ {
				out[v*c.d+j] += w * int32(c.x.At(int(c.g.Indices[p]), j))
			}
		}
	}
	return out
}

// withAggAsm runs fn with the assembly kernel on or off.
func withAggAsm(t *testing.T, on bool, fn func()) {
	old := useAggAVX2
	useAggAVX2 = on && old
	defer func() { useAggAVX2 = old }()
	fn()
}

func aggPaths() []bool {
	if useAggAVX2 {
		return []bool{false, true}
	}
	return []bool{false}
}

func TestAggMatchesBitProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	gen, err := NewKernel("generic")
	require.NoError(t, err)
	for _, asm := range aggPaths() {
		for _, sh := range []struct{ m, k, d int }{
			{0, 5, 3}, {1, 1, 1}, {5, 7, 16}, {63, 64, 15}, {64, 65, 17}, {65, 130, 64},
			{70, 100, 65}, {129, 257, 80}, {40, 300, 130}, {200, 200, 5},
		} {
			for _, bits := range [][2]int{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {7, 0}, {8, 0}, {1, 1}, {4, 4}, {8, 3}, {3, 8}, {8, 8}} {
				name := fmt.Sprintf("asm=%v/m=%d/k=%d/d=%d/bits=%d/wbits=%d", asm, sh.m, sh.k, sh.d, bits[0], bits[1])
				t.Run(name, func(t *testing.T) {
					c := newAggCase(t, r, sh.m, sh.k, sh.d, bits[0], bits[1], 6)
					withAggAsm(t, asm, func() {
						want := naiveAgg(c)
						got := make([]int32, sh.m*sh.d)
						require.NoError(t, AggInt(got, c.a, c.x))
						assert.Equal(t, want, got, "AggInt")

						dense, err := bmm.MM2IntWith(gen, c.adj, c.xt)
						require.NoError(t, err)
						assert.Equal(t, dense, got, "the bit product of the packed adjacency")

						ep := &bmm.Epilogue{ColScale: randScale(r, sh.d), RowTerm: randScale(r, sh.m),
							ColTerm: randScale(r, sh.d), RowScale: randScale(r, sh.m), ColBias: randScale(r, sh.d), ReLU: true}
						if sh.m == 0 {
							ep.RowTerm, ep.ColTerm, ep.RowScale = nil, nil, nil
						}
						wantF, err := bmm.MM2FloatWith(gen, c.adj, c.xt, ep)
						require.NoError(t, err)
						gotF := make([]float32, sh.m*sh.d)
						require.NoError(t, AggFloat(gotF, c.a, c.x, ep))
						assert.Equal(t, wantF, gotF, "AggFloat")

						rq := bmm.Requant{Scale: 0.37, Offset: 0.25}
						for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
							wantB, err := bmm.MM2BitWith(gen, c.adj, c.xt, 3, rq, packing, bittensor.DefaultPadding, ep)
							require.NoError(t, err)
							gotB, err := bittensor.New(sh.m, sh.d, 3, packing, bittensor.DefaultPadding)
							require.NoError(t, err)
							require.NoError(t, AggBit(gotB, c.a, c.x, ep, rq))
							assert.True(t, wantB.Equal(gotB), "AggBit %v", packing)
						}

						gotC, err := NewCodes(sh.m, sh.d, 3)
						require.NoError(t, err)
						require.NoError(t, AggCodes(gotC, c.a, c.x, ep, rq))
						wantC, err := bmm.MM2BitWith(gen, c.adj, c.xt, 3, rq, bittensor.ByRows, bittensor.DefaultPadding, ep)
						require.NoError(t, err)
						assert.Equal(t, wantC.Ints(), gotC.Ints(), "AggCodes")
					})
				})
			}
		}
	}
}

// TestAggLongRows sums more sources than a byte or a uint16 can hold, so
// the kernels must flush their partial sums.
func TestAggLongRows(t *testing.T) {
	for _, asm := range aggPaths() {
		for _, bits := range []int{1, 4, 8} {
			t.Run(fmt.Sprintf("asm=%v/bits=%d", asm, bits), func(t *testing.T) {
				const k, d = 3000, 80
				vals := make([]int32, k*d)
				for i := range vals {
					vals[i] = 1<<bits - 1
				}
				x, err := CodesFromInts(vals, k, d, bits)
				require.NoError(t, err)
				g := CSR{Indptr: []int32{0, 2 * k}}
				for rep := 0; rep < 2; rep++ { // each source twice
					for u := 0; u < k; u++ {
						g.Indices = append(g.Indices, int32(u))
					}
				}
				a, err := NewAdj(g, nil, 0, k)
				require.NoError(t, err)
				got := make([]int32, d)
				withAggAsm(t, asm, func() { require.NoError(t, AggInt(got, a, x)) })
				for j, v := range got {
					require.Equal(t, int32(2*k*(1<<bits-1)), v, "column %d", j)
				}
				// Weighted by the largest 8-bit code: a flush after every source.
				w := make([]uint8, len(g.Indices))
				for i := range w {
					w[i] = 255
				}
				a, err = NewAdj(g, w, 8, k)
				require.NoError(t, err)
				withAggAsm(t, asm, func() { require.NoError(t, AggInt(got, a, x)) })
				for j, v := range got {
					require.Equal(t, int32(2*k*255*(1<<bits-1)), v, "weighted: column %d", j)
				}
			})
		}
	}
}

func TestAggErrors(t *testing.T) {
	x, err := NewCodes(3, 4, 2)
	require.NoError(t, err)
	g := CSR{Indptr: []int32{0, 1, 2}, Indices: []int32{0, 2}}
	a, err := NewAdj(g, nil, 0, 3)
	require.NoError(t, err)
	dst := make([]int32, 8)
	require.NoError(t, AggInt(dst, a, x))

	_, err = NewAdj(CSR{Indptr: []int32{0, 1, 2}, Indices: []int32{0, 3}}, nil, 0, 3)
	assert.ErrorIs(t, err, ErrCSR, "source outside X")
	_, err = NewAdj(g, []uint8{1, 4}, 2, 3)
	assert.ErrorContains(t, err, "weight 4 of entry 1 does not fit 2 bits")
	_, err = NewAdj(g, []uint8{1}, 2, 3)
	assert.ErrorIs(t, err, ErrCodes, "one weight short")
	assert.ErrorIs(t, AggInt(dst[:7], a, x), ErrCodes, "short dst")
	assert.ErrorContains(t, AggInt(dst, Adj{}, x), "not made by NewAdj")
	short, err := NewCodes(2, 4, 2)
	require.NoError(t, err)
	assert.ErrorContains(t, AggInt(dst, a, short), "the adjacency takes 3 rows")

	_, err = CodesFromInts([]int32{0, 1, 4, 0}, 2, 2, 2)
	assert.ErrorIs(t, err, ErrCodes)
	assert.ErrorContains(t, err, "value 4 at index 2 (row 1, column 0)")
	_, err = CodesFromInts([]int32{0, 1, 2}, 2, 2, 2)
	assert.ErrorIs(t, err, ErrCodes, "short")
	assert.ErrorContains(t, AggInt(dst, a, Codes{Rows: 3, Cols: 4, Bits: 2, Stride: 16}), "X is 3×4", "no storage")

	_, err = NewCodes(2, 2, 9)
	assert.ErrorIs(t, err, ErrCodes)

	// A row whose sum could pass 2^31-1 is refused up front.
	wide, err := NewCodes(1, 1, 8)
	require.NoError(t, err)
	n := (1<<31-1)/255 + 1
	long, err := NewAdj(CSR{Indptr: []int32{0, int32(n)}, Indices: make([]int32, n)}, nil, 0, 1)
	require.NoError(t, err)
	err = AggInt(make([]int32, 1), long, wide)
	assert.ErrorIs(t, err, ErrCodes)
	assert.ErrorContains(t, err, "overflow int32")
}

// TestMulCodes checks the fused product into byte codes against MulBit on
// every kernel path.
func TestMulCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, path := range []string{"generic", ""} {
		k, err := NewKernel(path)
		require.NoError(t, err)
		for _, sh := range []struct{ m, k, n, a, b, out int }{{1, 1, 1, 1, 1, 1}, {70, 64, 5, 4, 4, 4}, {130, 300, 10, 2, 3, 8}, {64, 256, 64, 1, 8, 3}} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", k.Name(), sh.m, sh.k, sh.n), func(t *testing.T) {
				a, err := bittensor.PackRows(randInts(r, sh.m*sh.k, sh.a, 0.5), sh.m, sh.k, sh.a)
				require.NoError(t, err)
				b, err := bittensor.PackCols(randInts(r, sh.k*sh.n, sh.b, 0.5), sh.k, sh.n, sh.b)
				require.NoError(t, err)
				ep := &bmm.Epilogue{ColScale: randScale(r, sh.n), RowScale: randScale(r, sh.m), ReLU: true}
				rq := bmm.Requant{Scale: 0.05, Offset: 0.5}
				want, err := bmm.MM2BitWith(k, a, b, sh.out, rq, bittensor.ByRows, bittensor.DefaultPadding, ep)
				require.NoError(t, err)
				got, err := NewCodes(sh.m, sh.n, sh.out)
				require.NoError(t, err)
				require.NoError(t, k.MulCodes(got, a, b, ep, rq))
				assert.Equal(t, want.Ints(), got.Ints())
				wrong, err := NewCodes(sh.m+1, sh.n, sh.out)
				require.NoError(t, err)
				assert.ErrorIs(t, k.MulCodes(wrong, a, b, ep, rq), ErrCodes)
			})
		}
	}
}

// NewCodesIn reuses storage that can hold the shape (cleared), allocates
// otherwise, and rejects what NewCodes rejects.
func TestNewCodesIn(t *testing.T) {
	vals := make([]int32, 50*70)
	for i := range vals {
		vals[i] = int32(i % 16)
	}
	old, err := CodesFromInts(vals, 50, 70, 4)
	require.NoError(t, err)
	c, err := NewCodesIn(old, 30, 20, 2)
	require.NoError(t, err)
	assert.Equal(t, &old.data[0], &c.data[0], "reuses the storage")
	assert.Equal(t, []int{30, 20, 2}, []int{c.Rows, c.Cols, c.Bits})
	assert.Equal(t, make([]int32, 30*20), c.Ints(), "cleared")
	grown, err := NewCodesIn(c, 100, 70, 8)
	require.NoError(t, err)
	assert.Equal(t, make([]int32, 100*70), grown.Ints())
	_, err = NewCodesIn(old, 3, 3, 9)
	assert.ErrorIs(t, err, ErrCodes)
	_, err = NewCodesIn(old, -1, 3, 2)
	assert.ErrorIs(t, err, ErrCodes)
}

// TestAggBitDirtyDestination: a destination large enough for clearWords to
// split its clearing over the cores, filled with ones first (a pooled
// output of an earlier pass), gets the same bits as a fresh one.
func TestAggBitDirtyDestination(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const m, k, d = 3000, 200, 64
	c := newAggCase(t, r, m, k, d, 4, 0, 6)
	ep := &bmm.Epilogue{ColScale: randScale(r, d), ReLU: true}
	rq := bmm.Requant{Scale: 0.37, Offset: 0.25}
	for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
		want, err := bittensor.New(m, d, 8, packing, bittensor.DefaultPadding)
		require.NoError(t, err)
		require.NoError(t, AggBit(want, c.a, c.x, ep, rq))
		got, err := bittensor.New(m, d, 8, packing, bittensor.DefaultPadding)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(got.Words()), 2*clearWordsGrain)
		for i := range got.Words() {
			got.Words()[i] = ^uint64(0)
		}
		require.NoError(t, AggBit(got, c.a, c.x, ep, rq))
		assert.True(t, want.Equal(got), "%v", packing)
	}
}

// TestNewAdjOnCores: a large graph's checks on the cores give NewAdj's Adj,
// and a graph they refuse gets NewAdj's error (never a panic).
func TestNewAdjOnCores(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2))
	const m, nsrc = 5000, 3000
	g := CSR{Indptr: make([]int32, m+1)}
	for v := 0; v < m; v++ {
		for range r.IntN(30) {
			g.Indices = append(g.Indices, int32(r.IntN(nsrc)))
		}
		g.Indptr[v+1] = int32(len(g.Indices))
	}
	require.GreaterOrEqual(t, len(g.Indices), adjParEntries)
	w := make([]uint8, len(g.Indices))
	for i := range w {
		w[i] = uint8(1 + r.IntN(7))
	}
	for _, ws := range [][]uint8{nil, w} {
		want, err := NewAdj(g, ws, 3, nsrc)
		require.NoError(t, err)
		got, err := newAdj(g, ws, 3, nsrc, true)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	clone := func() CSR {
		return CSR{Indptr: append([]int32(nil), g.Indptr...), Indices: append([]int32(nil), g.Indices...)}
	}
	bad := map[string]func() (CSR, []uint8, int){
		"index past nsrc":     func() (CSR, []uint8, int) { c := clone(); c.Indices[len(c.Indices)-1] = nsrc; return c, nil, 3 },
		"negative index":      func() (CSR, []uint8, int) { c := clone(); c.Indices[7] = -1; return c, nil, 3 },
		"indptr falls":        func() (CSR, []uint8, int) { c := clone(); c.Indptr[m/2] = c.Indptr[m/2+1] + 1; return c, nil, 3 },
		"indptr past end":     func() (CSR, []uint8, int) { c := clone(); c.Indptr[10] = int32(len(c.Indices) + 5); return c, nil, 3 },
		"negative indptr":     func() (CSR, []uint8, int) { c := clone(); c.Indptr[m-3] = -4; return c, nil, 3 },
		"weight too wide":     func() (CSR, []uint8, int) { ww := append([]uint8(nil), w...); ww[len(ww)-1] = 8; return g, ww, 3 },
		"weight bits 0":       func() (CSR, []uint8, int) { return g, w, 0 },
		"weights short":       func() (CSR, []uint8, int) { return g, w[1:], 3 },
		"last indptr differs": func() (CSR, []uint8, int) { c := clone(); c.Indptr[m]--; return c, nil, 3 },
	}
	for name, mk := range bad {
		t.Run(name, func(t *testing.T) {
			c, ws, bits := mk()
			_, want := NewAdj(c, ws, bits, nsrc)
			require.Error(t, want)
			_, got := newAdj(c, ws, bits, nsrc, true)
			assert.Equal(t, want, got)
		})
	}
}
