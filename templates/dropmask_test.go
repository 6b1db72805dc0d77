package templates

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tplRefGATDrop is GATAggregateDropout in float64: tplRefGAT with each
// weight a_e of head h multiplied by 1/(1−p) when DropKeep keeps element
// eid·heads+h, by 0 otherwise.
func tplRefGATDrop(g CSR, feat, el, er []float64, heads, d int, slope float64, drop Dropout) []float64 {
	f := heads * d
	out := make([]float64, g.Rows()*f)
	for v := 0; v < g.Rows(); v++ {
		p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
		for h := 0; h < heads; h++ {
			sc := make([]float64, p1-p0)
			m := math.Inf(-1)
			for p := p0; p < p1; p++ {
				z := el[int(g.Indices[p])*heads+h] + er[v*heads+h]
				if z < 0 {
					z *= slope
				}
				sc[p-p0] = z
				m = math.Max(m, z)
			}
			var zs float64
			for i := range sc {
				sc[i] = math.Exp(sc[i] - m)
				zs += sc[i]
			}
			for p := p0; p < p1; p++ {
				a := sc[p-p0] / zs
				if DropKeep(drop.Seed, g.eid(p)*heads+h, drop.P) {
					a /= 1 - float64(drop.P)
				} else {
					a = 0
				}
				u := int(g.Indices[p])
				for k := 0; k < d; k++ {
					out[v*f+h*d+k] += a * feat[u*f+h*d+k]
				}
			}
		}
	}
	return out
}

func TestDropKeepRate(t *testing.T) {
	for _, p := range []float32{0, 0.1, 0.6, 1} {
		t.Run(fmt.Sprintf("p=%g", p), func(t *testing.T) {
			const n = 200000
			kept := 0
			for i := range n {
				if DropKeep(0x5eed, i, p) {
					kept++
				}
			}
			// 1−p within 5 standard deviations of a binomial(n, 1−p).
			sd := math.Sqrt(float64(p) * float64(1-p) / n)
			assert.InDelta(t, 1-float64(p), float64(kept)/n, 5*sd+1e-9)
		})
	}
}

// TestDropMaskMatchesDropKeep: the kernels' integer threshold keeps
// exactly what DropKeep keeps, at rates on and beside multiples of 2⁻²⁴.
func TestDropMaskMatchesDropKeep(t *testing.T) {
	ps := []float32{-1, 0, 1e-9, 0.1, 0.5, 0.6, 0.999, 1, 2, float32(math.NaN())}
	for _, k := range []float32{1, 3, 1 << 23, 1<<24 - 1} {
		p := k / (1 << 24)
		ps = append(ps, p, math.Nextafter32(p, 0), math.Nextafter32(p, 1))
	}
	for _, p := range ps {
		t.Run(fmt.Sprintf("p=%g", p), func(t *testing.T) {
			m := Dropout{Seed: 0xabc, P: p}.mask()
			bad := 0
			for i := range 1 << 16 {
				want := float32(0)
				if DropKeep(0xabc, i, p) {
					want = 1
					if p > 0 {
						want = 1 / (1 - p)
					}
				}
				if got := m.factor(i); got != want {
					bad++
				}
			}
			assert.Zero(t, bad, "elements whose factor disagrees with DropKeep")
		})
	}
}

func TestGATAggregateDropout(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const slope = 0.2
	for _, hd := range [][2]int{{1, 1}, {1, 16}, {2, 3}, {4, 17}} {
		heads, d := hd[0], hd[1]
		f := heads * d
		t.Run(fmt.Sprintf("heads=%d/d=%d/p=0", heads, d), func(t *testing.T) {
			// P = 0 takes no mask whatever the seed: bit for bit GATAggregate.
			g := tplGraph(rng, 50, 40, 4, true, true)
			feat, el, er := tplRandVec(rng, 40*f), tplRandVec(rng, 40*heads), tplRandVec(rng, g.Rows()*heads)
			r := tplRandVec(rng, g.Rows()*f)
			out, stats := make([]float32, g.Rows()*f), make([]float32, g.Rows()*heads*2)
			require.NoError(t, GATAggregate(out, stats, g, feat, el, er, heads, d, slope, nil))
			gf, gl, gr := make([]float32, len(feat)), make([]float32, len(el)), make([]float32, len(er))
			require.NoError(t, GATAggregateBackward(gf, gl, gr, g, CSR{}, feat, el, er, out, stats, r, heads, d, slope, nil))
			out2, stats2 := make([]float32, len(out)), make([]float32, len(stats))
			drop := Dropout{Seed: 99, P: 0}
			require.NoError(t, GATAggregateDropout(out2, stats2, g, feat, el, er, heads, d, slope, drop, nil))
			gf2, gl2, gr2 := make([]float32, len(feat)), make([]float32, len(el)), make([]float32, len(er))
			require.NoError(t, GATAggregateDropoutBackward(gf2, gl2, gr2, g, CSR{}, feat, el, er, out2, stats2, r, heads, d, slope, drop, nil))
			assert.Equal(t, out, out2)
			assert.Equal(t, stats, stats2)
			assert.Equal(t, gf, gf2)
			assert.Equal(t, gl, gl2)
			assert.Equal(t, gr, gr2)
		})
		for _, p := range []float32{0.3, 0.6} {
			t.Run(fmt.Sprintf("heads=%d/d=%d/p=%g", heads, d, p), func(t *testing.T) {
				g := tplGraph(rng, 50, 40, 4, true, true)
				feat, el, er := tplRandVec(rng, 40*f), tplRandVec(rng, 40*heads), tplRandVec(rng, g.Rows()*heads)
				drop := Dropout{Seed: rng.Uint64(), P: p}
				want := tplRefGATDrop(g, tplTo64(feat), tplTo64(el), tplTo64(er), heads, d, slope, drop)
				ones := make([]float64, len(want))
				for i := range ones {
					ones[i] = 1 / (1 - float64(p))
				}
				for _, sc := range tplTestSchedules {
					out := make([]float32, g.Rows()*f)
					stats := make([]float32, g.Rows()*heads*2)
					tplWithGeneric(sc.generic, func() {
						require.NoError(t, GATAggregateDropout(out, stats, g, feat, el, er, heads, d, slope, drop, sc.s))
					})
					tplAssertClose(t, out, want, ones, 1e-5, "out/"+sc.name)
				}
			})
			t.Run(fmt.Sprintf("heads=%d/d=%d/p=%g/backward", heads, d, p), func(t *testing.T) {
				g := tplGraph(rng, 9, 7, 3, false, true)
				feat, el, er := tplRandVec(rng, 7*f), tplRandVec(rng, 7*heads), tplRandVec(rng, g.Rows()*heads)
				r := tplRandVec(rng, g.Rows()*f)
				drop := Dropout{Seed: rng.Uint64(), P: p}
				f64, l64, e64, r64 := tplTo64(feat), tplTo64(el), tplTo64(er), tplTo64(r)
				// The mask is a function of the seed only, so the loss is
				// a smooth function of the inputs that finite differences
				// can check.
				loss := func() float64 { return tplDotLoss(tplRefGATDrop(g, f64, l64, e64, heads, d, slope, drop), r64) }
				nf, nl, ne := tplNumGrad(f64, loss), tplNumGrad(l64, loss), tplNumGrad(e64, loss)
				for _, sc := range tplTestSchedules {
					out := make([]float32, g.Rows()*f)
					stats := make([]float32, g.Rows()*heads*2)
					gf, gl, gr := make([]float32, len(feat)), make([]float32, len(el)), make([]float32, len(er))
					tplWithGeneric(sc.generic, func() {
						require.NoError(t, GATAggregateDropout(out, stats, g, feat, el, er, heads, d, slope, drop, sc.s))
						require.NoError(t, GATAggregateDropoutBackward(gf, gl, gr, g, g.Transpose(7), feat, el, er, out, stats, r, heads, d, slope, drop, sc.s))
					})
					tplAssertClose(t, gf, nf, make([]float64, len(feat)), 1e-4, "gfeat/"+sc.name)
					tplAssertClose(t, gl, nl, make([]float64, len(el)), 1e-4, "gel/"+sc.name)
					tplAssertClose(t, gr, ne, make([]float64, len(er)), 1e-4, "ger/"+sc.name)
				}
			})
		}
	}
	t.Run("transpose without edge ids", func(t *testing.T) {
		g := tplGraph(rng, 9, 7, 3, false, true)
		gT := g.Transpose(7)
		gT.EdgeIDs = nil
		feat, el, er := tplRandVec(rng, 7*2), tplRandVec(rng, 7), tplRandVec(rng, g.Rows())
		out, stats, r := make([]float32, g.Rows()*2), make([]float32, g.Rows()*2), tplRandVec(rng, g.Rows()*2)
		drop := Dropout{Seed: 1, P: 0.5}
		require.NoError(t, GATAggregateDropout(out, stats, g, feat, el, er, 1, 2, 0.2, drop, nil))
		err := GATAggregateDropoutBackward(make([]float32, len(feat)), nil, nil, g, gT, feat, el, er, out, stats, r, 1, 2, 0.2, drop, nil)
		require.ErrorIs(t, err, ErrCSR)
	})
}
