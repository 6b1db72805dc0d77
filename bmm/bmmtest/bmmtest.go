package bmmtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// DefaultSeed seeds the suite unless QGTC_BMMTEST_SEED says otherwise.
const DefaultSeed = 20220402

// SeedEnv names the environment variable that overrides DefaultSeed: a
// decimal seed, or "random".
const SeedEnv = "QGTC_BMMTEST_SEED"

// Sizes are the awkward extents every dimension of a product is tested at:
// empty, one, and either side of the 64-bit word and the 256-bit tile.
var Sizes = []int{0, 1, 63, 64, 65, 255, 256, 257}

// Seed returns the suite's seed: QGTC_BMMTEST_SEED if set, else DefaultSeed.
func Seed(t testing.TB) uint64 {
	s := os.Getenv(SeedEnv)
	switch s {
	case "":
		return DefaultSeed
	case "random":
		return uint64(time.Now().UnixNano())
	}
	v, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, "%s=%q is neither a decimal seed nor \"random\"", SeedEnv, s)
	return v
}

// Conformance runs the whole suite on k. Every kernel's tests call it.
func Conformance(t *testing.T, k bmm.Kernel) {
	seed := Seed(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bmmtest: kernel %q failed with seed %d; replay with %s=%d", k.Name(), seed, SeedEnv, seed)
		}
	})
	s := &suite{k: k, seed: seed, short: testing.Short()}
	for i, c := range []struct {
		name string
		run  func(t *testing.T, r *rand.Rand)
	}{
		{"shapes", s.shapes},
		{"bitpairs", s.bitPairs},
		{"widebits", s.wideBits},
		{"extremes", s.extremes},
		{"blocksparse", s.blockSparse},
		{"inputpadding", s.inputPadding},
		{"epilogues", s.epilogues},
		{"mulbit", s.mulBit},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Each group has its own stream, so `-run` on one group replays it.
			c.run(t, rand.New(rand.NewPCG(seed, uint64(i))))
		})
	}
}

type suite struct {
	k     bmm.Kernel
	seed  uint64
	short bool
}

// product is one test case: row-major values of A (M×K) and B (K×N).
type product struct {
	m, k, n      int
	abits, bbits int
	a, b         []int32
	apad, bpad   bittensor.Padding
}

func (p *product) String() string {
	return fmt.Sprintf("%dx%dx%d/a%d.b%d", p.m, p.k, p.n, p.abits, p.bbits)
}

// maxVal is the largest b-bit value as an int32 bit pattern.
func maxVal(b int) int32 { return int32(uint32(uint64(1)<<b - 1)) }

// randVals draws n b-bit values; density is the fraction that are non-zero
// (1: uniform over all values).
func randVals(r *rand.Rand, n, b int, density float64) []int32 {
	v := make([]int32, n)
	for i := range v {
		if density < 1 && r.Float64() >= density {
			continue
		}
		v[i] = int32(uint32(r.Uint64() & (uint64(1)<<b - 1)))
	}
	return v
}

func fill(n int, v int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// newProduct draws a random product with default padding.
func newProduct(r *rand.Rand, m, k, n, abits, bbits int) *product {
	return &product{
		m: m, k: k, n: n, abits: abits, bbits: bbits,
		a:    randVals(r, m*k, abits, 1),
		b:    randVals(r, k*n, bbits, 1),
		apad: bittensor.DefaultPadding, bpad: bittensor.DefaultPadding,
	}
}

// naive is the reference: a plain int64 triple loop on the values as
// unsigned integers. It fails the test if a result leaves int32, which the
// suite's bit widths are chosen never to allow.
func naive(t *testing.T, p *product) []int32 {
	out := make([]int32, p.m*p.n)
	for i := 0; i < p.m; i++ {
		for j := 0; j < p.n; j++ {
			var s int64
			for l := 0; l < p.k; l++ {
				s += int64(uint32(p.a[i*p.k+l])) * int64(uint32(p.b[l*p.n+j]))
			}
			require.LessOrEqual(t, s, int64(math.MaxInt32), "bmmtest bug: %v reference overflows", p)
			out[i*p.n+j] = int32(s)
		}
	}
	return out
}

func (p *product) pack(t *testing.T) (a, b *bittensor.Tensor) {
	a, err := bittensor.Pack(p.a, p.m, p.k, p.abits, bittensor.ByRows, p.apad)
	require.NoError(t, err, "pack A %v", p)
	b, err = bittensor.Pack(p.b, p.k, p.n, p.bbits, bittensor.ByCols, p.bpad)
	require.NoError(t, err, "pack B %v", p)
	m, n, err := bmm.Check(a, b)
	require.NoError(t, err, "bmmtest bug: %v fails bmm.Check", p)
	require.Equal(t, [2]int{p.m, p.n}, [2]int{m, n})
	return a, b
}

// checkAll runs MulInt, then MulFloat with a random epilogue, then MulBit
// with a random epilogue, re-quantization, packing and padding.
// The operands must come back unchanged, padding included.
func (s *suite) checkAll(t *testing.T, r *rand.Rand, p *product) {
	a, b := p.pack(t)
	a0, b0 := a.Clone(), b.Clone()
	ref := naive(t, p)
	s.checkInt(t, p, a, b, ref)
	s.checkFloat(t, p, a, b, ref, randEpilogue(r, p.m, p.n, r.IntN(64), ref))
	ob := 1 + r.IntN(bittensor.MaxBits)
	s.checkBit(t, r, p, a, b, ref, randEpilogue(r, p.m, p.n, r.IntN(64), ref), ob, randPacking(r), randPadding(r))
	assert.True(t, a0.Equal(a), "%v: the kernel modified operand A", p)
	assert.True(t, b0.Equal(b), "%v: the kernel modified operand B", p)
}

const poisonInt = int32(-0x21524111) // 0xDEADBEEF

func (s *suite) checkInt(t *testing.T, p *product, a, b *bittensor.Tensor, ref []int32) {
	dst := fill(p.m*p.n, poisonInt)
	require.NoError(t, s.k.MulInt(dst, a, b), "MulInt %v", p)
	bad, first := 0, -1
	for i := range ref {
		if dst[i] != ref[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		assert.Failf(t, "MulInt differs from the naive product",
			"%v: %d of %d elements differ; first at (%d, %d): got %d, want %d",
			p, bad, len(ref), first/p.n, first%p.n, dst[first], ref[first])
	}
}

func (s *suite) checkFloat(t *testing.T, p *product, a, b *bittensor.Tensor, ref []int32, ep *bmm.Epilogue) {
	poison := math.Float32frombits(0x7fc0dead) // a NaN no epilogue produces
	dst := make([]float32, p.m*p.n)
	for i := range dst {
		dst[i] = poison
	}
	require.NoError(t, s.k.MulFloat(dst, a, b, ep), "MulFloat %v %s", p, epString(ep))
	bad, first := 0, -1
	var want float32
	for i := range ref {
		w := ep.Apply(ref[i], i/p.n, i%p.n)
		if math.Float32bits(dst[i]) != math.Float32bits(w) {
			if first < 0 {
				first, want = i, w
			}
			bad++
		}
	}
	if bad > 0 {
		assert.Failf(t, "MulFloat differs from Epilogue.Apply on the naive product",
			"%v %s: %d of %d elements differ; first at (%d, %d) with C=%d: got %v (%#08x), want %v (%#08x)",
			p, epString(ep), bad, len(ref), first/p.n, first%p.n, ref[first],
			dst[first], math.Float32bits(dst[first]), want, math.Float32bits(want))
	}
}

func (s *suite) checkBit(t *testing.T, r *rand.Rand, p *product, a, b *bittensor.Tensor, ref []int32,
	ep *bmm.Epilogue, outBits int, packing bittensor.Packing, pad bittensor.Padding) {
	rq := randRequant(r, p, ref, ep, outBits)
	what := fmt.Sprintf("%v %s rq=%+v out=%d-bit %v pad=%+v", p, epString(ep), rq, outBits, packing, pad)
	dst, err := bittensor.New(p.m, p.n, outBits, packing, pad)
	require.NoError(t, err)
	// Poison every word, padding included: the kernel must write every
	// element and leave the padding bits zero.
	for i := range dst.Words() {
		dst.Words()[i] = ^uint64(0)
	}
	require.NoError(t, s.k.MulBit(dst, a, b, ep, rq), "MulBit %s", what)
	bad, first := 0, -1
	var got, want uint32
	for i := range ref {
		m, n := i/p.n, i%p.n
		w := rq.Quantize(ep.Apply(ref[i], m, n), outBits)
		if g := dst.At(m, n); g != w {
			if first < 0 {
				first, got, want = i, g, w
			}
			bad++
		}
	}
	if bad > 0 {
		assert.Failf(t, "MulBit differs from Requant.Quantize(Epilogue.Apply(naive))",
			"%s: %d of %d elements differ; first at (%d, %d) with C=%d: got %d, want %d",
			what, bad, len(ref), first/p.n, first%p.n, ref[first], got, want)
	}
	if err := PaddingClear(dst); err != nil {
		assert.Failf(t, "MulBit left padding bits set", "%s: %v", what, err)
	}
}

// PaddingClear returns an error naming the first padding bit of t that is
// set: a bit past K in a line, or any bit of a padding line.
func PaddingClear(t *bittensor.Tensor) error {
	k, lw := t.K(), t.LineWords()
	for p := 0; p < t.Bits(); p++ {
		for l := 0; l < t.PaddedLines(); l++ {
			line := t.Line(p, l)
			for w, word := range line {
				var valid uint64 // bits of word that hold values
				switch {
				case l >= t.Lines() || w*64 >= k:
				case (w+1)*64 <= k:
					valid = ^uint64(0)
				default:
					valid = 1<<(k-w*64) - 1
				}
				if extra := word &^ valid; extra != 0 {
					return fmt.Errorf("plane %d, line %d (of %d, padded to %d), word %d (of %d, K=%d): padding bits %#x set",
						p, l, t.Lines(), t.PaddedLines(), w, lw, k, extra)
				}
			}
		}
	}
	return nil
}

// Epilogue fields, one bit each in randEpilogue's mask.
const (
	epColScale = 1 << iota
	epRowColTerm
	epColConst
	epRowScale
	epColBias
	epReLU
	epAll = 1<<iota - 1
)

func randFloats(r *rand.Rand, n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*r.Float64())
	}
	return v
}

// randEpilogue builds an epilogue with the fields selected by mask, with
// magnitudes that keep every step relevant for products up to max(|ref|).
// Mask 0 returns nil (the identity) half the time and an empty Epilogue the
// other half.
func randEpilogue(r *rand.Rand, m, n, mask int, ref []int32) *bmm.Epilogue {
	if mask == 0 && r.IntN(2) == 0 {
		return nil
	}
	cmax := 1.0
	for _, c := range ref {
		cmax = max(cmax, math.Abs(float64(c)))
	}
	ep := &bmm.Epilogue{}
	if mask&epColScale != 0 {
		ep.ColScale = randFloats(r, n, -2/cmax, 2/cmax) // result in about ±2
	}
	if mask&epRowColTerm != 0 {
		ep.RowTerm = randFloats(r, m, -30, 30)
		ep.ColTerm = randFloats(r, n, -0.1, 0.1)
	}
	if mask&epColConst != 0 {
		ep.ColConst = randFloats(r, n, -3, 3)
	}
	if mask&epRowScale != 0 {
		ep.RowScale = randFloats(r, m, -1.5, 1.5)
	}
	if mask&epColBias != 0 {
		ep.ColBias = randFloats(r, n, -2, 2)
	}
	ep.ReLU = mask&epReLU != 0
	return ep
}

func epString(ep *bmm.Epilogue) string {
	if ep == nil {
		return "ep=nil"
	}
	s := "ep{"
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"ColScale", ep.ColScale != nil}, {"RowTerm·ColTerm", ep.RowTerm != nil},
		{"ColConst", ep.ColConst != nil}, {"RowScale", ep.RowScale != nil},
		{"ColBias", ep.ColBias != nil}, {"ReLU", ep.ReLU},
	} {
		if f.on {
			if s != "ep{" {
				s += ","
			}
			s += f.name
		}
	}
	return s + "}"
}

// randRequant maps the range of ep(C) onto roughly [0, 2^outBits), with a
// random stretch and shift so codes clamp at both ends now and then.
func randRequant(r *rand.Rand, p *product, ref []int32, ep *bmm.Epilogue, outBits int) bmm.Requant {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, c := range ref {
		y := float64(ep.Apply(c, i/p.n, i%p.n))
		lo, hi = min(lo, y), max(hi, y)
	}
	if !(hi > lo) {
		lo, hi = lo-1, lo+1
		if math.IsInf(lo, 0) || math.IsNaN(lo) {
			lo, hi = 0, 1
		}
	}
	levels := math.Exp2(float64(outBits))
	scale := levels / (hi - lo) * (0.6 + 0.8*r.Float64())
	off := -lo*scale + levels*(r.Float64()-0.5)*0.2
	return bmm.Requant{Scale: float32(scale), Offset: float32(off)}
}

func randPacking(r *rand.Rand) bittensor.Packing {
	if r.IntN(2) == 0 {
		return bittensor.ByRows
	}
	return bittensor.ByCols
}

// Paddings are the output paddings MulBit is tested with.
var Paddings = []bittensor.Padding{
	bittensor.DefaultPadding,
	{Lines: 1, Bits: 64},
	{Lines: 3, Bits: 192},
	{Lines: 32, Bits: 512},
}

func randPadding(r *rand.Rand) bittensor.Padding { return Paddings[r.IntN(len(Paddings))] }

// randDim is a small extent, sometimes one of Sizes.
func (s *suite) randDim(r *rand.Rand) int {
	if r.IntN(4) == 0 {
		return Sizes[r.IntN(len(Sizes))]
	}
	if s.short {
		return 1 + r.IntN(40)
	}
	return 1 + r.IntN(80)
}

// shapes puts each of Sizes in each of M, K and N, with random other
// extents and random bit widths 1..8.
func (s *suite) shapes(t *testing.T, r *rand.Rand) {
	for dim, name := range []string{"M", "K", "N"} {
		for _, size := range Sizes {
			d := [3]int{s.randDim(r), s.randDim(r), s.randDim(r)}
			d[dim] = size
			p := newProduct(r, d[0], d[1], d[2], 1+r.IntN(8), 1+r.IntN(8))
			t.Run(fmt.Sprintf("%s=%d/%v", name, size, p), func(t *testing.T) { s.checkAll(t, r, p) })
		}
	}
}

// bitPairs covers every pair of widths 1..8.
func (s *suite) bitPairs(t *testing.T, r *rand.Rand) {
	for ab := 1; ab <= 8; ab++ {
		for bb := 1; bb <= 8; bb++ {
			m, k, n := 1+r.IntN(40), 1+r.IntN(300), 1+r.IntN(40)
			if s.short {
				m, k, n = 1+r.IntN(17), 1+r.IntN(150), 1+r.IntN(17)
			}
			p := newProduct(r, m, k, n, ab, bb)
			t.Run(p.String(), func(t *testing.T) { s.checkAll(t, r, p) })
		}
	}
}

// maxK is the largest K whose a-bit by b-bit product cannot overflow int32.
func maxK(ab, bb int) int {
	k := int(float64(math.MaxInt32) / bmm.MaxSum(1, ab, bb))
	for bmm.MaxSum(k+1, ab, bb) <= math.MaxInt32 {
		k++
	}
	for k > 0 && bmm.MaxSum(k, ab, bb) > math.MaxInt32 {
		k--
	}
	return k
}

// wideBits covers widths 9..16 and 32, at the largest K that cannot
// overflow (all-ones values, so C reaches bmm.MaxSum) and at a random
// smaller K. 16×16 and anything with 32 bits only fit K = 0.
func (s *suite) wideBits(t *testing.T, r *rand.Rand) {
	pairs := [][2]int{{16, 1}, {1, 16}, {16, 8}, {8, 16}, {16, 16}, {12, 12}, {9, 15},
		{32, 1}, {1, 32}, {32, 32}, {32, 16}}
	for i := 0; i < 4; i++ {
		pairs = append(pairs, [2]int{9 + r.IntN(8), 1 + r.IntN(16)})
	}
	for _, pr := range pairs {
		km := maxK(pr[0], pr[1])
		require.LessOrEqual(t, bmm.MaxSum(km, pr[0], pr[1]), float64(math.MaxInt32))
		for _, k := range []int{km, r.IntN(km + 1)} {
			k = min(k, 2000)
			m, n := 1+r.IntN(20), 1+r.IntN(20)
			p := newProduct(r, m, k, n, pr[0], pr[1])
			if k == km {
				p.a, p.b = fill(m*k, maxVal(pr[0])), fill(k*n, maxVal(pr[1]))
			}
			t.Run(p.String(), func(t *testing.T) { s.checkAll(t, r, p) })
		}
	}
}

// extremes: all-zero and all-ones (the largest values) operands.
func (s *suite) extremes(t *testing.T, r *rand.Rand) {
	shapes := [][3]int{{65, 257, 63}, {1, 256, 1}, {64, 64, 64}, {17, 1000, 3}}
	if s.short {
		shapes = shapes[:3]
	}
	for _, sh := range shapes {
		for _, bits := range [][2]int{{1, 1}, {8, 8}, {4, 7}, {1, 8}, {16, 1}} {
			if maxK(bits[0], bits[1]) < sh[1] {
				continue
			}
			m, k, n := sh[0], sh[1], sh[2]
			for _, kind := range []string{"zero", "ones", "zeroA", "zeroB"} {
				p := newProduct(r, m, k, n, bits[0], bits[1])
				switch kind {
				case "zero":
					p.a, p.b = fill(m*k, 0), fill(k*n, 0)
				case "ones":
					p.a, p.b = fill(m*k, maxVal(p.abits)), fill(k*n, maxVal(p.bbits))
				case "zeroA":
					p.a = fill(m*k, 0)
				case "zeroB":
					p.b = fill(k*n, 0)
				}
				t.Run(kind+"/"+p.String(), func(t *testing.T) { s.checkAll(t, r, p) })
			}
		}
	}
}

// blockSparse: a 1-bit A where most 64-row × 256-column blocks are zero,
// like the block-diagonal adjacency of a batch of subgraphs, with ragged
// edges; B is a b-bit feature matrix.
func (s *suite) blockSparse(t *testing.T, r *rand.Rand) {
	shapes := [][3]int{{320, 1024, 24}, {300, 1000, 17}, {64, 2048, 5}}
	if s.short {
		shapes = [][3]int{{130, 520, 9}, {64, 512, 3}}
	}
	for _, sh := range shapes {
		for _, bb := range []int{1, 4, 8} {
			m, k, n := sh[0], sh[1], sh[2]
			p := newProduct(r, m, k, n, 1, bb)
			p.a = fill(m*k, 0)
			for bi := 0; bi*64 < m; bi++ {
				for bk := 0; bk*256 < k; bk++ {
					if bk != bi/4 && r.Float64() > 0.15 { // keep the diagonal, ~15% elsewhere
						continue
					}
					dens := 0.05 + 0.5*r.Float64()
					for i := bi * 64; i < min(m, bi*64+64); i++ {
						for l := bk * 256; l < min(k, bk*256+256); l++ {
							if r.Float64() < dens {
								p.a[i*k+l] = 1
							}
						}
					}
				}
			}
			t.Run(p.String(), func(t *testing.T) { s.checkAll(t, r, p) })
		}
	}
}

// inputPadding: operands packed with paddings other than the default
// (bmm.Check only requires A and B to agree on the padded K).
func (s *suite) inputPadding(t *testing.T, r *rand.Rand) {
	for _, pads := range [][2]bittensor.Padding{
		{{Lines: 1, Bits: 64}, {Lines: 1, Bits: 64}},
		{{Lines: 8, Bits: 128}, {Lines: 3, Bits: 128}},
		{{Lines: 32, Bits: 512}, {Lines: 16, Bits: 512}},
	} {
		for _, sh := range [][3]int{{1, 1, 1}, {33, 65, 17}, {65, 200, 31}} {
			p := newProduct(r, sh[0], sh[1], sh[2], 1+r.IntN(8), 1+r.IntN(8))
			p.apad, p.bpad = pads[0], pads[1]
			t.Run(fmt.Sprintf("%v/apad=%d.%d/bpad=%d.%d", p, pads[0].Lines, pads[0].Bits, pads[1].Lines, pads[1].Bits),
				func(t *testing.T) { s.checkAll(t, r, p) })
		}
	}
}

// epilogues: every combination of epilogue fields (and nil) through
// MulFloat and MulBit.
func (s *suite) epilogues(t *testing.T, r *rand.Rand) {
	for mask := 0; mask <= epAll; mask++ {
		p := newProduct(r, 1+r.IntN(30), 1+r.IntN(200), 1+r.IntN(30), 1+r.IntN(8), 1+r.IntN(8))
		a, b := p.pack(t)
		ref := naive(t, p)
		ep := randEpilogue(r, p.m, p.n, mask, ref)
		t.Run(fmt.Sprintf("%s/%v", epString(ep), p), func(t *testing.T) {
			s.checkFloat(t, p, a, b, ref, ep)
			s.checkBit(t, r, p, a, b, ref, ep, 1+r.IntN(8), randPacking(r), randPadding(r))
		})
	}
	// nil and empty epilogues must both be the identity.
	p := newProduct(r, 20, 100, 20, 3, 5)
	a, b := p.pack(t)
	ref := naive(t, p)
	t.Run("nil", func(t *testing.T) { s.checkFloat(t, p, a, b, ref, nil) })
	t.Run("empty", func(t *testing.T) { s.checkFloat(t, p, a, b, ref, &bmm.Epilogue{}) })
}

// mulBit: re-quantization into both packings, every output padding and a
// spread of output widths.
func (s *suite) mulBit(t *testing.T, r *rand.Rand) {
	outs := []int{1, 2, 3, 7, 8, 13, 16, 31, 32}
	if s.short {
		outs = []int{1, 3, 8, 32}
	}
	for _, packing := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
		for _, pad := range Paddings {
			for _, ob := range outs {
				p := newProduct(r, s.randDim(r), 1+r.IntN(150), s.randDim(r), 1+r.IntN(8), 1+r.IntN(8))
				a, b := p.pack(t)
				ref := naive(t, p)
				ep := randEpilogue(r, p.m, p.n, r.IntN(epAll+1), ref)
				t.Run(fmt.Sprintf("%v/pad=%d.%d/out=%d/%v", packing, pad.Lines, pad.Bits, ob, p), func(t *testing.T) {
					s.checkBit(t, r, p, a, b, ref, ep, ob, packing, pad)
				})
			}
		}
	}
}
