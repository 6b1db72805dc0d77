package tcu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/templates"
)

// gatGraph is a random pull CSR over n nodes: about deg in-edges a row,
// every fifth row empty, row 1 heavy (heavy edges, repeated sources
// allowed) and node 2 the source of about a third of all edges.
func gatGraph(r *rand.Rand, n, deg, heavy int) templates.CSR {
	g := templates.CSR{Indptr: []int32{0}}
	for v := range n {
		k := r.IntN(2*deg + 1)
		switch {
		case v%5 == 0:
			k = 0
		case v == 1:
			k = heavy
		}
		for range k {
			u := int32(r.IntN(n))
			if r.IntN(3) == 0 {
				u = 2
			}
			g.Indices = append(g.Indices, u)
		}
		g.Indptr = append(g.Indptr, int32(len(g.Indices)))
	}
	return g
}

func i32s(x []int32) dOperand { return dOperand{i: append([]int32{}, x...)} }

// gatCases are the checks of GAT's ops (fp_gat.cu) against internal/nn and
// templates: heads 1 (features wider than a warp) and 8, with and without
// attention dropout, on a graph with empty rows and a heavy row.
func gatCases() []denseCase {
	r := rand.New(rand.NewPCG(20, 3))
	var cases []denseCase
	for _, sh := range []struct{ n, heads, d, heavy int }{{1, 1, 1, 0}, {70, 1, 40, 300}, {90, 8, 4, 3000}} {
		n, heads, d := sh.n, sh.heads, sh.d
		f := heads * d
		g := gatGraph(r, n, 6, sh.heavy)
		gT := g.Transpose(n)
		x, el, er, gout := randFloats(r, n*f), randFloats(r, n*heads), randFloats(r, n*heads), randFloats(r, n*f)
		const slope = 0.2
		for _, p := range []float32{0, 0.3} {
			drop := templates.Dropout{Seed: r.Uint64(), P: p}
			out, stats := make([]float32, n*f), make([]float32, 2*n*heads)
			if err := templates.GATAggregateDropout(out, stats, g, x, el, er, heads, d, slope, drop, nil); err != nil {
				panic(err)
			}
			gx, gel, ger := make([]float32, n*f), make([]float32, n*heads), make([]float32, n*heads)
			if err := templates.GATAggregateDropoutBackward(gx, gel, ger, g, gT, x, el, er, out, stats, gout, heads, d, slope, drop, nil); err != nil {
				panic(err)
			}
			so, sx, sel, ser := gatScales(g, x, el, er, stats, gout, heads, d, slope, drop)
			args := func(bs []*Buffer) GATArgs {
				return GATArgs{X: bs[5], El: bs[6], Er: bs[7], Out: bs[8], Stats: bs[9], Heads: heads, D: d, Slope: slope, Drop: p}
			}
			graphs := func(bs []*Buffer) (*FPGraph, *FPGraph) {
				nnz := len(g.Indices)
				return &FPGraph{rows: n, nsrc: n, nnz: nnz, indptr: bs[0], indices: bs[1]},
					&FPGraph{rows: n, nsrc: n, nnz: nnz, indptr: bs[2], indices: bs[3], eids: bs[4]}
			}
			ops := []dOperand{i32s(g.Indptr), i32s(g.Indices), i32s(gT.Indptr), i32s(gT.Indices), i32s(gT.EdgeIDs),
				f32s(x), f32s(el), f32s(er), nanFloats(n * f), nanFloats(2 * n * heads)}
			tag := fmt.Sprintf("n%d_h%d_d%d_p%g", n, heads, d, p)
			cases = append(cases, denseCase{
				name: "gat_fwd_" + tag,
				ops:  ops,
				plan: func(pl *planner, bs []*Buffer) error {
					gg, _ := graphs(bs)
					if err := pl.gatForward(gg, args(bs)); err != nil {
						return err
					}
					pl.launches[len(pl.launches)-1].args[12] = drop.Seed
					return nil
				},
				check: func(t *testing.T, got []dOperand) {
					closeTo(t, "out", got[8].f, out, so)
					// The maxima are exact; the normalizers sums of exps.
					var m, gm, inv, ginv, sinv []float32
					for k := 0; k < len(stats); k += 2 {
						m, gm = append(m, stats[k]), append(gm, got[9].f[k])
						inv, ginv = append(inv, stats[k+1]), append(ginv, got[9].f[k+1])
						sinv = append(sinv, stats[k+1]*drift(g, k/2/heads))
					}
					assert.Equal(t, m, gm, "stats: maxima")
					closeTo(t, "stats: 1/Σexp", ginv, inv, sinv)
				},
			})
			// The backward pass from the CPU's out and stats.
			bops := append(append([]dOperand(nil), ops[:8]...), f32s(out), f32s(stats), f32s(gout), nanFloats(n*f), nanFloats(n*heads), nanFloats(n*heads))
			cases = append(cases, denseCase{
				name: "gat_back_" + tag,
				ops:  bops,
				plan: func(pl *planner, bs []*Buffer) error {
					gg, ggT := graphs(bs)
					if err := pl.gatBackward(gg, ggT, args(bs), bs[10], bs[11], bs[12], bs[13]); err != nil {
						return err
					}
					for _, k := range pl.knobs[dropKnob] {
						pl.launches[k.l].args[k.p] = drop.Seed
					}
					return nil
				},
				check: func(t *testing.T, got []dOperand) {
					closeTo(t, "dx", got[11].f, gx, sx)
					closeTo(t, "del", got[12].f, gel, sel)
					closeTo(t, "der", got[13].f, ger, ser)
				},
			})
		}
		// HeadDot, ELU and MeanHeads against the tape.
		att, dh := randFloats(r, f), randFloats(r, n*heads)
		tp := nn.NewTape(true, nil)
		xt, at := nn.FromData(n, f, x).SetRequiresGrad(true), nn.FromData(1, f, att).SetRequiresGrad(true)
		hd := tp.HeadDot(xt, at, heads)
		backward(tp, hd, dh)
		attScale := make([]float32, f)
		for i := range n * f {
			attScale[i%f] += float32(math.Abs(float64(dh[i/f*heads+i%f/d] * x[i])))
		}
		tp = nn.NewTape(true, nil)
		xe := nn.FromData(n, f, x).SetRequiresGrad(true)
		ye := tp.ELU(xe, 1)
		backward(tp, ye, gout)
		tp = nn.NewTape(true, nil)
		xm := nn.FromData(n, f, x).SetRequiresGrad(true)
		ym := tp.MeanHeads(xm, heads)
		dm := randFloats(r, n*d)
		backward(tp, ym, dm)
		cases = append(cases, denseCase{
			name: fmt.Sprintf("headdot_elu_mean_n%d_h%d_d%d", n, heads, d),
			ops: []dOperand{f32s(x), f32s(att), f32s(dh), nanFloats(n * heads), nanFloats(n * f), nanFloats(f),
				f32s(gout), nanFloats(n * f), nanFloats(n * f), f32s(dm), nanFloats(n * d), nanFloats(n * f)},
			plan: func(p *planner, bs []*Buffer) error {
				for _, err := range []error{
					p.headDot(bs[3], bs[0], bs[1], n, heads, d),
					p.headDotBack(bs[4], bs[5], bs[2], bs[0], bs[1], n, heads, d, false),
					p.elu(bs[7], bs[0], n*f, 1),
					p.eluBack(bs[8], bs[6], bs[0], bs[7], n*f, 1, false),
					p.meanHeads(bs[10], bs[0], n, heads, d),
					p.meanHeadsBack(bs[11], bs[9], n, heads, d, false),
				} {
					if err != nil {
						return err
					}
				}
				return nil
			},
			check: func(t *testing.T, got []dOperand) {
				assert.Equal(t, hd.Data, got[3].f, "headdot")
				assert.Equal(t, xt.Grad, got[4].f, "headdot dx")
				closeTo(t, "headdot datt", got[5].f, at.Grad, attScale)
				assert.Equal(t, ye.Data, got[7].f, "elu")
				assert.Equal(t, xe.Grad, got[8].f, "elu dx")
				assert.Equal(t, ym.Data, got[10].f, "mean heads")
				assert.Equal(t, xm.Grad, got[11].f, "mean heads dx")
			},
		})
	}
	return cases
}

// drift widens the tolerance of a sum over row v's edges past a thousand
// terms: the CPU adds them in sequence, in float, and drifts about deg·2⁻²⁴.
func drift(g templates.CSR, v int) float32 {
	return max(1, float32(g.Indptr[v+1]-g.Indptr[v])/1000)
}

// gatScales are the magnitudes the fused GAT's results are sums of (each
// term's absolute value summed): the tolerance of a result that cancels.
func gatScales(g templates.CSR, x, el, er, stats, gout []float32, heads, d int, slope float32, drop templates.Dropout) (so, sx, sel, ser []float32) {
	n, f := g.Rows(), heads*d
	so, sx, sel, ser = make([]float32, n*f), make([]float32, n*f), make([]float32, n*heads), make([]float32, n*heads)
	abs := func(v float32) float32 { return float32(math.Abs(float64(v))) }
	for v := range n {
		w := drift(g, v)
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := int(g.Indices[p])
			for h := range heads {
				z := el[u*heads+h] + er[v*heads+h]
				if z <= 0 {
					z *= slope
				}
				s := stats[(v*heads+h)*2:]
				a := float32(math.Exp(float64(z-s[0]))) * s[1] * w
				k := float32(1)
				if drop.P > 0 {
					if !templates.DropKeep(drop.Seed, int(p)*heads+h, drop.P) {
						k = 0
					} else {
						k = 1 / (1 - drop.P)
					}
				}
				var ga, c float32
				for j := range d {
					ga += abs(gout[v*f+h*d+j] * x[u*f+h*d+j])
					so[v*f+h*d+j] += a * k * abs(x[u*f+h*d+j])
					sx[u*f+h*d+j] += a * k * abs(gout[v*f+h*d+j])
				}
				for j := range d {
					c += abs(gout[v*f+h*d+j]) * so[v*f+h*d+j]
				}
				t := a * (k*ga + c)
				sel[u*heads+h] += t
				ser[v*heads+h] += t
			}
		}
	}
	return so, sx, sel, ser
}

// BenchmarkFPGATLayer times one GAT layer on the device, forward and
// backward as training runs it (h = x·Wᵀ, both HeadDots, the fused
// aggregation, and their backward passes down to dx and dW), on a random
// graph of 2¹⁸ nodes with 16 in-edges each plus a self-loop, 64 features
// in, 8 heads of 8: bench/train/pyg_gat_layer.py is PyG's GATConv on the
// same shapes. It reports ms per pass and the device memory the layer
// held at most (the pool's high-water mark above what it held before).
func BenchmarkFPGATLayer(b *testing.B) {
	d := fpDevice(b)
	const n, deg, in, heads, hd = 1 << 18, 16, 64, 8, 8
	f := heads * hd
	r := rand.New(rand.NewPCG(1, 2))
	g := templates.CSR{Indptr: []int32{0}}
	for v := range n {
		g.Indices = append(g.Indices, int32(v))
		for range deg {
			g.Indices = append(g.Indices, int32(r.IntN(n)))
		}
		g.Indptr = append(g.Indptr, int32(len(g.Indices)))
	}
	require.NoError(b, d.TrimPool())
	before, _, err := d.PoolBytes()
	require.NoError(b, err)
	gg, err := d.UploadCSR(g, n)
	require.NoError(b, err)
	defer gg.Close()
	ggT, err := d.UploadCSR(g.Transpose(n), n)
	require.NoError(b, err)
	defer ggT.Close()
	buf := func(vals []float32) *Buffer {
		bb, err := d.Alloc(4 * len(vals))
		require.NoError(b, err)
		require.NoError(b, bb.Write(asBytes(vals)))
		b.Cleanup(func() { assert.NoError(b, bb.Free()) })
		return bb
	}
	x, w, as, ad := buf(randFloats(r, n*in)), buf(randFloats(r, f*in)), buf(randFloats(r, f)), buf(randFloats(r, f))
	h, el, er, out, stats := buf(make([]float32, n*f)), buf(make([]float32, n*heads)), buf(make([]float32, n*heads)), buf(make([]float32, n*f)), buf(make([]float32, 2*n*heads))
	dout, dh, del, der := buf(randFloats(r, n*f)), buf(make([]float32, n*f)), buf(make([]float32, n*heads)), buf(make([]float32, n*heads))
	dx, dw, das, dad := buf(make([]float32, n*in)), buf(make([]float32, f*in)), buf(make([]float32, f)), buf(make([]float32, f))
	a := GATArgs{X: h, El: el, Er: er, Out: out, Stats: stats, Heads: heads, D: hd, Slope: 0.2, Drop: 0.6}
	var calls []*FPCall
	add := func(c *FPCall, err error) {
		require.NoError(b, err)
		b.Cleanup(func() { c.Close() })
		calls = append(calls, c)
	}
	add(d.PrepareSgemm(h, x, w, Gemm{TransB: true, M: n, N: f, K: in, Alpha: 1}))
	add(d.PrepareHeadDot(el, h, as, n, heads, hd))
	add(d.PrepareHeadDot(er, h, ad, n, heads, hd))
	add(d.PrepareGATAggregate(gg, a))
	add(d.PrepareGATAggregateBackward(gg, ggT, a, dout, dh, del, der))
	add(d.PrepareHeadDotBackward(dh, das, del, h, as, n, heads, hd, true))
	add(d.PrepareHeadDotBackward(dh, dad, der, h, ad, n, heads, hd, true))
	add(d.PrepareSgemm(dw, dh, x, Gemm{TransA: true, M: f, N: in, K: n, Alpha: 1}))
	add(d.PrepareSgemm(dx, dh, w, Gemm{M: n, N: in, K: f, Alpha: 1}))
	require.NoError(b, d.RunCalls(calls...)) // warm-up
	require.NoError(b, d.Sync())
	_, peak, err := d.PoolBytes()
	require.NoError(b, err)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		require.NoError(b, d.RunCalls(calls...))
	}
	require.NoError(b, d.Sync())
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/pass")
	b.ReportMetric(float64(peak-before)/(1<<20), "peak-MiB")
}
