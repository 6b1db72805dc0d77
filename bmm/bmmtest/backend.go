package bmmtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// TestBackend runs the backend conformance suite: every op of the backends
// open returns (one per group, closed at the group's end) against
// bmm.NewGenericBackend, bit for bit, on the same uploaded values. Outputs
// are uploaded poisoned (all bits set, NaN payloads, top codes), so an
// element an op forgets to write, or a padding bit it leaves set, is
// caught.
func TestBackend(t *testing.T, open func(t *testing.T) bmm.Backend) {
	seed := Seed(t)
	var name string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bmmtest: backend %q failed with seed %d; replay with %s=%d", name, seed, SeedEnv, seed)
		}
	})
	for i, g := range []struct {
		name string
		run  func(h *harness, r *rand.Rand)
	}{
		{"products", (*harness).products},
		{"widths", (*harness).widths},
		{"epilogues", (*harness).epilogues},
		{"requant", (*harness).requant},
		{"aggregations", (*harness).aggregations},
		{"adds", (*harness).adds},
		{"rowsums", (*harness).rowSums},
		{"argmax", (*harness).argmax},
		{"argmaxto", (*harness).argmaxTo},
		{"argmaxat", (*harness).argmaxAt},
		{"readvector", (*harness).readVector},
		{"chains", (*harness).chains},
		{"errors", (*harness).errs},
		{"forks", (*harness).forks},
	} {
		t.Run(g.name, func(t *testing.T) {
			got := open(t)
			name = got.Name()
			ref := bmm.NewGenericBackend()
			h := &harness{t: t, got: got, ref: ref, open: open, short: testing.Short()}
			defer func() {
				assert.NoError(t, got.Close(), "Close")
				assert.NoError(t, ref.Close())
			}()
			g.run(h, rand.New(rand.NewPCG(seed, uint64(100+i))))
		})
	}
}

// harness holds the backend under test and the reference; each pair type
// is one value uploaded to both.
type harness struct {
	t        *testing.T
	got, ref bmm.Backend
	open     func(t *testing.T) bmm.Backend
	short    bool
}

type (
	bitsPair  struct{ g, r bmm.Bits }
	codesPair struct{ g, r bmm.Codes }
	vecPair   struct{ g, r bmm.Vector }
	graphPair struct{ g, r bmm.GraphOperand }
)

func (h *harness) bits(x *bittensor.Tensor) bitsPair {
	g, err := h.got.UploadBits(x)
	require.NoError(h.t, err, "UploadBits")
	r, err := h.ref.UploadBits(x.Clone()) // the reference's own copy, which a backend that writes its inputs cannot reach
	require.NoError(h.t, err)
	return bitsPair{g, r}
}

func (h *harness) codes(vals []uint8, rows, cols, bits int) codesPair {
	g, err := h.got.UploadCodes(vals, rows, cols, bits)
	require.NoError(h.t, err, "UploadCodes %d×%d %d-bit", rows, cols, bits)
	r, err := h.ref.UploadCodes(append([]uint8(nil), vals...), rows, cols, bits)
	require.NoError(h.t, err)
	return codesPair{g, r}
}

func (h *harness) vector(v []float32) vecPair {
	g, err := h.got.UploadVector(v)
	require.NoError(h.t, err, "UploadVector")
	r, err := h.ref.UploadVector(append([]float32(nil), v...))
	require.NoError(h.t, err)
	return vecPair{g, r}
}

func (h *harness) graph(gr *bmm.Graph, src int) graphPair {
	g, err := h.got.UploadGraph(gr, src)
	require.NoError(h.t, err, "UploadGraph")
	r, err := h.ref.UploadGraph(gr, src)
	require.NoError(h.t, err)
	return graphPair{g, r}
}

// epi uploads ep's vectors to both backends (nil stays nil).
func (h *harness) epi(ep *bmm.Epilogue) (g, r *bmm.Epi) {
	if ep == nil {
		return nil, nil
	}
	g, r = &bmm.Epi{ReLU: ep.ReLU}, &bmm.Epi{ReLU: ep.ReLU}
	for _, f := range []struct {
		s    []float32
		g, r *bmm.Vector
	}{
		{ep.ColScale, &g.ColScale, &r.ColScale}, {ep.RowTerm, &g.RowTerm, &r.RowTerm},
		{ep.ColTerm, &g.ColTerm, &r.ColTerm}, {ep.ColConst, &g.ColConst, &r.ColConst},
		{ep.RowScale, &g.RowScale, &r.RowScale}, {ep.ColBias, &g.ColBias, &r.ColBias},
	} {
		if f.s != nil {
			v := h.vector(f.s)
			*f.g, *f.r = v.g, v.r
		}
	}
	return g, r
}

// The outputs: poisoned on the backend under test, fresh on the reference.

func (h *harness) newBits(rows, cols, bits int, packing bittensor.Packing) bitsPair {
	x, err := bittensor.New(rows, cols, bits, packing, bittensor.DefaultPadding)
	require.NoError(h.t, err)
	for i := range x.Words() {
		x.Words()[i] = ^uint64(0)
	}
	g, err := h.got.UploadBits(x)
	require.NoError(h.t, err, "UploadBits of a destination")
	r, err := h.ref.NewBits(rows, cols, bits, packing)
	require.NoError(h.t, err)
	return bitsPair{g, r}
}

func (h *harness) newCodes(rows, cols, bits int) codesPair {
	v := make([]uint8, rows*cols)
	for i := range v {
		v[i] = uint8(1<<bits - 1)
	}
	g, err := h.got.UploadCodes(v, rows, cols, bits)
	require.NoError(h.t, err, "UploadCodes of a destination")
	r, err := h.ref.NewCodes(rows, cols, bits)
	require.NoError(h.t, err)
	return codesPair{g, r}
}

var poisonFloat = math.Float32frombits(0x7fc0dead) // a NaN no op produces

func (h *harness) newVector(n int) vecPair {
	v := make([]float32, n)
	for i := range v {
		v[i] = poisonFloat
	}
	g, err := h.got.UploadVector(v)
	require.NoError(h.t, err, "UploadVector of a destination")
	r, err := h.ref.NewVector(n)
	require.NoError(h.t, err)
	return vecPair{g, r}
}

// sameBits requires the two outputs to hold the same values, and the one
// under test to have no padding bit set.
func (h *harness) sameBits(d bitsPair, what string) *bittensor.Tensor {
	g, err := h.got.ReadBits(d.g)
	require.NoError(h.t, err, "ReadBits %s", what)
	r, err := h.ref.ReadBits(d.r)
	require.NoError(h.t, err)
	require.Equal(h.t, [4]int{r.Rows(), r.Cols(), r.Bits(), int(r.Packing())}, [4]int{g.Rows(), g.Cols(), g.Bits(), int(g.Packing())},
		"%s: ReadBits shape, width and packing", what)
	bad, first := 0, -1
	for i := 0; i < r.Rows()*r.Cols(); i++ {
		if g.At(i/r.Cols(), i%r.Cols()) != r.At(i/r.Cols(), i%r.Cols()) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		m, n := first/r.Cols(), first%r.Cols()
		assert.Failf(h.t, "bit output differs from the generic backend", "%s: %d of %d codes differ; first at (%d, %d): got %d, want %d",
			what, bad, r.Rows()*r.Cols(), m, n, g.At(m, n), r.At(m, n))
	}
	if err := PaddingClear(g); err != nil {
		assert.Failf(h.t, "bit output has padding bits set", "%s: %v", what, err)
	}
	return r
}

func (h *harness) sameCodes(d codesPair, what string) []uint8 {
	n := d.r.Rows() * d.r.Cols()
	g, r := make([]uint8, n), make([]uint8, n)
	require.NoError(h.t, h.got.ReadCodes(g, d.g), "ReadCodes %s", what)
	require.NoError(h.t, h.ref.ReadCodes(r, d.r))
	require.Equal(h.t, [3]int{d.r.Rows(), d.r.Cols(), d.r.Bits()}, [3]int{d.g.Rows(), d.g.Cols(), d.g.Bits()}, "%s: codes shape", what)
	for i := range r {
		if g[i] != r[i] {
			assert.Failf(h.t, "code output differs from the generic backend", "%s: first at (%d, %d): got %d, want %d",
				what, i/d.r.Cols(), i%d.r.Cols(), g[i], r[i])
			break
		}
	}
	return r
}

func (h *harness) sameVector(d vecPair, what string) []float32 {
	n := d.r.Len()
	require.Equal(h.t, n, d.g.Len(), "%s: vector length", what)
	g, r := make([]float32, n), make([]float32, n)
	require.NoError(h.t, h.got.ReadVector(g, d.g), "ReadVector %s", what)
	require.NoError(h.t, h.ref.ReadVector(r, d.r))
	bad, first := 0, -1
	for i := range r {
		if math.Float32bits(g[i]) != math.Float32bits(r[i]) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		assert.Failf(h.t, "float output differs from the generic backend", "%s: %d of %d values differ; first at %d: got %v (%#08x), want %v (%#08x)",
			what, bad, n, first, g[first], math.Float32bits(g[first]), r[first], math.Float32bits(r[first]))
	}
	return r
}

// The ops, each run on both backends and compared.

func (h *harness) mulBit(a, b bitsPair, ep *bmm.Epilogue, rq bmm.Requant, bits int, packing bittensor.Packing, what string) bitsPair {
	d := h.newBits(a.r.Rows(), b.r.Cols(), bits, packing)
	eg, er := h.epi(ep)
	what = fmt.Sprintf("MulBit %s %s rq=%+v into %d-bit %v", what, epString(ep), rq, bits, packing)
	require.NoError(h.t, h.got.MulBit(d.g, a.g, b.g, eg, rq), what)
	require.NoError(h.t, h.ref.MulBit(d.r, a.r, b.r, er, rq), what)
	h.sameBits(d, what)
	return d
}

func (h *harness) mulCodes(a, b bitsPair, ep *bmm.Epilogue, rq bmm.Requant, bits int, what string) codesPair {
	d := h.newCodes(a.r.Rows(), b.r.Cols(), bits)
	eg, er := h.epi(ep)
	what = fmt.Sprintf("MulCodes %s %s rq=%+v into %d-bit", what, epString(ep), rq, bits)
	require.NoError(h.t, h.got.MulCodes(d.g, a.g, b.g, eg, rq), what)
	require.NoError(h.t, h.ref.MulCodes(d.r, a.r, b.r, er, rq), what)
	h.sameCodes(d, what)
	return d
}

func (h *harness) mulFloat(a, b bitsPair, ep *bmm.Epilogue, what string) vecPair {
	d := h.newVector(a.r.Rows() * b.r.Cols())
	eg, er := h.epi(ep)
	what = fmt.Sprintf("MulFloat %s %s", what, epString(ep))
	require.NoError(h.t, h.got.MulFloat(d.g, a.g, b.g, eg), what)
	require.NoError(h.t, h.ref.MulFloat(d.r, a.r, b.r, er), what)
	h.sameVector(d, what)
	return d
}

func (h *harness) aggBit(g graphPair, x codesPair, ep *bmm.Epilogue, rq bmm.Requant, bits int, packing bittensor.Packing, what string) bitsPair {
	d := h.newBits(g.r.Rows(), x.r.Cols(), bits, packing)
	eg, er := h.epi(ep)
	what = fmt.Sprintf("AggBit %s %s rq=%+v into %d-bit %v", what, epString(ep), rq, bits, packing)
	require.NoError(h.t, h.got.AggBit(d.g, g.g, x.g, eg, rq), what)
	require.NoError(h.t, h.ref.AggBit(d.r, g.r, x.r, er, rq), what)
	h.sameBits(d, what)
	return d
}

func (h *harness) aggCodes(g graphPair, x codesPair, ep *bmm.Epilogue, rq bmm.Requant, bits int, what string) codesPair {
	d := h.newCodes(g.r.Rows(), x.r.Cols(), bits)
	eg, er := h.epi(ep)
	what = fmt.Sprintf("AggCodes %s %s rq=%+v into %d-bit", what, epString(ep), rq, bits)
	require.NoError(h.t, h.got.AggCodes(d.g, g.g, x.g, eg, rq), what)
	require.NoError(h.t, h.ref.AggCodes(d.r, g.r, x.r, er, rq), what)
	h.sameCodes(d, what)
	return d
}

func (h *harness) aggFloat(g graphPair, x codesPair, ep *bmm.Epilogue, what string) vecPair {
	d := h.newVector(g.r.Rows() * x.r.Cols())
	eg, er := h.epi(ep)
	what = fmt.Sprintf("AggFloat %s %s", what, epString(ep))
	require.NoError(h.t, h.got.AggFloat(d.g, g.g, x.g, eg), what)
	require.NoError(h.t, h.ref.AggFloat(d.r, g.r, x.r, er), what)
	h.sameVector(d, what)
	return d
}

func (h *harness) addBit(x, y vecPair, rows, cols int, relu bool, rq bmm.Requant, bits int, packing bittensor.Packing, what string) bitsPair {
	d := h.newBits(rows, cols, bits, packing)
	what = fmt.Sprintf("AddBit %s relu=%v rq=%+v into %d-bit %v", what, relu, rq, bits, packing)
	require.NoError(h.t, h.got.AddBit(d.g, x.g, y.g, relu, rq), what)
	require.NoError(h.t, h.ref.AddBit(d.r, x.r, y.r, relu, rq), what)
	h.sameBits(d, what)
	return d
}

func (h *harness) addCodes(x, y vecPair, rows, cols int, relu bool, rq bmm.Requant, bits int, what string) codesPair {
	d := h.newCodes(rows, cols, bits)
	what = fmt.Sprintf("AddCodes %s relu=%v rq=%+v into %d-bit", what, relu, rq, bits)
	require.NoError(h.t, h.got.AddCodes(d.g, x.g, y.g, relu, rq), what)
	require.NoError(h.t, h.ref.AddCodes(d.r, x.r, y.r, relu, rq), what)
	h.sameCodes(d, what)
	return d
}

func (h *harness) addFloat(x, y vecPair, relu bool, what string) vecPair {
	d := h.newVector(x.r.Len())
	what = fmt.Sprintf("AddFloat %s relu=%v", what, relu)
	require.NoError(h.t, h.got.AddFloat(d.g, x.g, y.g, relu), what)
	require.NoError(h.t, h.ref.AddFloat(d.r, x.r, y.r, relu), what)
	h.sameVector(d, what)
	return d
}

func (h *harness) rowSumsOf(a bitsPair, what string) vecPair {
	d := h.newVector(a.r.Rows())
	what = "RowSums " + what
	require.NoError(h.t, h.got.RowSums(d.g, a.g), what)
	require.NoError(h.t, h.ref.RowSums(d.r, a.r), what)
	h.sameVector(d, what)
	return d
}

func (h *harness) argmaxOf(v vecPair, rows, cols int, what string) []int32 {
	g, r := make([]int32, rows), make([]int32, rows)
	for i := range g {
		g[i] = -7 // poison
	}
	require.NoError(h.t, h.got.Argmax(g, v.g, cols), "Argmax %s", what)
	require.NoError(h.t, h.ref.Argmax(r, v.r, cols), "Argmax %s", what)
	require.Equal(h.t, r, g, "Argmax %s", what)
	return r
}

// Random operands.

func randTensor(h *harness, r *rand.Rand, rows, cols, bits int, packing bittensor.Packing, pad bittensor.Padding) *bittensor.Tensor {
	x, err := bittensor.Pack(randVals(r, rows*cols, bits, 0.3+0.7*r.Float64()), rows, cols, bits, packing, pad)
	require.NoError(h.t, err)
	return x
}

// operands are an M×K A and a K×N B of the given widths, uploaded, with
// A's values (ref product computed by the caller's ops).
func (h *harness) operands(r *rand.Rand, m, k, n, ab, bb int, pad bool) (a, b bitsPair, ta, tb *bittensor.Tensor) {
	pa, pb := bittensor.DefaultPadding, bittensor.DefaultPadding
	if pad && r.IntN(2) == 0 {
		// non-default padding of both (same K padding) exercises upload as is
		p := Paddings[r.IntN(len(Paddings))]
		pa, pb = p, bittensor.Padding{Lines: 1 + r.IntN(8), Bits: p.Bits}
	}
	ta = randTensor(h, r, m, k, ab, bittensor.ByRows, pa)
	tb = randTensor(h, r, k, n, bb, bittensor.ByCols, pb)
	return h.bits(ta), h.bits(tb), ta, tb
}

// hostFloat is ep(A·B) from the reference, for choosing a re-quantization.
func (h *harness) refFloat(a, b bitsPair, ep *bmm.Epilogue) []float32 {
	d, err := h.ref.NewVector(a.r.Rows() * b.r.Cols())
	require.NoError(h.t, err)
	_, er := h.epi(ep)
	require.NoError(h.t, h.ref.MulFloat(d, a.r, b.r, er))
	out := make([]float32, d.Len())
	require.NoError(h.t, h.ref.ReadVector(out, d))
	return out
}

// refValues reads the reference's side of v.
func (h *harness) refValues(v vecPair) []float32 {
	out := make([]float32, v.r.Len())
	require.NoError(h.t, h.ref.ReadVector(out, v.r))
	return out
}

// fitRequant maps the range of y onto roughly [0, 2^bits), with a random
// stretch and shift so that codes clamp at both ends now and then.
func fitRequant(r *rand.Rand, y []float32, bits int) bmm.Requant {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range y {
		if !math.IsNaN(float64(v)) {
			lo, hi = min(lo, float64(v)), max(hi, float64(v))
		}
	}
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		lo, hi = 0, 1
	}
	levels := math.Exp2(float64(bits))
	scale := levels / (hi - lo) * (0.6 + 0.8*r.Float64())
	return bmm.Requant{Scale: float32(scale), Offset: float32(-lo*scale + levels*(r.Float64()-0.5)*0.2)}
}

// epFor is a random epilogue with the fields of mask, scaled to y's range.
func epFor(r *rand.Rand, m, n, mask int, k, ab, bb int) *bmm.Epilogue {
	cmax := max(1, bmm.MaxSum(k, ab, bb)/4)
	return randEpilogue(r, m, n, mask, []int32{int32(min(cmax, math.MaxInt32))})
}

// allOutputs runs the product into all three outputs: MulFloat, MulCodes
// (a random width ≤ 8) and MulBit (a random width ≤ 32, random packing).
func (h *harness) allOutputs(r *rand.Rand, a, b bitsPair, ep *bmm.Epilogue, what string) {
	y := h.refFloat(a, b, ep)
	h.mulFloat(a, b, ep, what)
	cb := 1 + r.IntN(8)
	h.mulCodes(a, b, ep, fitRequant(r, y, cb), cb, what)
	ob := 1 + r.IntN(bittensor.MaxBits)
	h.mulBit(a, b, ep, fitRequant(r, y, ob), ob, randPacking(r), what)
}

func (h *harness) dim(r *rand.Rand) int {
	if r.IntN(4) == 0 {
		return Sizes[r.IntN(len(Sizes))]
	}
	return 1 + r.IntN(map[bool]int{true: 40, false: 80}[h.short])
}

// products puts each of Sizes in each of M, K and N.
func (h *harness) products(r *rand.Rand) {
	for axis := 0; axis < 3; axis++ {
		for _, s := range Sizes {
			d := [3]int{h.dim(r), h.dim(r), h.dim(r)}
			d[axis] = s
			ab, bb := 1+r.IntN(8), 1+r.IntN(8)
			a, b, _, _ := h.operands(r, d[0], d[1], d[2], ab, bb, true)
			what := fmt.Sprintf("%d×%d·%d×%d (%d×%d bits)", d[0], d[1], d[1], d[2], ab, bb)
			h.allOutputs(r, a, b, epFor(r, d[0], d[2], r.IntN(64), d[1], ab, bb), what)
		}
	}
}

// widths runs every pair of widths 1..8, then wide and mixed pairs whose
// products pass int32 (the plane-group path).
func (h *harness) widths(r *rand.Rand) {
	for ab := 1; ab <= 8; ab++ {
		for bb := 1; bb <= 8; bb++ {
			if h.short && (ab+bb)%3 != 0 {
				continue
			}
			m, k, n := 1+r.IntN(70), 1+r.IntN(300), 1+r.IntN(70)
			a, b, _, _ := h.operands(r, m, k, n, ab, bb, false)
			h.allOutputs(r, a, b, epFor(r, m, n, r.IntN(64), k, ab, bb), fmt.Sprintf("%d×%d·%d×%d (%d×%d bits)", m, k, k, n, ab, bb))
		}
	}
	for _, w := range [][2]int{{16, 16}, {32, 32}, {32, 1}, {1, 32}, {16, 8}, {8, 16}, {32, 8}, {12, 20}, {16, 4}} {
		m, k, n := 1+r.IntN(40), Sizes[1+r.IntN(len(Sizes)-1)], 1+r.IntN(40)
		a, b, _, _ := h.operands(r, m, k, n, w[0], w[1], false)
		what := fmt.Sprintf("%d×%d·%d×%d (%d×%d bits, fits int32: %v)", m, k, k, n, w[0], w[1], bmm.Fits(k, w[0], w[1]))
		h.allOutputs(r, a, b, epFor(r, m, n, r.IntN(64), k, w[0], w[1]), what)
	}
}

// epilogues runs nil, the empty epilogue, each field alone, and all of
// them together, with and without ReLU.
func (h *harness) epilogues(r *rand.Rand) {
	masks := []int{0, 0, epAll, epAll &^ epReLU}
	for f := 1; f < epAll; f <<= 1 {
		masks = append(masks, f, f|epReLU)
	}
	for _, mask := range masks {
		m, k, n := 1+r.IntN(90), 1+r.IntN(300), 1+r.IntN(90)
		ab, bb := 1+r.IntN(4), 1+r.IntN(4)
		a, b, _, _ := h.operands(r, m, k, n, ab, bb, false)
		h.allOutputs(r, a, b, epFor(r, m, n, mask, k, ab, bb), fmt.Sprintf("%d×%d·%d×%d (%d×%d bits)", m, k, k, n, ab, bb))
	}
	// The same on aggregations.
	for _, mask := range masks {
		h.oneAgg(r, 1+r.IntN(90), 1+r.IntN(90), 1+r.IntN(70), mask, r.IntN(2) == 0)
	}
}

// requant runs the quantizer's edges: everything below zero, everything
// above the top code, negative and zero scales, NaN and infinite epilogue
// outputs, into 1-bit, 8-bit and 32-bit outputs.
func (h *harness) requant(r *rand.Rand) {
	m, k, n := 70, 130, 67
	a, b, _, _ := h.operands(r, m, k, n, 3, 2, false)
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	scales := randFloats(r, n, -0.1, 0.1)
	scales[0], scales[1], scales[2], scales[3] = nan, inf, -inf, 0
	eps := []*bmm.Epilogue{nil, {ColScale: scales}, {ColScale: scales, ReLU: true}}
	rqs := []bmm.Requant{
		{Scale: 1, Offset: -1e9}, {Scale: 1, Offset: 1e9}, {Scale: -0.01, Offset: 3}, {Scale: 0, Offset: 2.5},
		{Scale: 0, Offset: -0.5}, {Scale: 0.5, Offset: 0.5}, {Scale: 1e-3, Offset: 0}, {Scale: nan, Offset: 1}, {Scale: 1, Offset: inf},
	}
	for _, ep := range eps {
		for _, rq := range rqs {
			for _, bits := range []int{1, 8, 32} {
				h.mulBit(a, b, ep, rq, bits, randPacking(r), "requant edges")
				if bits <= 8 {
					h.mulCodes(a, b, ep, rq, bits, "requant edges")
				}
			}
		}
	}
}

// randGraph is rows rows over src sources: empty rows, repeated sources,
// and weights of wbits bits (0: none).
func randGraph(r *rand.Rand, rows, src, maxDeg, wbits int) *bmm.Graph {
	g := &bmm.Graph{Indptr: make([]int32, rows+1), WeightBits: wbits}
	for v := 0; v < rows; v++ {
		deg := 0
		if src > 0 && r.IntN(5) != 0 { // a fifth of the rows are empty
			deg = r.IntN(maxDeg + 1)
		}
		for range deg {
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

func randCodes(r *rand.Rand, n, bits int) []uint8 {
	v := make([]uint8, n)
	for i := range v {
		v[i] = uint8(r.IntN(1 << bits))
	}
	return v
}

// oneAgg runs an aggregation of a rows×cols result over src sources into
// all three outputs.
func (h *harness) oneAgg(r *rand.Rand, rows, src, cols, mask int, weighted bool) {
	bits, wbits := 1+r.IntN(8), 0
	if weighted {
		wbits = 1 + r.IntN(8)
	}
	gr := randGraph(r, rows, src, 1+r.IntN(40), wbits)
	g := h.graph(gr, src)
	x := h.codes(randCodes(r, src*cols, bits), src, cols, bits)
	what := fmt.Sprintf("%d rows over %d sources, %d edges, weights %d-bit, %d×%d %d-bit codes", rows, src, len(gr.Indices), wbits, src, cols, bits)
	maxSum := 40 * max(1, 1<<wbits-1) * (1<<bits - 1)
	ep := epFor(r, rows, cols, mask, 1, 1, 1)
	if ep != nil && ep.ColScale != nil {
		for i := range ep.ColScale {
			ep.ColScale[i] *= 4 / float32(maxSum)
		}
	}
	y := h.refValues(h.aggFloat(g, x, ep, what))
	cb := 1 + r.IntN(8)
	h.aggCodes(g, x, ep, fitRequant(r, y, cb), cb, what)
	ob := 1 + r.IntN(bittensor.MaxBits)
	h.aggBit(g, x, ep, fitRequant(r, y, ob), ob, randPacking(r), what)
}

// aggregations runs each of Sizes as the rows, the sources and the
// columns, with and without weights.
func (h *harness) aggregations(r *rand.Rand) {
	for axis := 0; axis < 3; axis++ {
		for _, s := range Sizes {
			d := [3]int{h.dim(r), h.dim(r), h.dim(r)}
			d[axis] = s
			for _, w := range []bool{false, true} {
				h.oneAgg(r, d[0], d[1], d[2], r.IntN(64), w)
			}
		}
	}
	// Every row empty, and a graph with no rows at all.
	x := h.codes(randCodes(r, 5*9, 4), 5, 9, 4)
	empty := h.graph(&bmm.Graph{Indptr: make([]int32, 8)}, 5)
	h.aggFloat(empty, x, &bmm.Epilogue{ColBias: randFloats(r, 9, -1, 1)}, "empty rows")
	h.aggBit(empty, x, nil, bmm.Requant{Scale: 1, Offset: 1.5}, 3, bittensor.ByCols, "empty rows")
	none := h.graph(&bmm.Graph{Indptr: []int32{0}}, 5)
	h.aggCodes(none, x, nil, bmm.Requant{Scale: 1}, 2, "no rows")
}

// adds runs the join of two float branches at awkward sizes, with and
// without ReLU, into every output; the values include NaNs of several
// payloads (a NaN sum is bmm.NaN on every backend), infinities, signed
// zeros and sums that round.
func (h *harness) adds(r *rand.Rand) {
	special := []float32{float32(math.NaN()), math.Float32frombits(0x7fa00001), math.Float32frombits(0xffc00000),
		float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-8, 16777216, 1, -1}
	for _, s := range Sizes {
		rows, cols := s, h.dim(r)
		if r.IntN(2) == 0 {
			rows, cols = h.dim(r), s
		}
		x, y := randFloats(r, rows*cols, -3, 3), randFloats(r, rows*cols, -3, 3)
		for i := range x {
			if r.IntN(8) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
			if r.IntN(8) == 0 {
				y[i] = special[r.IntN(len(special))]
			}
		}
		xp, yp := h.vector(x), h.vector(y)
		what := fmt.Sprintf("%d×%d", rows, cols)
		for _, relu := range []bool{false, true} {
			sum := h.refValues(h.addFloat(xp, yp, relu, what))
			cb := 1 + r.IntN(8)
			h.addCodes(xp, yp, rows, cols, relu, fitRequant(r, sum, cb), cb, what)
			ob := 1 + r.IntN(bittensor.MaxBits)
			h.addBit(xp, yp, rows, cols, relu, fitRequant(r, sum, ob), ob, randPacking(r), what)
		}
	}
	// Errors: lengths, and operands of another backend or freed.
	x, y := h.vector(make([]float32, 12)), h.vector(make([]float32, 11))
	is := func(err error, want error, what string) {
		if !errors.Is(err, want) {
			assert.Failf(h.t, "wrong error", "%s: got %v, want %v", what, err, want)
		}
	}
	d := h.newBits(3, 4, 2, bittensor.ByRows)
	is(h.got.AddBit(d.g, x.g, y.g, false, bmm.Requant{Scale: 1}), bmm.ErrShape, "AddBit of 12 and 11 values into 3×4")
	is(h.got.AddCodes(h.newCodes(3, 5, 2).g, x.g, x.g, false, bmm.Requant{Scale: 1}), bmm.ErrShape, "AddCodes of 12 values into 3×5")
	is(h.got.AddFloat(h.newVector(11).g, x.g, x.g, false), bmm.ErrShape, "AddFloat of 12 values into 11")
	freed := h.vector(make([]float32, 12))
	freed.g.Free()
	is(h.got.AddFloat(h.newVector(12).g, x.g, freed.g, false), bmm.ErrForeign, "AddFloat of a freed vector")
	gb, err := h.got.ReadBits(d.g)
	require.NoError(h.t, err)
	assert.Equal(h.t, uint32(3), gb.At(2, 3), "a failed AddBit wrote its destination")
}

// rowSums runs widths 1..32, awkward sizes and paddings.
func (h *harness) rowSums(r *rand.Rand) {
	for _, bits := range []int{1, 2, 3, 4, 5, 7, 8, 16, 31, 32} {
		for _, s := range Sizes {
			rows, cols := h.dim(r), s
			if r.IntN(2) == 0 {
				rows, cols = s, h.dim(r)
			}
			x := randTensor(h, r, rows, cols, bits, bittensor.ByRows, Paddings[r.IntN(len(Paddings))])
			h.rowSumsOf(h.bits(x), fmt.Sprintf("%d×%d %d-bit", rows, cols, bits))
		}
	}
}

// argmax runs hand-made rows whose answers are known (ties, NaN, signed
// zeros, infinities) and random ones, at several widths.
func (h *harness) argmax(r *rand.Rand) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	for _, c := range []struct {
		row  []float32
		want int32
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{5}, 0},
		{[]float32{nan, 9, 10}, 0}, // the scan starts at a NaN that nothing beats
		{[]float32{1, nan, 0.5, 2}, 3},
		{[]float32{nan, nan}, 0},
		{[]float32{negZero, 0, -1}, 0},
		{[]float32{-1, 0, negZero}, 1},
		{[]float32{-inf, -inf, -3}, 2},
		{[]float32{inf, nan, inf}, 0},
		{[]float32{-2, -1, nan, -1}, 1},
	} {
		v := h.vector(c.row)
		got := h.argmaxOf(v, 1, len(c.row), fmt.Sprint(c.row))
		assert.Equal(h.t, c.want, got[0], "Argmax of %v", c.row)
	}
	for _, cols := range []int{1, 2, 7, 16, 41, 64, 65} {
		rows := Sizes[r.IntN(len(Sizes))]
		v := tiedLogits(r, rows*cols)
		h.argmaxOf(h.vector(v), rows, cols, fmt.Sprintf("%d×%d", rows, cols))
	}
}

// tiedLogits is n logits of few values (many ties) and a NaN in about
// every 30th.
func tiedLogits(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(5))
		if r.IntN(30) == 0 {
			v[i] = float32(math.NaN())
		}
	}
	return v
}

// argmaxAt, on a backend that has it (bmm.ArgmaxAter), writes batches of
// rows one after the other into one destination set to −1: each batch's
// values are the reference's Argmax at its offset, the values past the
// last batch stay −1, and rows past the destination are refused.
func (h *harness) argmaxAt(r *rand.Rand) {
	at, ok := h.got.(bmm.ArgmaxAter)
	if !ok {
		h.t.Skip("no ArgmaxAt")
	}
	for _, size := range []int{1, 64, 65, 257, 4099} {
		for _, cols := range []int{1, 7, 41} {
			g, err := h.got.NewInts(size, -1)
			require.NoError(h.t, err, "NewInts %d", size)
			want := make([]int32, size)
			for i := range want {
				want[i] = -1
			}
			off := 0
			for off < size && r.IntN(4) != 0 {
				rows := 1 + r.IntN(size-off)
				v := tiedLogits(r, rows*cols)
				l := h.vector(v)
				require.NoError(h.t, at.ArgmaxAt(g, off, l.g, cols), "ArgmaxAt %d rows of %d at %d of %d", rows, cols, off, size)
				require.NoError(h.t, h.ref.Argmax(want[off:off+rows], l.r, cols))
				off += rows
			}
			got := make([]int32, size)
			require.NoError(h.t, h.got.ReadInts(got, g), "ReadInts")
			require.Equal(h.t, want, got, "ArgmaxAt into %d values, %d columns", size, cols)
			l := h.vector(make([]float32, 2*cols))
			assert.ErrorIs(h.t, at.ArgmaxAt(g, size-1, l.g, cols), bmm.ErrShape, "2 rows at %d of %d", size-1, size)
			assert.ErrorIs(h.t, at.ArgmaxAt(g, -1, l.g, cols), bmm.ErrShape, "at -1")
		}
	}
}

// argmaxTo scatters the argmax of batches of rows at distinct indices
// into one destination of bound values set to −1: both backends' values,
// written and untouched alike, must match; indices out of range or
// repeated, and destinations shorter than an index's bound, are refused.
func (h *harness) argmaxTo(r *rand.Rand) {
	for _, bound := range []int{0, 1, 63, 64, 65, 257, 4099} {
		for _, cols := range []int{1, 7, 41} {
			var g, ref bmm.Ints
			var err error
			g, err = h.got.NewInts(bound, -1)
			require.NoError(h.t, err, "NewInts %d", bound)
			ref, err = h.ref.NewInts(bound, -1)
			require.NoError(h.t, err)
			// Two batches over disjoint nodes, leaving some nodes in none.
			perm := r.Perm(bound)
			cut := len(perm) / 3
			for _, nodes := range [][]int{perm[:cut], perm[cut : cut+len(perm)/2]} {
				idx := make([]int32, len(nodes))
				for i, v := range nodes {
					idx[i] = int32(v)
				}
				gi, err := h.got.UploadIndex(idx, bound)
				require.NoError(h.t, err, "UploadIndex of %d below %d", len(idx), bound)
				ri, err := h.ref.UploadIndex(append([]int32(nil), idx...), bound)
				require.NoError(h.t, err)
				v := tiedLogits(r, len(idx)*cols)
				l := h.vector(v)
				require.NoError(h.t, h.got.ArgmaxTo(g, gi, l.g, cols), "ArgmaxTo %d rows of %d below %d", len(idx), cols, bound)
				require.NoError(h.t, h.ref.ArgmaxTo(ref, ri, l.r, cols))
			}
			gv, rv := make([]int32, bound), make([]int32, bound)
			for i := range gv {
				gv[i] = -7 // poison
			}
			require.NoError(h.t, h.got.ReadInts(gv, g), "ReadInts")
			require.NoError(h.t, h.ref.ReadInts(rv, ref))
			require.Equal(h.t, rv, gv, "ArgmaxTo into %d values, %d columns", bound, cols)
			for _, p := range perm[cut+len(perm)/2:] {
				require.Equal(h.t, int32(-1), rv[p], "reference: a node in no batch")
			}
		}
	}
	for _, c := range []struct {
		idx   []int32
		bound int
	}{
		{[]int32{0, 5}, 5}, {[]int32{-1}, 3}, {[]int32{2, 1, 2}, 3}, {[]int32{7, 100, 7}, 1 << 20}, {[]int32{0}, 0},
	} {
		_, err := h.got.UploadIndex(c.idx, c.bound)
		assert.ErrorIs(h.t, err, bmm.ErrIndex, "UploadIndex %v below %d", c.idx, c.bound)
	}
	dst, err := h.got.NewInts(4, -1)
	require.NoError(h.t, err)
	at, err := h.got.UploadIndex([]int32{4, 0}, 5)
	require.NoError(h.t, err)
	l, err := h.got.UploadVector(make([]float32, 6))
	require.NoError(h.t, err)
	assert.ErrorIs(h.t, h.got.ArgmaxTo(dst, at, l, 3), bmm.ErrShape, "an index bounded by 5 into 4 values")
	big, err := h.got.NewInts(5, -1)
	require.NoError(h.t, err)
	assert.ErrorIs(h.t, h.got.ArgmaxTo(big, at, l, 2), bmm.ErrShape, "6 logits as 2 rows of 2")
	require.NoError(h.t, h.got.ArgmaxTo(big, at, l, 3))
	assert.ErrorIs(h.t, h.got.ReadInts(make([]int32, 4), big), bmm.ErrShape, "reading 5 ints into 4")
	out := make([]int32, 5)
	require.NoError(h.t, h.got.ReadInts(out, big))
	assert.Equal(h.t, []int32{0, -1, -1, -1, 0}, out)
}

// readVector reads back uploaded values, NaN payloads and all, and an
// empty vector.
func (h *harness) readVector(r *rand.Rand) {
	for _, n := range []int{0, 1, 63, 257} {
		v := randFloats(r, n, -5, 5)
		if n > 1 {
			v[1] = math.Float32frombits(0x7fa00001)
		}
		p := h.vector(v)
		got := make([]float32, n)
		require.NoError(h.t, h.got.ReadVector(got, p.g))
		for i := range v {
			require.Equal(h.t, math.Float32bits(v[i]), math.Float32bits(got[i]), "ReadVector value %d of %d", i, n)
		}
	}
}

// chains run two-layer passes as a model does, operands flowing from op to
// op on the backend: X·W1 into codes, aggregated into bits (or codes and
// then float), row sums as the next zero-point term, ·W2 into logits,
// argmax. Traffic's op count must grow with each op.
func (h *harness) chains(r *rand.Rand) {
	for i := 0; i < 4; i++ {
		n, f, hid, classes := Sizes[1+r.IntN(len(Sizes)-1)], 1+r.IntN(300), 1+r.IntN(64), 2+r.IntN(9)
		xb, wb, ab := 1+r.IntN(8), 1+r.IntN(8), 1+r.IntN(8)
		x, w1, _, _ := h.operands(r, n, f, hid, xb, wb, false)
		w2 := h.bits(randTensor(h, r, hid, classes, wb, bittensor.ByCols, bittensor.DefaultPadding))
		what := fmt.Sprintf("chain %d: %d nodes, %d→%d→%d, %d/%d/%d bits", i, n, f, hid, classes, xb, wb, ab)
		ep1 := epFor(r, n, hid, epAll&^epReLU|epReLU*(i%2), f, xb, wb)
		before := h.got.Traffic()
		h1 := h.mulCodes(x, w1, ep1, fitRequant(r, h.refFloat(x, w1, ep1), ab), ab, what)
		g := h.graph(randGraph(r, n, n, 12, 0), n)
		normRows := randFloats(r, n, 0.05, 1)
		var z bitsPair
		if i%2 == 0 {
			z = h.aggBit(g, h1, &bmm.Epilogue{RowScale: normRows}, bmm.Requant{Scale: 1.5, Offset: 0.25}, ab, bittensor.ByRows, what)
		} else {
			c := h.aggCodes(g, h1, &bmm.Epilogue{RowScale: normRows}, bmm.Requant{Scale: 1.5, Offset: 0.25}, ab, what)
			h.aggFloat(g, c, &bmm.Epilogue{ColBias: randFloats(r, hid, -1, 1)}, what)
			z = h.aggBit(g, c, &bmm.Epilogue{RowScale: normRows}, bmm.Requant{Scale: 1.5, Offset: 0.25}, ab, bittensor.ByRows, what)
		}
		sums := h.rowSumsOf(z, what)
		// The zero-point term: RowTerm is the row sums just computed, on the backend.
		colTerm, colBias := randFloats(r, classes, -0.01, 0.01), randFloats(r, classes, -1, 1)
		tg, tr := h.vector(colTerm), h.vector(colBias)
		d := h.newVector(n * classes)
		require.NoError(h.t, h.got.MulFloat(d.g, z.g, w2.g, &bmm.Epi{RowTerm: sums.g, ColTerm: tg.g, ColBias: tr.g}), what)
		require.NoError(h.t, h.ref.MulFloat(d.r, z.r, w2.r, &bmm.Epi{RowTerm: sums.r, ColTerm: tg.r, ColBias: tr.r}), what)
		h.sameVector(d, what+" logits")
		h.argmaxOf(d, n, classes, what)
		assert.Greater(h.t, h.got.Traffic().Sub(before).Ops, int64(4), "%s: Traffic counts the ops run", what)
	}
}

// errs checks that bad calls fail with the documented error and change no
// output.
func (h *harness) errs(r *rand.Rand) {
	t := h.t
	is := func(err, want error, what string) {
		t.Helper()
		if !errors.Is(err, want) {
			assert.Failf(t, "wrong error", "%s: got %v, want %v", what, err, want)
		}
	}
	b := h.got
	a, w, _, _ := h.operands(r, 7, 70, 5, 2, 3, false)
	_, w9, _, _ := h.operands(r, 1, 9, 5, 2, 3, false)
	dst := h.newBits(7, 5, 4, bittensor.ByRows)
	dstCodes := h.newCodes(7, 5, 4)
	dstVec := h.newVector(7 * 5)
	rq := bmm.Requant{Scale: 1}

	// Shapes, named in the error.
	err := b.MulBit(dst.g, a.g, w9.g, nil, rq)
	is(err, bmm.ErrShape, "MulBit with K 70 against 9")
	if err != nil {
		assert.Contains(t, err.Error(), "7×70", "the error names A's shape")
		assert.Contains(t, err.Error(), "9×5", "the error names B's shape")
	}
	wrong := h.newBits(7, 6, 4, bittensor.ByRows)
	err = b.MulBit(wrong.g, a.g, w.g, nil, rq)
	is(err, bmm.ErrShape, "MulBit into 7×6")
	if err != nil {
		assert.Contains(t, err.Error(), "7×6", "the error names the destination's shape")
	}
	is(b.MulCodes(h.newCodes(6, 5, 2).g, a.g, w.g, nil, rq), bmm.ErrShape, "MulCodes into 6×5")
	is(b.MulFloat(h.newVector(34).g, a.g, w.g, nil), bmm.ErrShape, "MulFloat into 34 values")
	short := h.vector(make([]float32, 4))
	is(b.MulFloat(dstVec.g, a.g, w.g, &bmm.Epi{ColBias: short.g}), bmm.ErrShape, "ColBias of 4 for 5 columns")
	is(b.MulFloat(dstVec.g, a.g, w.g, &bmm.Epi{RowTerm: h.vector(make([]float32, 7)).g}), bmm.ErrShape, "RowTerm without ColTerm")
	// Packing: B as A.
	is(b.MulBit(dst.g, w.g, w.g, nil, rq), bmm.ErrPacking, "A packed by columns")
	is(b.RowSums(h.newVector(70).g, w.g), bmm.ErrPacking, "RowSums of a column-packed tensor")
	is(b.RowSums(h.newVector(6).g, a.g), bmm.ErrShape, "RowSums into 6 for 7 rows")

	// Foreign and freed operands.
	other := bmm.NewGenericBackend()
	defer other.Close()
	ob, err := other.UploadBits(randTensor(h, r, 7, 70, 2, bittensor.ByRows, bittensor.DefaultPadding))
	require.NoError(t, err)
	is(b.MulBit(dst.g, ob, w.g, nil, rq), bmm.ErrForeign, "A of another backend")
	ov, err := other.NewVector(5)
	require.NoError(t, err)
	is(b.MulFloat(dstVec.g, a.g, w.g, &bmm.Epi{ColBias: ov}), bmm.ErrForeign, "an epilogue vector of another backend")
	second := h.open(t) // a second instance of the backend under test
	defer second.Close()
	sb, err := second.UploadBits(randTensor(h, r, 7, 70, 2, bittensor.ByRows, bittensor.DefaultPadding))
	require.NoError(t, err)
	is(b.MulBit(dst.g, sb, w.g, nil, rq), bmm.ErrForeign, "A of a second instance")
	freed := h.bits(randTensor(h, r, 7, 70, 2, bittensor.ByRows, bittensor.DefaultPadding))
	freed.g.Free()
	freed.g.Free() // a second Free does nothing
	is(b.MulBit(dst.g, freed.g, w.g, nil, rq), bmm.ErrForeign, "a freed A")
	is(b.RowSums(dstVec.g, freed.g), bmm.ErrForeign, "RowSums of a freed tensor")
	fv := h.vector(make([]float32, 6))
	fv.g.Free()
	is(b.ReadVector(make([]float32, 6), fv.g), bmm.ErrForeign, "ReadVector of a freed vector")
	is(b.Argmax(make([]int32, 2), fv.g, 3), bmm.ErrForeign, "Argmax of a freed vector")

	// Uploads and allocations.
	_, err = b.UploadCodes([]uint8{1, 2, 4}, 1, 3, 2)
	is(err, bmm.ErrRange, "code 4 in 2 bits")
	_, err = b.UploadCodes([]uint8{1, 2}, 1, 3, 2)
	is(err, bmm.ErrShape, "2 codes for 1×3")
	_, err = b.NewCodes(2, 2, 9)
	is(err, bmm.ErrBits, "9-bit codes")
	_, err = b.NewBits(2, 2, 33, bittensor.ByRows)
	is(err, bmm.ErrBits, "33-bit tensor")
	_, err = b.UploadGraph(&bmm.Graph{Indptr: []int32{0, 2}, Indices: []int32{0, 5}}, 5)
	is(err, bmm.ErrShape, "source row 5 of 5")
	_, err = b.UploadGraph(&bmm.Graph{Indptr: []int32{0, 1}, Indices: []int32{0}, Weights: []uint8{4}, WeightBits: 2}, 5)
	is(err, bmm.ErrRange, "weight 4 in 2 bits")
	_, err = b.UploadGraph(&bmm.Graph{Indptr: []int32{0, 2}, Indices: []int32{0}}, 5)
	is(err, bmm.ErrShape, "indptr past the indices")

	// Aggregations.
	g := h.graph(&bmm.Graph{Indptr: []int32{0, 1, 1, 3, 3, 3, 3, 3}, Indices: []int32{1, 0, 2}}, 3)
	x4 := h.codes(randCodes(r, 4*5, 3), 4, 5, 3)
	is(b.AggFloat(dstVec.g, g.g, x4.g, nil), bmm.ErrShape, "X of 4 rows for 3 sources")
	x3 := h.codes(randCodes(r, 3*5, 3), 3, 5, 3)
	is(b.AggCodes(h.newCodes(7, 4, 3).g, g.g, x3.g, nil, rq), bmm.ErrShape, "AggCodes into 7×4")
	is(b.AggBit(wrong.g, g.g, x3.g, nil, rq), bmm.ErrShape, "AggBit into 7×6")
	heavy := make([]int32, 1<<16)
	hg := h.graph(&bmm.Graph{Indptr: []int32{0, 1 << 16}, Indices: heavy, Weights: make([]uint8, 1<<16), WeightBits: 8}, 3)
	hg.g.Free()
	is(b.AggFloat(h.newVector(5).g, hg.g, x3.g, nil), bmm.ErrForeign, "a freed graph")
	hw := make([]uint8, 1<<16)
	for i := range hw {
		hw[i] = 255
	}
	over := h.graph(&bmm.Graph{Indptr: []int32{0, 1 << 16}, Indices: heavy, Weights: hw, WeightBits: 8}, 3)
	x8 := h.codes(randCodes(r, 3*5, 8), 3, 5, 8)
	is(b.AggFloat(h.newVector(5).g, over.g, x8.g, nil), bmm.ErrOverflow, "65536 entries of weight 255 over 8-bit codes")

	// Reads.
	is(b.Argmax(make([]int32, 6), dstVec.g, 5), bmm.ErrShape, "Argmax of 35 logits as 6×5")
	is(b.Argmax(nil, h.newVector(0).g, 0), bmm.ErrShape, "Argmax with 0 columns")
	is(b.ReadVector(make([]float32, 34), dstVec.g), bmm.ErrShape, "ReadVector of 35 into 34")
	is(b.ReadCodes(make([]uint8, 34), dstCodes.g), bmm.ErrShape, "ReadCodes of 7×5 into 34")

	// Nothing above wrote an output: they are still poisoned.
	gb, err := b.ReadBits(dst.g)
	require.NoError(t, err)
	assert.Equal(t, uint32(15), gb.At(6, 4), "a failed op wrote its destination")
	got := make([]float32, 35)
	require.NoError(t, b.ReadVector(got, dstVec.g))
	assert.Equal(t, math.Float32bits(poisonFloat), math.Float32bits(got[0]), "a failed op wrote its destination")
}

// forks checks a bmm.Forker (other backends skip it): on a fork the
// aggregations, adds and chains give the reference's results; a fork and its
// root take each other's operands; several forks running the same ops at
// once on operands of the root, each into its own outputs, all give the
// reference's results (under -race this catches scratch or counters the
// forks share); the forks' ops count in the root's Traffic; a closed fork
// refuses ops while its root goes on, and closing a root makes every
// operand foreign on its forks.
func (h *harness) forks(r *rand.Rand) {
	t := h.t
	fk, ok := h.got.(bmm.Forker)
	if !ok {
		t.Logf("%s is not a bmm.Forker: no forks to check", h.got.Name())
		return
	}
	f1, err := fk.Fork()
	require.NoError(t, err, "Fork")
	sub := *h
	sub.got = f1
	before := h.got.Traffic()
	sub.aggregations(r)
	sub.adds(r)
	sub.chains(r)
	assert.Greater(t, h.got.Traffic().Sub(before).Ops, int64(0), "the root's Traffic counts its fork's ops")

	// Operands cross: made on the fork, used by the root, and back.
	x, w, _, _ := sub.operands(r, 130, 300, 17, 3, 2, false)
	ep := epFor(r, 130, 17, epAll&^epReLU, 300, 3, 2)
	c := h.mulCodes(x, w, ep, fitRequant(r, h.refFloat(x, w, ep), 4), 4, "root on the fork's operands")
	g := h.graph(randGraph(r, 130, 130, 9, 0), 130)
	sub.aggBit(g, c, nil, bmm.Requant{Scale: 0.5}, 3, bittensor.ByCols, "fork on the root's operands")

	// Forks side by side on the root's operands, products and aggregations
	// large enough that the root would split them across cores.
	const lanes, reps = 4, 3
	n, f, hid := 1000, 400, 48
	x, w, _, _ = h.operands(r, n, f, hid, 4, 3, false)
	ep = epFor(r, n, hid, epAll&^epReLU, f, 4, 3)
	eg, er := h.epi(ep)
	rq := fitRequant(r, h.refFloat(x, w, ep), 4)
	g = h.graph(randGraph(r, n, n, 20, 0), n)
	refCodes, err := h.ref.NewCodes(n, hid, 4)
	require.NoError(t, err)
	require.NoError(t, h.ref.MulCodes(refCodes, x.r, w.r, er, rq))
	refOut, err := h.ref.NewVector(n * hid)
	require.NoError(t, err)
	require.NoError(t, h.ref.AggFloat(refOut, g.r, refCodes, nil))
	want := make([]float32, n*hid)
	require.NoError(t, h.ref.ReadVector(want, refOut))
	forks := make([]bmm.Backend, lanes)
	for i := range forks {
		forks[i], err = fk.Fork()
		require.NoError(t, err, "Fork %d", i)
	}
	before = h.got.Traffic()
	got := make([][][]float32, lanes)
	errs := make([]error, lanes)
	var wg sync.WaitGroup
	for i, fb := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = func() error {
				for range reps {
					c, err := fb.NewCodes(n, hid, 4)
					if err != nil {
						return err
					}
					v, err := fb.NewVector(n * hid)
					if err != nil {
						return err
					}
					if err := fb.MulCodes(c, x.g, w.g, eg, rq); err != nil {
						return err
					}
					if err := fb.AggFloat(v, g.g, c, nil); err != nil {
						return err
					}
					out := make([]float32, n*hid)
					if err := fb.ReadVector(out, v); err != nil {
						return err
					}
					got[i] = append(got[i], out)
					c.Free()
					v.Free()
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	for i := range forks {
		require.NoError(t, errs[i], "fork %d", i)
		for k, out := range got[i] {
			for j := range want {
				require.Equal(t, math.Float32bits(want[j]), math.Float32bits(out[j]), "fork %d, run %d: value %d of %d", i, k, j, len(want))
			}
		}
	}
	assert.GreaterOrEqual(t, h.got.Traffic().Sub(before).Ops, int64(lanes*reps*2), "the root's Traffic counts every fork's ops")

	// A closed fork refuses ops; its root and the other forks go on.
	require.NoError(t, forks[0].Close())
	dst, err := forks[0].NewVector(n * hid)
	if err == nil {
		err = forks[0].AggFloat(dst, g.g, c.g, nil)
	}
	if !errors.Is(err, bmm.ErrForeign) {
		assert.Failf(t, "wrong error", "an op on a closed fork: got %v, want %v", err, bmm.ErrForeign)
	}
	h.mulCodes(x, w, ep, rq, 4, "root after a fork closed")
	v, err := forks[1].NewVector(n * hid)
	require.NoError(t, err)
	c2, err := forks[1].NewCodes(n, hid, 4)
	require.NoError(t, err)
	require.NoError(t, forks[1].MulCodes(c2, x.g, w.g, eg, rq), "a fork after another closed")
	require.NoError(t, forks[1].AggFloat(v, g.g, c2, nil))
	for _, fb := range forks[1:] {
		assert.NoError(t, fb.Close())
	}
	assert.NoError(t, f1.Close())

	// Closing the root makes its operands foreign on a fork.
	root := h.open(t)
	rf, ok := root.(bmm.Forker)
	require.True(t, ok, "a second instance of a Forker is one")
	fork, err := rf.Fork()
	require.NoError(t, err)
	vec, err := root.UploadVector(randFloats(r, 8, -1, 1))
	require.NoError(t, err)
	require.NoError(t, fork.ReadVector(make([]float32, 8), vec), "a fork reads its root's vector")
	require.NoError(t, root.Close())
	err = fork.ReadVector(make([]float32, 8), vec)
	if !errors.Is(err, bmm.ErrForeign) {
		assert.Failf(t, "wrong error", "reading a closed root's vector on its fork: got %v, want %v", err, bmm.ErrForeign)
	}
	assert.NoError(t, fork.Close())
}
