package tcu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// fakeBits is a resident operand of be that no op may reach the device
// with: for the checks made before any launch.
func fakeBits(be *Backend, rows, cols, bits int, p bittensor.Packing) *devBits {
	b := &devBits{rows: rows, cols: cols, bits: bits, packing: p, lay: bitsLayout(rows, cols, p)}
	b.devMem = devMem{be: be, buf: &Buffer{}}
	return b
}

// TestBackendHost checks, without a GPU, the layout of outputs, the
// checks every op makes before it launches, and the cost model.
func TestBackendHost(t *testing.T) {
	for _, s := range [][2]int{{0, 0}, {1, 1}, {15, 255}, {17, 256}, {65, 257}, {300, 1000}} {
		for _, p := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			ref, err := bittensor.New(s[0], s[1], 3, p, bittensor.DefaultPadding)
			require.NoError(t, err)
			l := bitsLayout(s[0], s[1], p)
			assert.Equal(t, ref.PaddedLines(), l.lines, "%v %v", s, p)
			assert.Equal(t, ref.LineWords(), l.lw, "%v %v", s, p)
			assert.Equal(t, layoutOf(ref), l, "%v %v: an output is read as the next operand as it lies", s, p)
		}
	}

	be := &Backend{live: map[*devMem]struct{}{}}
	other := &Backend{live: map[*devMem]struct{}{}}
	a := fakeBits(be, 70, 300, 4, bittensor.ByRows)
	b := fakeBits(be, 300, 20, 4, bittensor.ByCols)
	dst := fakeBits(be, 70, 20, 2, bittensor.ByRows)
	freed := fakeBits(be, 300, 20, 4, bittensor.ByCols)
	freed.buf = nil
	for name, c := range map[string]struct {
		err  error
		call func() error
	}{
		"A by columns": {bmm.ErrPacking, func() error { return be.MulBit(dst, b, b, nil, bmm.Requant{}) }},
		"K differs":    {bmm.ErrShape, func() error { return be.MulBit(dst, a, fakeBits(be, 299, 20, 4, bittensor.ByCols), nil, bmm.Requant{}) }},
		"destination":  {bmm.ErrShape, func() error { return be.MulBit(fakeBits(be, 70, 21, 2, bittensor.ByRows), a, b, nil, bmm.Requant{}) }},
		"foreign B": {bmm.ErrForeign, func() error {
			return be.MulBit(dst, a, fakeBits(other, 300, 20, 4, bittensor.ByCols), nil, bmm.Requant{})
		}},
		"freed B": {bmm.ErrForeign, func() error { return be.MulBit(dst, a, freed, nil, bmm.Requant{}) }},
		"half term": {bmm.ErrShape, func() error {
			return be.MulBit(dst, a, b, &bmm.Epi{RowTerm: &devVector{devMem{be, &Buffer{}}, 70}}, bmm.Requant{})
		}},
		"epilogue length": {bmm.ErrShape, func() error {
			return be.MulBit(dst, a, b, &bmm.Epi{ColScale: &devVector{devMem{be, &Buffer{}}, 70}}, bmm.Requant{})
		}},
		"row sums by columns": {bmm.ErrPacking, func() error { return be.RowSums(&devVector{devMem{be, &Buffer{}}, 300}, b) }},
		"argmax shape":        {bmm.ErrShape, func() error { return be.Argmax(make([]int32, 3), &devVector{devMem{be, &Buffer{}}, 10}, 3) }},
		"codes too wide":      {bmm.ErrRange, func() error { _, err := be.UploadCodes([]uint8{1, 9}, 1, 2, 3); return err }},
		"graph index": {bmm.ErrShape, func() error {
			_, err := be.UploadGraph(&bmm.Graph{Indptr: []int32{0, 1}, Indices: []int32{5}}, 5)
			return err
		}},
		"graph indptr": {bmm.ErrShape, func() error {
			_, err := be.UploadGraph(&bmm.Graph{Indptr: []int32{0, 2, 1}, Indices: []int32{0}}, 5)
			return err
		}},
	} {
		err := c.call()
		assert.ErrorIs(t, err, c.err, name)
	}

	// The cost model: a sparse batch (few edges per non-zero tile) takes
	// the edge list, a dense block the tensor cores.
	assert.True(t, be.PreferEdges(bmm.AggCost{Rows: 4096, Cols: 64, Edges: 40000, DenseTiles: 20000, Bits: 4}))
	assert.False(t, be.PreferEdges(bmm.AggCost{Rows: 4096, Cols: 64, Edges: 4096 * 4096 / 2, DenseTiles: 64 * 16, Bits: 4}))

	t.Run("device", func(t *testing.T) {
		k := gpuKernel(t) // skips with the reason where there is no GPU
		be, err := NewBackend(k)
		require.NoError(t, err)
		defer be.Close()
		assert.Equal(t, "tcu/mma", be.Name())
	})
}

// peek copies device bytes back without counting them as the backend's
// traffic: the tests' window on outputs the contract keeps on the device.
func peek(t *testing.T, be *Backend, m *devMem, n int) []byte {
	t.Helper()
	out := make([]byte, n)
	require.NoError(t, be.d.run(func() error {
		if n == 0 {
			return nil
		}
		st, err := be.d.staging(n)
		if err != nil {
			return err
		}
		if err := be.d.dtoh(st.ptr, m.buf.ptr, n); err != nil {
			return err
		}
		if err := be.d.drv.do("cuStreamSynchronize", be.d.stream.h); err != nil {
			return err
		}
		copy(out, st.Bytes())
		return nil
	}))
	return out
}

func peekBits(t *testing.T, be *Backend, b bmm.Bits) *bittensor.Tensor {
	d := b.(*devBits)
	out, err := bittensor.New(d.rows, d.cols, d.bits, d.packing, bittensor.DefaultPadding)
	require.NoError(t, err)
	raw := peek(t, be, &d.devMem, 8*len(out.Words()))
	copy(asBytes(out.Words()), raw)
	return out
}

func peekFloats(t *testing.T, be *Backend, v bmm.Vector) []float32 {
	d := v.(*devVector)
	out := make([]float32, d.n)
	copy(asBytes(out), peek(t, be, &d.devMem, 4*d.n))
	return out
}

// firstDiff returns the first index where got and want differ bit for bit, or -1.
func firstDiff[T comparable](got, want []T) int {
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return i
		}
	}
	return -1
}

func floatBits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

// randomEpi returns an m×n epilogue with the steps set in mask (bit i:
// ColScale, RowTerm+ColTerm, ColConst, RowScale, ColBias, ReLU), on the
// host and uploaded.
func randomEpi(t *testing.T, be *Backend, r *rand.Rand, m, n, mask int) (*bmm.Epilogue, *bmm.Epi) {
	vec := func(k int, lo, hi float32) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float32()
		}
		return v
	}
	h := &bmm.Epilogue{ReLU: mask&32 != 0}
	if mask&1 != 0 {
		h.ColScale = vec(n, 0.001, 0.05)
	}
	if mask&2 != 0 {
		h.RowTerm, h.ColTerm = vec(m, 0, 30), vec(n, -0.01, 0.01)
	}
	if mask&4 != 0 {
		h.ColConst = vec(n, -1, 1)
	}
	if mask&8 != 0 {
		h.RowScale = vec(m, 0.1, 1.3)
	}
	if mask&16 != 0 {
		h.ColBias = vec(n, -0.5, 0.5)
	}
	up := func(v []float32) bmm.Vector {
		if v == nil {
			return nil
		}
		d, err := be.UploadVector(v)
		require.NoError(t, err)
		return d
	}
	d := &bmm.Epi{ColScale: up(h.ColScale), RowTerm: up(h.RowTerm), ColTerm: up(h.ColTerm), ColConst: up(h.ColConst),
		RowScale: up(h.RowScale), ColBias: up(h.ColBias), ReLU: h.ReLU}
	return h, d
}

// randomTensor packs random codes; with sparse set, most 64-row by
// 256-column blocks are zero (the zero-tile lists then skip them).
func randomTensor(t *testing.T, r *rand.Rand, rows, cols, bits int, p bittensor.Packing, sparse bool) *bittensor.Tensor {
	vals := make([]int32, rows*cols)
	for i := range vals {
		if sparse && ((i/cols)/64+(i%cols)/256)%3 != 0 {
			continue
		}
		vals[i] = int32(r.IntN(1 << bits))
	}
	x, err := bittensor.Pack(vals, rows, cols, bits, p, bittensor.DefaultPadding)
	require.NoError(t, err)
	return x
}

// TestBackendProducts compares MulBit (both packings), MulCodes, MulFloat
// and RowSums with the host reference (bmm.Generic, Epilogue, Requant) bit
// for bit, over awkward sizes, widths 1..8 and every epilogue step.
func TestBackendProducts(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	r := rand.New(rand.NewPCG(15, 3))
	shapes := [][3]int{{1, 1, 1}, {63, 255, 33}, {65, 257, 64}, {257, 700, 65}, {130, 64, 8}, {16, 1024, 200}}
	widths := [][2]int{{1, 1}, {1, 8}, {8, 1}, {2, 3}, {3, 2}, {4, 4}, {5, 7}, {8, 8}, {1, 4}, {6, 2}, {7, 5}}
	for i, w := range widths {
		for j := 0; j < 2; j++ {
			s := shapes[(i+j*5)%len(shapes)]
			m, k, n := s[0], s[1], s[2]
			outBits := 1 + (i+3*j)%8
			mask := (i*7 + j*13) % 64
			name := fmt.Sprintf("a%d_b%d_%dx%dx%d_out%d_ep%02x", w[0], w[1], m, k, n, outBits, mask)
			t.Run(name, func(t *testing.T) {
				a := randomTensor(t, r, m, k, w[0], bittensor.ByRows, j == 1)
				b := randomTensor(t, r, k, n, w[1], bittensor.ByCols, false)
				hep, dep := randomEpi(t, be, r, m, n, mask)
				// A scale that spreads the outputs over the codes, and an
				// offset that sends some below 0 and some past the top.
				rq := bmm.Requant{Scale: float32(math.Exp2(float64(outBits))) / float32(1+k/4), Offset: -0.5}
				if mask&1 != 0 {
					rq.Scale = float32(math.Exp2(float64(outBits))) / 4
				}
				da, err := be.UploadBits(a)
				require.NoError(t, err)
				db, err := be.UploadBits(b)
				require.NoError(t, err)

				wantF := make([]float32, m*n)
				require.NoError(t, bmm.Generic{}.MulFloat(wantF, a, b, hep))
				gotF, err := be.NewVector(m * n)
				require.NoError(t, err)
				require.NoError(t, be.MulFloat(gotF, da, db, dep))
				assert.Equal(t, -1, firstDiff(floatBits(peekFloats(t, be, gotF)), floatBits(wantF)), "MulFloat")

				for _, p := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
					want, err := bittensor.New(m, n, outBits, p, bittensor.DefaultPadding)
					require.NoError(t, err)
					require.NoError(t, bmm.Generic{}.MulBit(want, a, b, hep, rq))
					got, err := be.NewBits(m, n, outBits, p)
					require.NoError(t, err)
					require.NoError(t, be.MulBit(got, da, db, dep, rq))
					assert.Equal(t, -1, firstDiff(peekBits(t, be, got).Words(), want.Words()), "MulBit by %v", p)
					if p == bittensor.ByRows && outBits <= 8 {
						codes, err := be.NewCodes(m, n, outBits)
						require.NoError(t, err)
						require.NoError(t, be.MulCodes(codes, da, db, dep, rq))
						wantC := make([]uint8, m*n)
						for x, v := range want.Ints() {
							wantC[x] = uint8(v)
						}
						assert.Equal(t, -1, firstDiff(peek(t, be, &codes.(*devCodes).devMem, m*n), wantC), "MulCodes")
					}
				}

				sums, err := be.NewVector(m)
				require.NoError(t, err)
				require.NoError(t, be.RowSums(sums, da))
				wantS := make([]float32, m)
				vals := a.Ints()
				for row := 0; row < m; row++ {
					var s int64
					for _, v := range vals[row*k : (row+1)*k] {
						s += int64(v)
					}
					wantS[row] = float32(s)
				}
				assert.Equal(t, -1, firstDiff(peekFloats(t, be, sums), wantS), "RowSums")
			})
		}
	}
}

// aggRef is G·X on the host: int32 sums, then each output's epilogue and,
// for codes, the quantizer (cpu.Agg*'s semantics).
func aggRef(g *bmm.Graph, x []uint8, cols int, ep *bmm.Epilogue) []float32 {
	rows := len(g.Indptr) - 1
	out := make([]float32, rows*cols)
	for v := 0; v < rows; v++ {
		for c := 0; c < cols; c++ {
			var s int32
			for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
				w := int32(1)
				if g.Weights != nil {
					w = int32(g.Weights[e])
				}
				s += w * int32(x[int(g.Indices[e])*cols+c])
			}
			out[v*cols+c] = ep.Apply(s, v, c)
		}
	}
	return out
}

// randomGraph has rows rows over src sources, degrees 0..maxDeg (some rows
// empty), and codes of wbits as weights when wbits > 0.
func randomGraph(r *rand.Rand, rows, src, maxDeg, wbits int) *bmm.Graph {
	g := &bmm.Graph{Indptr: make([]int32, rows+1), WeightBits: wbits}
	for v := 0; v < rows; v++ {
		d := r.IntN(maxDeg + 1)
		if v%7 == 3 || src == 0 {
			d = 0
		}
		for range d {
			g.Indices = append(g.Indices, int32(r.IntN(src)))
			if wbits > 0 {
				g.Weights = append(g.Weights, uint8(r.IntN(1<<wbits)))
			}
		}
		g.Indptr[v+1] = int32(len(g.Indices))
	}
	if wbits > 0 && g.Weights == nil {
		g.Weights = []uint8{}
	}
	return g
}

// TestBackendAgg compares AggFloat, AggCodes and AggBit (both packings)
// with the host reference, with and without weights, widths 1..8, rows
// short and long.
func TestBackendAgg(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	r := rand.New(rand.NewPCG(15, 4))
	// The last five have rows past aggHeavyDeg (agg8's blocks of warps) and
	// past aggHeavyWide (agg32's) beside light ones; 512 and 528 columns
	// take two and three chunks of 8 columns a lane.
	for i, s := range [][4]int{{1, 1, 1, 24}, {65, 40, 31, 24}, {300, 257, 33, 24}, {64, 64, 64, 24}, {33, 500, 70, 24}, {0, 5, 3, 24},
		{200, 1000, 1, 24}, {17, 3, 130, 24}, {150, 400, 64, 300}, {70, 900, 767, 200}, {40, 3000, 130, 5000}, {90, 300, 512, 200}, {50, 200, 528, 100}} {
		rows, src, cols, maxDeg := s[0], s[1], s[2], s[3]
		xbits, outBits, wbits := 1+i%8, 1+(i*3+2)%8, []int{0, 3, 0, 1, 8}[i%5]
		mask := (i * 11) % 64
		t.Run(fmt.Sprintf("%dx%dx%d_deg%d_x%d_out%d_w%d_ep%02x", rows, src, cols, maxDeg, xbits, outBits, wbits, mask), func(t *testing.T) {
			g := randomGraph(r, rows, src, maxDeg, wbits)
			x := make([]uint8, src*cols)
			for j := range x {
				x[j] = uint8(r.IntN(1 << xbits))
			}
			dg, err := be.UploadGraph(g, src)
			require.NoError(t, err)
			dx, err := be.UploadCodes(x, src, cols, xbits)
			require.NoError(t, err)
			hep, dep := randomEpi(t, be, r, rows, cols, mask)
			rq := bmm.Requant{Scale: float32(math.Exp2(float64(outBits))) / float32(1+12*(int(1)<<xbits)), Offset: -0.25}
			if mask&1 != 0 {
				rq.Scale = float32(math.Exp2(float64(outBits))) / 4
			}
			want := aggRef(g, x, cols, hep)

			gotF, err := be.NewVector(rows * cols)
			require.NoError(t, err)
			require.NoError(t, be.AggFloat(gotF, dg, dx, dep))
			assert.Equal(t, -1, firstDiff(floatBits(peekFloats(t, be, gotF)), floatBits(want)), "AggFloat")

			codes := make([]int32, len(want))
			codes8 := make([]uint8, len(want))
			for j, y := range want {
				codes[j] = int32(rq.Quantize(y, outBits))
				codes8[j] = uint8(codes[j])
			}
			gotC, err := be.NewCodes(rows, cols, outBits)
			require.NoError(t, err)
			require.NoError(t, be.AggCodes(gotC, dg, dx, dep, rq))
			assert.Equal(t, -1, firstDiff(peek(t, be, &gotC.(*devCodes).devMem, rows*cols), codes8), "AggCodes")

			for _, p := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
				wantB, err := bittensor.Pack(codes, rows, cols, outBits, p, bittensor.DefaultPadding)
				require.NoError(t, err)
				gotB, err := be.NewBits(rows, cols, outBits, p)
				require.NoError(t, err)
				// Every word set, padding too: AggBit writes or clears them all.
				db := gotB.(*devBits)
				require.NoError(t, be.d.run(func() error { return be.d.memset32(db.buf.ptr, 0xFFFFFFFF, 2*db.bits*db.lay.planeWords()) }))
				require.NoError(t, be.AggBit(gotB, dg, dx, dep, rq))
				assert.Equal(t, -1, firstDiff(peekBits(t, be, gotB).Words(), wantB.Words()), "AggBit by %v", p)
			}
		})
	}
}

// TestBackendFolds: RowSums of AggBit's planes (packed by rows) and
// ArgmaxTo/ArgmaxAt of AggFloat's logits (at most 32 columns) fold into
// the aggregation just before them (no launch of their own) and give what
// their own kernels give; after another op, of another tensor, by
// columns, or of wider logits, they launch as before.
func TestBackendFolds(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	r := rand.New(rand.NewPCG(15, 6))
	// The launches f queues, the one it may still hold included.
	ops := func(f func()) int64 {
		before := be.Traffic()
		f()
		require.NoError(t, be.d.run(func() error { return nil }))
		return be.Traffic().Sub(before).Ops
	}
	for _, s := range [][4]int{{300, 257, 10, 24}, {90, 300, 64, 300}, {40, 3000, 33, 5000}, {70, 900, 5, 200}, {33, 500, 32, 24}} {
		rows, src, cols, maxDeg := s[0], s[1], s[2], s[3]
		t.Run(fmt.Sprintf("%dx%dx%d_deg%d", rows, src, cols, maxDeg), func(t *testing.T) {
			g := randomGraph(r, rows, src, maxDeg, 0)
			x := make([]uint8, src*cols)
			for j := range x {
				x[j] = uint8(r.IntN(16))
			}
			dg, err := be.UploadGraph(g, src)
			require.NoError(t, err)
			dx, err := be.UploadCodes(x, src, cols, 4)
			require.NoError(t, err)
			hep, dep := randomEpi(t, be, r, rows, cols, 0x3f)
			rq := bmm.Requant{Scale: 2, Offset: 1}
			want := aggRef(g, x, cols, hep)
			wantSums := make([]float32, rows)
			for v := range rows {
				var sum int64
				for c := range cols {
					sum += int64(rq.Quantize(want[v*cols+c], 3))
				}
				wantSums[v] = float32(sum)
			}

			// The row sums: folded, then after an op between (its own launch).
			b1, err := be.NewBits(rows, cols, 3, bittensor.ByRows)
			require.NoError(t, err)
			s1, err := be.NewVector(rows)
			require.NoError(t, err)
			alone := ops(func() { require.NoError(t, be.AggBit(b1, dg, dx, dep, rq)) })
			_ = peekBits(t, be, b1)
			folded := ops(func() {
				require.NoError(t, be.AggBit(b1, dg, dx, dep, rq))
				require.NoError(t, be.RowSums(s1, b1))
			})
			assert.Equal(t, alone, folded, "RowSums folded into AggBit")
			assert.Equal(t, floatBits(wantSums), floatBits(peekFloats(t, be, s1)), "folded row sums")
			b2, err := be.NewBits(rows, cols, 3, bittensor.ByRows)
			require.NoError(t, err)
			s2, err := be.NewVector(rows)
			require.NoError(t, err)
			apart := ops(func() {
				require.NoError(t, be.AggBit(b1, dg, dx, dep, rq))
				require.NoError(t, be.AggBit(b2, dg, dx, dep, rq)) // b1 released unfolded
				require.NoError(t, be.RowSums(s2, b1))             // b2 held: another tensor
			})
			assert.Equal(t, 2*alone+1, apart, "RowSums of another tensor: its own launch")
			assert.Equal(t, floatBits(wantSums), floatBits(peekFloats(t, be, s2)), "row sums launched alone")
			bc, err := be.NewBits(rows, cols, 3, bittensor.ByCols)
			require.NoError(t, err)
			require.NoError(t, be.AggBit(bc, dg, dx, dep, rq))
			assert.ErrorIs(t, be.RowSums(s2, bc), bmm.ErrPacking, "by columns: no fold, the usual error")

			// The argmax: folded where the logits are at most 32 wide.
			wantArg := argmaxRef(want, cols)
			lf, err := be.NewVector(rows * cols)
			require.NoError(t, err)
			perm := r.Perm(rows + 3)[:rows]
			idx := make([]int32, rows)
			for i, p := range perm {
				idx[i] = int32(p)
			}
			di, err := be.UploadIndex(idx, rows+3)
			require.NoError(t, err)
			dst, err := be.NewInts(rows+3, -1)
			require.NoError(t, err)
			aggOps := ops(func() { require.NoError(t, be.AggFloat(lf, dg, dx, dep)) })
			assert.Equal(t, floatBits(want), floatBits(peekFloats(t, be, lf)), "AggFloat")
			toOps := ops(func() {
				require.NoError(t, be.AggFloat(lf, dg, dx, dep))
				require.NoError(t, be.ArgmaxTo(dst, di, lf, cols))
			})
			dat, err := be.NewInts(rows+5, -1)
			require.NoError(t, err)
			atOps := ops(func() {
				require.NoError(t, be.AggFloat(lf, dg, dx, dep))
				require.NoError(t, be.ArgmaxAt(dat, 2, lf, cols))
			})
			fold := int64(0)
			if cols > 32 {
				fold = 1
			}
			assert.Equal(t, aggOps+fold, toOps, "ArgmaxTo after AggFloat")
			assert.Equal(t, aggOps+fold, atOps, "ArgmaxAt after AggFloat")
			got := make([]int32, rows+3)
			require.NoError(t, be.ReadInts(got, dst))
			for i, p := range perm {
				assert.Equal(t, wantArg[i], got[p], "ArgmaxTo row %d", i)
			}
			gotAt := make([]int32, rows+5)
			require.NoError(t, be.ReadInts(gotAt, dat))
			assert.Equal(t, append(append([]int32{-1, -1}, wantArg...), -1, -1, -1), gotAt, "ArgmaxAt from 2")
			assert.Equal(t, floatBits(want), floatBits(peekFloats(t, be, lf)), "AggFloat with the argmax folded")
		})
	}
}

// argmaxRef is layers.QArgmax's algorithm, copied (tcu may not import
// layers): the largest value first, then its first position; with a NaN,
// the running-best scan.
func argmaxRef(logits []float32, c int) []int32 {
	out := make([]int32, len(logits)/c)
	for i := range out {
		row := logits[i*c : (i+1)*c]
		bv := row[0]
		for _, x := range row[1:] {
			bv = max(bv, x)
		}
		best := 0
		if bv == bv {
			for row[best] != bv {
				best++
			}
		} else {
			run := row[0]
			for j, x := range row {
				if x > run {
					run, best = x, j
				}
			}
		}
		out[i] = int32(best)
	}
	return out
}

// TestBackendArgmax: ties, NaN in the first and later columns, signed
// zeros and infinities, and the download counted as traffic.
func TestBackendArgmax(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	rows := [][]float32{
		{1, 2, 2, 1}, {nan, 5, 6, 7}, {1, nan, 3, 2}, {negz, 0, 0, -1}, {0, negz, -1, -2}, {-inf, -inf, -inf, -inf},
		{nan, nan, nan, nan}, {inf, nan, inf, 1}, {-1, -2, -3, -0.5}, {3, 3, 3, 3},
	}
	r := rand.New(rand.NewPCG(15, 5))
	for range 300 {
		row := make([]float32, 4)
		for j := range row {
			row[j] = float32(r.IntN(5)) // many ties
		}
		rows = append(rows, row)
	}
	var logits []float32
	for _, row := range rows {
		logits = append(logits, row...)
	}
	v, err := be.UploadVector(logits)
	require.NoError(t, err)
	before := be.Traffic()
	got := make([]int32, len(rows))
	require.NoError(t, be.Argmax(got, v, 4))
	assert.Equal(t, argmaxRef(logits, 4), got)
	assert.Equal(t, bmm.Traffic{DeviceToHost: int64(4 * len(rows)), Ops: 1}, be.Traffic().Sub(before))

	back := make([]float32, len(logits))
	require.NoError(t, be.ReadVector(back, v))
	assert.Equal(t, floatBits(logits), floatBits(back))
}

// TestBackendChain runs a two-layer model's ops on resident operands,
// MulBit -> MulCodes -> AggBit -> MulFloat -> Argmax, and checks the
// predictions and logits against the host and that nothing went up and
// nothing but the predictions came down between the uploads and the
// answer.
func TestBackendChain(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	r := rand.New(rand.NewPCG(15, 6))
	const nodes, feats, hidden, classes = 300, 500, 64, 7
	x := randomTensor(t, r, nodes, feats, 4, bittensor.ByRows, true)
	w1 := randomTensor(t, r, feats, hidden, 4, bittensor.ByCols, false)
	w2 := randomTensor(t, r, hidden, hidden, 4, bittensor.ByCols, false)
	w3 := randomTensor(t, r, hidden, classes, 4, bittensor.ByCols, false)
	g := randomGraph(r, nodes, nodes, 12, 0)
	hep1, dep1 := randomEpi(t, be, r, nodes, hidden, 1|4|32)
	hep2, dep2 := randomEpi(t, be, r, nodes, hidden, 1|16|32)
	hep3, dep3 := randomEpi(t, be, r, nodes, hidden, 8|32)
	hep4, dep4 := randomEpi(t, be, r, nodes, classes, 1|2|16)
	rq := bmm.Requant{Scale: 2, Offset: 0.5}
	rqAgg := bmm.Requant{Scale: 1.5, Offset: 0}

	// The host: the same ops on bmm.Generic.
	h1, err := bittensor.New(nodes, hidden, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	require.NoError(t, bmm.Generic{}.MulBit(h1, x, w1, hep1, rq))
	h2, err := bittensor.New(nodes, hidden, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	require.NoError(t, bmm.Generic{}.MulBit(h2, h1, w2, hep2, rq))
	c2 := make([]uint8, nodes*hidden)
	for i, v := range h2.Ints() {
		c2[i] = uint8(v)
	}
	aggF := aggRef(g, c2, hidden, hep3)
	z := make([]int32, len(aggF))
	for i, y := range aggF {
		z[i] = int32(rqAgg.Quantize(y, 4))
	}
	zt, err := bittensor.PackRows(z, nodes, hidden, 4)
	require.NoError(t, err)
	wantLogits := make([]float32, nodes*classes)
	require.NoError(t, bmm.Generic{}.MulFloat(wantLogits, zt, w3, hep4))

	// The device: uploads, then the ops with no copy.
	dx, err := be.UploadBits(x)
	require.NoError(t, err)
	var dw [3]bmm.Bits
	for i, w := range []*bittensor.Tensor{w1, w2, w3} {
		dw[i], err = be.UploadBits(w)
		require.NoError(t, err)
	}
	dg, err := be.UploadGraph(g, nodes)
	require.NoError(t, err)
	d1, err := be.NewBits(nodes, hidden, 4, bittensor.ByRows)
	require.NoError(t, err)
	d2, err := be.NewCodes(nodes, hidden, 4)
	require.NoError(t, err)
	d3, err := be.NewBits(nodes, hidden, 4, bittensor.ByRows)
	require.NoError(t, err)
	logits, err := be.NewVector(nodes * classes)
	require.NoError(t, err)
	before := be.Traffic()
	require.NoError(t, be.MulBit(d1, dx, dw[0], dep1, rq))
	require.NoError(t, be.MulCodes(d2, d1, dw[1], dep2, rq))
	require.NoError(t, be.AggBit(d3, dg, d2, dep3, rqAgg))
	require.NoError(t, be.MulFloat(logits, d3, dw[2], dep4))
	pred := make([]int32, nodes)
	require.NoError(t, be.Argmax(pred, logits, classes))
	moved := be.Traffic().Sub(before)

	assert.Equal(t, argmaxRef(wantLogits, classes), pred)
	assert.Equal(t, -1, firstDiff(floatBits(peekFloats(t, be, logits)), floatBits(wantLogits)), "logits")
	// 3 products (MulCodes writes codes from its epilogue), agg, argmax.
	assert.Equal(t, bmm.Traffic{HostToDevice: 0, DeviceToHost: 4 * nodes, Ops: 5}, moved)

	// Freed operands are refused; a second Free does nothing.
	d1.Free()
	d1.Free()
	assert.True(t, errors.Is(be.MulFloat(logits, d1, dw[2], nil), bmm.ErrForeign))
}

// wideRef is A·B for products past int32, by the algorithm of
// bmm.WideProduct written over values: int32 products of plane groups,
// summed exactly in int64 below 2^62, else in float64 group by group, in
// the same order.
func wideRef(av, bv []int32, m, k, n, abits, bbits int) []float64 {
	ga, gb := bmm.PlaneGroups(k, abits, bbits)
	exact := bmm.MaxSum(k, abits, bbits) < math.Exp2(62)
	acc := make([]int64, m*n)
	out := make([]float64, m*n)
	field := func(v int32, p0, w int) int64 { return int64(uint32(v)>>p0) & (1<<w - 1) }
	for i0 := 0; i0 < abits; i0 += ga {
		wa := min(ga, abits-i0)
		for j0 := 0; j0 < bbits; j0 += gb {
			wb := min(gb, bbits-j0)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var c int64
					for x := 0; x < k; x++ {
						c += field(av[i*k+x], i0, wa) * field(bv[x*n+j], j0, wb)
					}
					if c > math.MaxInt32 {
						panic("plane group product past int32")
					}
					if exact {
						acc[i*n+j] += c << (i0 + j0)
					} else {
						out[i*n+j] += float64(c) * math.Ldexp(1, i0+j0)
					}
				}
			}
		}
	}
	if exact {
		for i, c := range acc {
			out[i] = float64(c)
		}
	}
	return out
}

// TestBackendWide: products past int32 (16, 32 and mixed widths, sums
// exact in int64 and past 2^62 in float64) against wideRef, into every
// output, and row sums of wide codes.
func TestBackendWide(t *testing.T) {
	be, err := NewBackend(gpuKernel(t))
	require.NoError(t, err)
	defer be.Close()
	r := rand.New(rand.NewPCG(15, 7))
	for i, c := range []struct{ m, k, n, a, b int }{
		{37, 300, 19, 16, 16}, {20, 300, 9, 32, 32}, {5, 1000, 70, 1, 32}, {20, 40000, 9, 12, 8}, {65, 257, 33, 8, 16},
	} {
		outBits, mask := 1+(i*3)%8, (i*19+5)%64
		t.Run(fmt.Sprintf("a%d_b%d_%dx%dx%d_out%d_ep%02x", c.a, c.b, c.m, c.k, c.n, outBits, mask), func(t *testing.T) {
			a := randomTensor(t, r, c.m, c.k, c.a, bittensor.ByRows, i == 3)
			b := randomTensor(t, r, c.k, c.n, c.b, bittensor.ByCols, false)
			wide := wideRef(a.Ints(), b.Ints(), c.m, c.k, c.n, c.a, c.b)
			hep, dep := randomEpi(t, be, r, c.m, c.n, mask)
			var top float64
			for _, v := range wide {
				top = max(top, float64(hep.ApplyFloat(float32(v), 0, 0)))
			}
			rq := bmm.Requant{Scale: float32(math.Exp2(float64(outBits)) / max(top, 1)), Offset: -0.5}
			want := make([]float32, len(wide))
			codes := make([]int32, len(wide))
			codes8 := make([]uint8, len(wide))
			for x, v := range wide {
				want[x] = hep.ApplyFloat(float32(v), x/c.n, x%c.n)
				codes[x] = int32(rq.Quantize(want[x], outBits))
				codes8[x] = uint8(codes[x])
			}
			da, err := be.UploadBits(a)
			require.NoError(t, err)
			db, err := be.UploadBits(b)
			require.NoError(t, err)
			up := be.Traffic().HostToDevice

			gotF, err := be.NewVector(c.m * c.n)
			require.NoError(t, err)
			require.NoError(t, be.MulFloat(gotF, da, db, dep))
			assert.Equal(t, -1, firstDiff(floatBits(peekFloats(t, be, gotF)), floatBits(want)), "MulFloat")
			gotC, err := be.NewCodes(c.m, c.n, outBits)
			require.NoError(t, err)
			require.NoError(t, be.MulCodes(gotC, da, db, dep, rq))
			assert.Equal(t, -1, firstDiff(peek(t, be, &gotC.(*devCodes).devMem, c.m*c.n), codes8), "MulCodes")
			for _, p := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
				wantB, err := bittensor.Pack(codes, c.m, c.n, outBits, p, bittensor.DefaultPadding)
				require.NoError(t, err)
				gotB, err := be.NewBits(c.m, c.n, outBits, p)
				require.NoError(t, err)
				require.NoError(t, be.MulBit(gotB, da, db, dep, rq))
				assert.Equal(t, -1, firstDiff(peekBits(t, be, gotB).Words(), wantB.Words()), "MulBit by %v", p)
			}
			// Every plane-group launch took its descriptor by value.
			assert.Equal(t, up, be.Traffic().HostToDevice, "bytes up during the products")

			sums, err := be.NewVector(c.m)
			require.NoError(t, err)
			require.NoError(t, be.RowSums(sums, da))
			wantS := make([]float32, c.m)
			av := a.Ints()
			for row := range wantS {
				var s int64
				for _, v := range av[row*c.k : (row+1)*c.k] {
					s += int64(uint32(v))
				}
				wantS[row] = float32(s)
			}
			assert.Equal(t, -1, firstDiff(peekFloats(t, be, sums), wantS), "RowSums")
		})
	}
}

// TestBackendSuite runs the shared conformance suite on the resident
// backend: every op against bmm's generic backend, bit for bit.
func TestBackendSuite(t *testing.T) {
	k := gpuKernel(t)
	bmmtest.TestBackend(t, func(t *testing.T) bmm.Backend {
		be, err := NewBackend(k)
		require.NoError(t, err)
		return be
	})
}

// BenchmarkBackendMulBit times one fused MulBit of a block-sparse 1-bit
// adjacency by 4-bit features into 4-bit codes: resident (operands and
// output on the device, one launch) against Kernel.MulBit (upload, launch,
// download per call) on the automatic path and on mma.sync.
func BenchmarkBackendMulBit(b *testing.B) {
	k := gpuKernel(b)
	r := rand.New(rand.NewPCG(15, 8))
	const n, d = 4096, 64
	av := make([]int32, n*n)
	for i := range av {
		if (i/n)/256 == (i%n)/256 && r.IntN(20) == 0 { // diagonal 256×256 blocks, 5% dense
			av[i] = 1
		}
	}
	a, err := bittensor.PackRows(av, n, n, 1)
	require.NoError(b, err)
	x := randomTensorB(b, r, n, d, 4)
	rq := bmm.Requant{Scale: 0.25}
	kmma, err := k.WithPath(PathMMA)
	require.NoError(b, err)
	for _, impl := range []string{"resident", "kernel", "kernel-mma"} {
		b.Run("impl="+impl, func(b *testing.B) {
			switch impl {
			case "resident":
				be, err := NewBackend(k)
				require.NoError(b, err)
				defer be.Close()
				da, err := be.UploadBits(a)
				require.NoError(b, err)
				dx, err := be.UploadBits(x)
				require.NoError(b, err)
				dst, err := be.NewBits(n, d, 4, bittensor.ByRows)
				require.NoError(b, err)
				require.NoError(b, be.MulBit(dst, da, dx, nil, rq)) // compiles or loads the variant
				require.NoError(b, be.d.stream.Sync())
				b.ResetTimer()
				for range b.N {
					require.NoError(b, be.MulBit(dst, da, dx, nil, rq))
				}
				require.NoError(b, be.d.stream.Sync())
			default:
				kk := k
				if impl == "kernel-mma" {
					kk = kmma
				}
				dst, err := bittensor.New(n, d, 4, bittensor.ByRows, bittensor.DefaultPadding)
				require.NoError(b, err)
				require.NoError(b, kk.MulBit(dst, a, x, nil, rq))
				b.ResetTimer()
				for range b.N {
					require.NoError(b, kk.MulBit(dst, a, x, nil, rq))
				}
			}
		})
	}
}

func randomTensorB(b *testing.B, r *rand.Rand, rows, cols, bits int) *bittensor.Tensor {
	vals := make([]int32, rows*cols)
	for i := range vals {
		vals[i] = int32(r.IntN(1 << bits))
	}
	x, err := bittensor.PackCols(vals, rows, cols, bits)
	require.NoError(b, err)
	return x
}
