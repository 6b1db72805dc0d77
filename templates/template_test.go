package templates

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tplTestSchedules are the schedules every op is checked under: the default,
// one worker, a tiled and partitioned one that splits the hub row across
// three workers, and one that never splits; "generic" also switches the
// assembly off.
var tplTestSchedules = []struct {
	name    string
	s       *Schedule
	generic bool
}{
	{"default", nil, false},
	{"serial", &Schedule{Workers: 1}, false},
	{"tiled", &Schedule{FeatTile: 8, Partitions: 3, Workers: 3, Grain: 4}, false},
	{"nosplit", &Schedule{FeatTile: 16, Workers: 2, Grain: 3, NoSplit: true}, false},
	{"generic", &Schedule{FeatTile: 24, Partitions: 2, Workers: 3, Grain: 5}, true},
}

// tplWidths are the awkward feature widths every op is checked at; -short
// (the race-detector run) keeps a few.
func tplWidths() []int {
	if testing.Short() {
		return []int{1, 3, 17, 64}
	}
	return []int{1, 3, 15, 16, 17, 64, 257}
}

// tplSchedules are tplTestSchedules, fewer under -short.
func tplSchedules() []int {
	if testing.Short() {
		return []int{0, 2, 4}
	}
	return []int{0, 1, 2, 3, 4}
}

func tplWithGeneric(generic bool, fn func()) {
	old := useSpmmAVX2
	if generic {
		useSpmmAVX2 = false
	}
	defer func() { useSpmmAVX2 = old }()
	fn()
}

// tplAssertClose checks got against the float64 reference want, allowing a
// float32 rounding error relative to mag (Σ|terms|).
func tplAssertClose(t *testing.T, got []float32, want, mag []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	bad := 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*(mag[i]+1)) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (diff %.3g)", what, i, got[i], want[i], d)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off", what, bad, len(want))
	}
}

// tplEdgeWidths are the edge feature widths a message is tested with: full,
// one scalar per edge, and (when f allows) one per head.
func tplEdgeWidths(msg Msg, f int) []int {
	if !msg.usesE() {
		return []int{f}
	}
	ws := []int{f}
	if f > 1 {
		ws = append(ws, 1)
	}
	for _, h := range []int{2, 4} {
		if f%h == 0 && f/h > 1 {
			ws = append(ws, h)
		}
	}
	return ws
}

func TestSpMMMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range tplWidths() {
		g := tplGraph(rng, 90, 70, 5, true, f%2 == 1)
		if f == 16 || f == 3 {
			g.EdgeIDs = nil // edge id = position
		}
		nsrc := 70
		x := tplRandVec(rng, nsrc*f)
		y := tplRandVec(rng, g.Rows()*f)
		for msg := CopyU; msg <= UMulV; msg++ {
			for _, fe := range tplEdgeWidths(msg, f) {
				e := tplRandVec(rng, g.NNZ()*fe)
				for red := Sum; red <= Min; red++ {
					want, mag := tplRefSpMM(g, msg, red, tplTo64(x), tplTo64(e), tplTo64(y), f, fe)
					for _, si := range tplSchedules() {
						sc := tplTestSchedules[si]
						name := fmt.Sprintf("f=%d/%v/fe=%d/%v/%s", f, msg, fe, red, sc.name)
						t.Run(name, func(t *testing.T) {
							out := make([]float32, g.Rows()*f)
							for i := range out {
								out[i] = float32(math.NaN()) // every element must be written
							}
							var arg []int32
							if red == Max || red == Min {
								arg = make([]int32, len(out))
							}
							tplWithGeneric(sc.generic, func() {
								require.NoError(t, SpMM(out, g, msg, red, x, e, y, f, arg, sc.s))
							})
							tplAssertClose(t, out, want, mag, 4e-6, "out")
							if arg != nil {
								tplCheckArg(t, g, msg, x, e, y, f, fe, arg, want)
							}
						})
					}
				}
			}
		}
	}
}

// tplCheckArg checks that each recorded edge belongs to the row and carries
// the winning message (−1 exactly for empty rows).
func tplCheckArg(t *testing.T, g CSR, msg Msg, x, e, y []float32, f, fe int, arg []int32, want []float64) {
	t.Helper()
	x64, e64, y64 := tplTo64(x), tplTo64(e), tplTo64(y)
	for v := 0; v < g.Rows(); v++ {
		p0, p1 := int(g.Indptr[v]), int(g.Indptr[v+1])
		for k := 0; k < f; k++ {
			a := arg[v*f+k]
			if p0 == p1 {
				assert.Equal(t, int32(-1), a, "arg of empty row %d", v)
				continue
			}
			p := -1
			for q := p0; q < p1; q++ {
				if g.eid(q) == int(a) {
					p = q - p0
				}
			}
			if !assert.GreaterOrEqual(t, p, 0, "arg[%d,%d] = %d is not an edge of the row", v, k, a) {
				return
			}
			m := tplRefMessage(msg, x64, e64, y64, f, fe, int(g.Indices[p0+p]), int(a), v, k)
			assert.InDelta(t, want[v*f+k], m, 1e-6, "message of arg[%d,%d]", v, k)
		}
	}
}

func TestSDDMMMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, f := range tplWidths() {
		g := tplGraph(rng, 80, 60, 5, true, f%2 == 0)
		if f == 16 || f == 15 {
			g.EdgeIDs = nil
		}
		x := tplRandVec(rng, 60*f)
		y := tplRandVec(rng, g.Rows()*f)
		for op := UDotV; op < numSDDMM; op++ {
			heads := []int{1}
			if op == UDotV {
				for _, h := range []int{2, 4, f} {
					if h > 1 && f%h == 0 {
						heads = append(heads, h)
					}
				}
			}
			for _, h := range heads {
				want, mag := tplRefSDDMM(g, op, tplTo64(x), tplTo64(y), f, h)
				for _, si := range tplSchedules() {
					sc := tplTestSchedules[si]
					t.Run(fmt.Sprintf("f=%d/%v/heads=%d/%s", f, op, h, sc.name), func(t *testing.T) {
						out := make([]float32, len(want))
						for i := range out {
							out[i] = float32(math.NaN())
						}
						tplWithGeneric(sc.generic, func() {
							require.NoError(t, SDDMM(out, g, op, x, y, f, h, sc.s))
						})
						tplAssertClose(t, out, want, mag, 4e-6, "out")
					})
				}
			}
		}
	}
}

func TestSpMMBackwardFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, f := range []int{1, 3, 8, 17} {
		g := tplGraph(rng, 9, 7, 3, false, true)
		gT := g.Transpose(7)
		x := tplRandVec(rng, 7*f)
		y := tplRandVec(rng, g.Rows()*f)
		r := tplRandVec(rng, g.Rows()*f)
		for msg := CopyU; msg <= UMulV; msg++ {
			for _, fe := range tplEdgeWidths(msg, f) {
				e := tplRandVec(rng, g.NNZ()*fe)
				for red := Sum; red <= Min; red++ {
					for _, sc := range tplTestSchedules[:3] {
						t.Run(fmt.Sprintf("f=%d/%v/fe=%d/%v/%s", f, msg, fe, red, sc.name), func(t *testing.T) {
							tplCheckSpMMGrad(t, g, gT, msg, red, x, e, y, r, f, fe, sc.s)
						})
					}
				}
			}
		}
	}
}

func tplCheckSpMMGrad(t *testing.T, g, gT CSR, msg Msg, red Reduce, x, e, y, r []float32, f, fe int, s *Schedule) {
	t.Helper()
	out := make([]float32, g.Rows()*f)
	arg := make([]int32, len(out))
	require.NoError(t, SpMM(out, g, msg, red, x, e, y, f, arg, s))
	gx := make([]float32, len(x))
	ge := make([]float32, len(e))
	gy := make([]float32, len(y))
	for i := range gx {
		gx[i] = 99 // overwritten, never accumulated into
	}
	require.NoError(t, SpMMBackward(gx, ge, gy, g, gT, msg, red, x, e, y, r, f, arg, s))
	x64, e64, y64, r64 := tplTo64(x), tplTo64(e), tplTo64(y), tplTo64(r)
	loss := func() float64 {
		o, _ := tplRefSpMM(g, msg, red, x64, e64, y64, f, fe)
		return tplDotLoss(o, r64)
	}
	ones := func(n int) []float64 {
		m := make([]float64, n)
		for i := range m {
			m[i] = 1
		}
		return m
	}
	if msg.usesX() {
		tplAssertClose(t, gx, tplNumGrad(x64, loss), ones(len(x)), 1e-4, "gx")
	}
	if msg.usesE() {
		tplAssertClose(t, ge, tplNumGrad(e64, loss), ones(len(e)), 1e-4, "ge")
	}
	if msg.usesY() {
		tplAssertClose(t, gy, tplNumGrad(y64, loss), ones(len(y)), 1e-4, "gy")
	}
}

// TestSpMMBackwardSplitRows checks the backward passes where the planner
// splits the hub row (a graph too large for element-wise differences):
// the gradient's inner product with random directions against a central
// difference along them.
func TestSpMMBackwardSplitRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const f, nsrc = 19, 150
	g := tplGraph(rng, 200, nsrc, 4, true, true)
	s := &Schedule{FeatTile: 8, Partitions: 2, Workers: 3, Grain: 6}
	x := tplRandVec(rng, nsrc*f)
	y := tplRandVec(rng, g.Rows()*f)
	r := tplRandVec(rng, g.Rows()*f)
	for _, msg := range []Msg{CopyU, UMulE, UMulV, USubV} {
		fe := 1
		e := tplRandVec(rng, g.NNZ()*fe)
		for red := Sum; red <= Min; red++ {
			t.Run(fmt.Sprintf("%v/%v", msg, red), func(t *testing.T) {
				out := make([]float32, g.Rows()*f)
				arg := make([]int32, len(out))
				require.NoError(t, SpMM(out, g, msg, red, x, e, y, f, arg, s))
				gx, ge, gy := make([]float32, len(x)), make([]float32, len(e)), make([]float32, len(y))
				require.NoError(t, SpMMBackward(gx, ge, gy, g, CSR{}, msg, red, x, e, y, r, f, arg, s))
				x64, e64, y64, r64 := tplTo64(x), tplTo64(e), tplTo64(y), tplTo64(r)
				for _, c := range []struct {
					name string
					in   []float64
					grad []float32
					used bool
				}{{"x", x64, gx, msg.usesX()}, {"e", e64, ge, msg.usesE()}, {"y", y64, gy, msg.usesY()}} {
					if !c.used {
						continue
					}
					dir := tplTo64(tplRandVec(rng, len(c.in)))
					var an, scale float64
					for i := range dir {
						an += float64(c.grad[i]) * dir[i]
						scale += math.Abs(float64(c.grad[i]) * dir[i])
					}
					base := slices.Clone(c.in)
					h := 1e-6
					eval := func(sign float64) float64 {
						for i := range c.in {
							c.in[i] = base[i] + sign*h*dir[i]
						}
						o, _ := tplRefSpMM(g, msg, red, x64, e64, y64, f, fe)
						return tplDotLoss(o, r64)
					}
					num := (eval(1) - eval(-1)) / (2 * h)
					copy(c.in, base)
					assert.InDelta(t, num, an, 1e-4*(scale+1), "directional derivative along %s", c.name)
				}
			})
		}
	}
}

func TestSDDMMBackwardFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, f := range []int{1, 4, 17} {
		g := tplGraph(rng, 9, 7, 3, false, true)
		x := tplRandVec(rng, 7*f)
		y := tplRandVec(rng, g.Rows()*f)
		for op := UDotV; op < numSDDMM; op++ {
			heads := []int{1}
			if op == UDotV && f%2 == 0 {
				heads = append(heads, 2)
			}
			for _, h := range heads {
				t.Run(fmt.Sprintf("f=%d/%v/heads=%d", f, op, h), func(t *testing.T) {
					width := f
					if op == UDotV {
						width = h
					}
					r := tplRandVec(rng, g.NNZ()*width)
					gx, gy := make([]float32, len(x)), make([]float32, len(y))
					require.NoError(t, SDDMMBackward(gx, gy, g, CSR{}, op, x, y, r, f, h, nil))
					x64, y64, r64 := tplTo64(x), tplTo64(y), tplTo64(r)
					loss := func() float64 {
						o, _ := tplRefSDDMM(g, op, x64, y64, f, h)
						return tplDotLoss(o, r64)
					}
					tplAssertClose(t, gx, tplNumGrad(x64, loss), make([]float64, len(x)), 1e-4, "gx")
					tplAssertClose(t, gy, tplNumGrad(y64, loss), make([]float64, len(y)), 1e-4, "gy")
				})
			}
		}
	}
}

func TestEdgeSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, heads := range []int{1, 3} {
		g := tplGraph(rng, 40, 30, 4, true, false)
		logits := tplRandVec(rng, g.NNZ()*heads)
		for i := range logits {
			logits[i] *= 4
		}
		want := tplRefEdgeSoftmax(g, tplTo64(logits), heads)
		for _, sc := range tplTestSchedules {
			t.Run(fmt.Sprintf("heads=%d/%s", heads, sc.name), func(t *testing.T) {
				out := make([]float32, len(logits))
				require.NoError(t, EdgeSoftmax(out, g, logits, heads, sc.s))
				tplAssertClose(t, out, want, make([]float64, len(want)), 1e-6, "softmax")
			})
		}
		t.Run(fmt.Sprintf("heads=%d/backward", heads), func(t *testing.T) {
			small := tplGraph(rng, 8, 8, 3, false, false)
			l := tplRandVec(rng, small.NNZ()*heads)
			r := tplRandVec(rng, len(l))
			out := make([]float32, len(l))
			require.NoError(t, EdgeSoftmax(out, small, l, heads, nil))
			gl := make([]float32, len(l))
			require.NoError(t, EdgeSoftmaxBackward(gl, small, out, r, heads, nil))
			l64, r64 := tplTo64(l), tplTo64(r)
			num := tplNumGrad(l64, func() float64 { return tplDotLoss(tplRefEdgeSoftmax(small, l64, heads), r64) })
			tplAssertClose(t, gl, num, make([]float64, len(num)), 1e-4, "glogits")
		})
	}
}

func TestGATAggregate(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const slope = 0.2
	for _, hd := range [][2]int{{1, 1}, {1, 16}, {2, 3}, {4, 17}} {
		heads, d := hd[0], hd[1]
		f := heads * d
		t.Run(fmt.Sprintf("heads=%d/d=%d", heads, d), func(t *testing.T) {
			g := tplGraph(rng, 50, 40, 4, true, true)
			feat, el, er := tplRandVec(rng, 40*f), tplRandVec(rng, 40*heads), tplRandVec(rng, g.Rows()*heads)
			want := tplRefGAT(g, tplTo64(feat), tplTo64(el), tplTo64(er), heads, d, slope)
			for _, sc := range tplTestSchedules {
				out := make([]float32, g.Rows()*f)
				stats := make([]float32, g.Rows()*heads*2)
				tplWithGeneric(sc.generic, func() {
					require.NoError(t, GATAggregate(out, stats, g, feat, el, er, heads, d, slope, sc.s))
				})
				ones := make([]float64, len(want))
				for i := range ones {
					ones[i] = 1
				}
				tplAssertClose(t, out, want, ones, 1e-5, "out/"+sc.name)
			}
		})
		t.Run(fmt.Sprintf("heads=%d/d=%d/backward", heads, d), func(t *testing.T) {
			g := tplGraph(rng, 9, 7, 3, false, true)
			feat, el, er := tplRandVec(rng, 7*f), tplRandVec(rng, 7*heads), tplRandVec(rng, g.Rows()*heads)
			r := tplRandVec(rng, g.Rows()*f)
			out := make([]float32, g.Rows()*f)
			stats := make([]float32, g.Rows()*heads*2)
			require.NoError(t, GATAggregate(out, stats, g, feat, el, er, heads, d, slope, nil))
			gf, gl, gr := make([]float32, len(feat)), make([]float32, len(el)), make([]float32, len(er))
			require.NoError(t, GATAggregateBackward(gf, gl, gr, g, CSR{}, feat, el, er, out, stats, r, heads, d, slope, nil))
			f64, l64, e64, r64 := tplTo64(feat), tplTo64(el), tplTo64(er), tplTo64(r)
			loss := func() float64 { return tplDotLoss(tplRefGAT(g, f64, l64, e64, heads, d, slope), r64) }
			tplAssertClose(t, gf, tplNumGrad(f64, loss), make([]float64, len(feat)), 1e-4, "gfeat")
			tplAssertClose(t, gl, tplNumGrad(l64, loss), make([]float64, len(el)), 1e-4, "gel")
			tplAssertClose(t, gr, tplNumGrad(e64, loss), make([]float64, len(er)), 1e-4, "ger")
		})
	}
}

func TestUDFMatchesBuiltins(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const f, nsrc = 13, 50
	g := tplGraph(rng, 60, nsrc, 5, true, true)
	x, y := tplRandVec(rng, nsrc*f), tplRandVec(rng, g.Rows()*f)
	for red := Sum; red <= Min; red++ {
		t.Run(red.String(), func(t *testing.T) {
			want := make([]float32, g.Rows()*f)
			wantArg := make([]int32, len(want))
			require.NoError(t, SpMM(want, g, UMulV, red, x, nil, y, f, wantArg, &Schedule{Workers: 1}))
			got := make([]float32, len(want))
			gotArg := make([]int32, len(want))
			msg := func(m []float32, u, v, e int) {
				for k := range m {
					m[k] = x[u*f+k] * y[v*f+k]
				}
			}
			require.NoError(t, SpMMFunc(got, g, msg, red, f, gotArg, &Schedule{Workers: 3, Grain: 4}))
			assert.InDeltaSlice(t, want, got, 1e-4)
			if red == Max || red == Min {
				assert.Equal(t, wantArg, gotArg)
			}
		})
	}
	t.Run("sddmm", func(t *testing.T) {
		want := make([]float32, g.NNZ())
		require.NoError(t, SDDMM(want, g, UDotV, x, y, f, 1, nil))
		got := make([]float32, g.NNZ())
		require.NoError(t, SDDMMFunc(got, g, func(o []float32, u, v, e int) {
			o[0] = dotGeneric(x[u*f:(u+1)*f], y[v*f:(v+1)*f])
		}, 1, &Schedule{Workers: 3, Grain: 4}))
		assert.InDeltaSlice(t, want, got, 1e-4)
	})
}

func TestTransposeAndValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	g := tplGraph(rng, 30, 20, 4, true, false)
	require.NoError(t, g.Validate(20))
	gT := g.Transpose(20)
	require.NoError(t, gT.Validate(30))
	type edge struct{ u, v, e int }
	set := func(c CSR, rev bool) []edge {
		var es []edge
		for v := 0; v < c.Rows(); v++ {
			for p := int(c.Indptr[v]); p < int(c.Indptr[v+1]); p++ {
				ed := edge{int(c.Indices[p]), v, c.eid(p)}
				if rev {
					ed.u, ed.v = ed.v, ed.u
				}
				es = append(es, ed)
			}
		}
		slices.SortFunc(es, func(a, b edge) int { return a.e - b.e })
		return es
	}
	assert.Equal(t, set(g, false), set(gT, true))

	bad := []struct {
		name string
		g    CSR
	}{
		{"no indptr", CSR{}},
		{"indptr start", CSR{Indptr: []int32{1, 1}, Indices: []int32{0}}},
		{"indptr end", CSR{Indptr: []int32{0, 2}, Indices: []int32{0}}},
		{"decreasing", CSR{Indptr: []int32{0, 2, 1, 2}, Indices: []int32{0, 0}}},
		{"index range", CSR{Indptr: []int32{0, 1}, Indices: []int32{20}}},
		{"repeated id", CSR{Indptr: []int32{0, 2}, Indices: []int32{0, 1}, EdgeIDs: []int32{1, 1}}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) { assert.ErrorIs(t, c.g.Validate(20), ErrCSR) })
	}
}

func TestOperandErrors(t *testing.T) {
	g := CSR{Indptr: []int32{0, 1, 2}, Indices: []int32{0, 1}}
	x := make([]float32, 2*4)
	out := make([]float32, 2*4)
	cases := []struct {
		name string
		err  error
	}{
		{"short out", SpMM(out[:7], g, CopyU, Sum, x, nil, nil, 4, nil, nil)},
		{"ragged x", SpMM(out, g, CopyU, Sum, x[:7], nil, nil, 4, nil, nil)},
		{"missing e", SpMM(out, g, UMulE, Sum, x, nil, nil, 4, nil, nil)},
		{"e width 3", SpMM(out, g, UMulE, Sum, x, make([]float32, 6), nil, 4, nil, nil)},
		{"missing y", SpMM(out, g, UAddV, Sum, x, nil, nil, 4, nil, nil)},
		{"short arg", SpMM(out, g, CopyU, Max, x, nil, nil, 4, make([]int32, 3), nil)},
		{"bad msg", SpMM(out, g, Msg(9), Sum, x, nil, nil, 4, nil, nil)},
		{"bad f", SpMM(out, g, CopyU, Sum, x, nil, nil, 0, nil, nil)},
		{"sddmm heads", SDDMM(make([]float32, 2*3), g, UDotV, x, x, 4, 3, nil)},
		{"sddmm add heads", SDDMM(make([]float32, 2*4), g, UAddVOp, x, x, 4, 2, nil)},
		{"sddmm out", SDDMM(make([]float32, 3), g, UDotV, x, x, 4, 1, nil)},
		{"backward arg", SpMMBackward(make([]float32, 8), nil, nil, g, CSR{}, CopyU, Max, x, nil, nil, out, 4, nil, nil)},
		{"softmax", EdgeSoftmax(make([]float32, 3), g, make([]float32, 2), 1, nil)},
		{"gat el", GATAggregate(out, make([]float32, 4), g, x, make([]float32, 3), make([]float32, 2), 1, 4, 0.2, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.ErrorIs(t, c.err, ErrOperand) })
	}
	assert.ErrorIs(t, SpMM(out, CSR{Indptr: []int32{0, 1, 3}, Indices: []int32{0, 1}}, CopyU, Sum, x, nil, nil, 4, nil, nil), ErrCSR)
}

// TestGatherKernels compares the assembly inner loops with the generic ones
// on widths around every vector width and unaligned starts.
func TestGatherKernels(t *testing.T) {
	if !useSpmmAVX2 {
		t.Skip("no AVX2+FMA on this CPU (or purego build): only the generic loops run")
	}
	rng := rand.New(rand.NewPCG(19, 20))
	const ldx = 600
	x := tplRandVec(rng, 40*ldx)
	old512 := useSpmmAVX512
	defer func() { useSpmmAVX512 = old512 }()
	for _, use512 := range []bool{false, old512} {
		useSpmmAVX512 = use512
		tplCheckGatherKernels(t, rng, x, ldx)
	}
	assert.Panics(t, func() { gatherSum(make([]float32, 8), x, []int32{40}, ldx) }, "row past x")
}

func tplCheckGatherKernels(t *testing.T, rng *rand.Rand, x []float32, ldx int) {
	for _, w := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 264, 300, 520} {
		for _, off := range []int{0, 1, 3} {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 9} {
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = int32(rng.IntN(40))
				}
				wt := tplRandVec(rng, n)
				base := tplRandVec(rng, w)
				name := fmt.Sprintf("w=%d/off=%d/n=%d/avx512=%v", w, off, n, useSpmmAVX512)
				got, want := slices.Clone(base), slices.Clone(base)
				gatherSum(got, x[off:], idx, ldx)
				gatherSumGeneric(want, x[off:], idx, ldx)
				assert.InDeltaSlice(t, want, got, 1e-5, "sum "+name)
				for _, isMin := range []bool{false, true} {
					got, want = slices.Clone(base), slices.Clone(base)
					garg, warg := make([]int32, w), make([]int32, w)
					ids := make([]int32, n)
					for i := range ids {
						ids[i] = int32(rng.IntN(1000))
					}
					for _, eids := range [][]int32{nil, ids} {
						gatherArgMax(got, garg, x[off:], idx, eids, 7, ldx, isMin)
						gatherArgMaxGeneric(want, warg, x[off:], idx, eids, 7, ldx, isMin)
						assert.Equal(t, want, got, "max/min "+name)
						assert.Equal(t, warg, garg, "arg "+name)
					}
				}
				got, want = slices.Clone(base), slices.Clone(base)
				gatherAxpy(got, x[off:], idx, wt, ldx)
				gatherAxpyGeneric(want, x[off:], idx, wt, ldx)
				assert.InDeltaSlice(t, want, got, 1e-5, "axpy "+name)
				if w > 0 {
					assert.InDelta(t, dotGeneric(base, x[off:off+w]), sdot(base, x[off:off+w]), 1e-4, "dot "+name)
					got, want = make([]float32, n), make([]float32, n)
					dotRows(got, x[off:], idx, ldx, base)
					dotRowsGeneric(want, x[off:], idx, ldx, base)
					assert.InDeltaSlice(t, want, got, 1e-4, "dotRows "+name)
				}
			}
		}
	}
}

func TestTuneSchedule(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const f, nsrc = 40, 3000
	g := tplGraph(rng, 3000, nsrc, 4, true, true)
	s := TuneSchedule(g, nsrc, f)
	assert.Contains(t, tuneCandidates(nsrc, f), s)
	c, ok := CachedSchedule(Shape{g.Rows(), nsrc, g.NNZ(), f})
	require.True(t, ok)
	assert.Equal(t, s, c)
	// A nil schedule now uses the tuned one; the result must not change.
	x := tplRandVec(rng, nsrc*f)
	want, mag := tplRefSpMM(g, CopyU, Mean, tplTo64(x), nil, nil, f, f)
	out := make([]float32, g.Rows()*f)
	require.NoError(t, SpMM(out, g, CopyU, Mean, x, nil, nil, f, nil, nil))
	tplAssertClose(t, out, want, mag, 4e-6, "out")
}

func TestSampleCSR(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	g := tplGraph(rng, 120, 120, 8, true, true)
	for _, cacheFirst := range []bool{true, false} {
		for _, limit := range []int{0, 1, 4, 1000} {
			t.Run(fmt.Sprintf("limit=%d/cacheFirst=%v", limit, cacheFirst), func(t *testing.T) {
				s, orig, scale := SampleCSR(g, limit, 10, cacheFirst)
				require.Len(t, orig, s.NNZ())
				require.NoError(t, s.Validate(120))
				for v := 0; v < g.Rows(); v++ {
					deg, kept := g.Indptr[v+1]-g.Indptr[v], s.Indptr[v+1]-s.Indptr[v]
					if limit <= 0 || int(deg) <= limit {
						assert.Equal(t, deg, kept, "row %d kept whole", v)
					} else {
						assert.Equal(t, int32(limit), kept, "row %d capped", v)
					}
					if kept > 0 {
						assert.InDelta(t, float64(deg)/float64(kept), scale[v], 1e-6)
					}
					// Every kept edge is an edge of the row, with its id.
					have := map[[2]int]int{}
					for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
						have[[2]int{int(g.Indices[p]), g.eid(int(p))}]++
					}
					near := 0
					for q := s.Indptr[v]; q < s.Indptr[v+1]; q++ {
						k := [2]int{int(s.Indices[q]), int(orig[q])}
						assert.Positive(t, have[k], "row %d: sampled edge %v not in the graph", v, k)
						have[k]--
						if d := int(s.Indices[q]) - v; d >= -5 && d <= 5 {
							near++
						}
					}
					if cacheFirst && limit > 0 {
						// Cache-first keeps every in-window edge the budget allows.
						all := 0
						for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
							if d := int(g.Indices[p]) - v; d >= -5 && d <= 5 {
								all++
							}
						}
						assert.Equal(t, min(all, int(kept)), near, "row %d near edges", v)
					}
				}
			})
		}
	}
}

func TestExpf(t *testing.T) {
	for x := -100.0; x <= 90; x += 0.0137 {
		want := math.Exp(float64(float32(x)))
		got := float64(expf(float32(x)))
		if want > math.MaxFloat32 {
			assert.True(t, math.IsInf(got, 1), "expf(%v) = %v, want +Inf", x, got)
			continue
		}
		tol := 3e-7*want + 1e-44
		if !assert.InDelta(t, want, got, tol, "expf(%v)", x) {
			return
		}
	}
	assert.Equal(t, float32(0), expf(float32(math.Inf(-1))))
	assert.True(t, math.IsNaN(float64(expf(float32(math.NaN())))))
}

func TestExpInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 100} {
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = -float32(rng.Float64() * 90)
		}
		if n > 3 {
			xs[0], xs[1], xs[2] = 0, float32(math.Inf(-1)), -86.9
		}
		want := tplTo64(xs)
		for i := range want {
			want[i] = math.Exp(want[i])
		}
		if n%2 == 1 {
			xs = append(xs, make([]float32, 8)...)[:n] // room to round up
		}
		expInPlace(xs)
		for i, w := range want {
			assert.InDelta(t, w, xs[i], 3e-7*w+2e-38, "n=%d exp[%d]", n, i)
		}
	}
}

// TestUDFBackward runs the backward of a Go message function, x[u]·y[v],
// through SpMMMsgGrad, SDDMMFunc and an SpMM on the transpose, and checks
// it against SpMMBackward of the builtin u_mul_v.
func TestUDFBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	const f, nsrc = 11, 40
	g := tplGraph(rng, 50, nsrc, 4, true, true)
	gT := g.Transpose(nsrc)
	x, y, r := tplRandVec(rng, nsrc*f), tplRandVec(rng, g.Rows()*f), tplRandVec(rng, g.Rows()*f)
	s := &Schedule{Workers: 3, Grain: 4}
	for red := Sum; red <= Min; red++ {
		t.Run(red.String(), func(t *testing.T) {
			out := make([]float32, g.Rows()*f)
			arg := make([]int32, len(out))
			msg := func(m []float32, u, v, e int) {
				for k := range m {
					m[k] = x[u*f+k] * y[v*f+k]
				}
			}
			require.NoError(t, SpMMFunc(out, g, msg, red, f, arg, s))
			gmsg := make([]float32, g.NNZ()*f)
			require.NoError(t, SpMMMsgGrad(gmsg, g, red, r, f, arg, s))
			// ∂msg/∂x[u] = y[v]: per-edge products, then summed per source.
			dx := make([]float32, len(gmsg))
			require.NoError(t, SDDMMFunc(dx, g, func(o []float32, u, v, e int) {
				for k := range o {
					o[k] = gmsg[e*f+k] * y[v*f+k]
				}
			}, f, s))
			gx := make([]float32, len(x))
			require.NoError(t, SpMM(gx, gT, CopyE, Sum, nil, dx, nil, f, nil, s))

			want := make([]float32, len(x))
			wy := make([]float32, len(y))
			require.NoError(t, SpMMBackward(want, nil, wy, g, gT, UMulV, red, x, nil, y, r, f, arg, s))
			assert.InDeltaSlice(t, want, gx, 1e-4)
		})
	}
	assert.ErrorIs(t, SpMMMsgGrad(make([]float32, g.NNZ()*f), g, Max, r, f, nil, nil), ErrOperand)
}
