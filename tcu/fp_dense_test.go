package tcu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/templates"
)

// dOperand is one operand of a dense test case: float32, int32 or
// float64 values (one of them set), its initial contents.
type dOperand struct {
	f []float32
	i []int32
	d []float64
}

func (o dOperand) bytes() []byte {
	switch {
	case o.i != nil:
		return asBytes(o.i)
	case o.d != nil:
		return asBytes(o.d)
	}
	return asBytes(o.f)
}

// fromBytes is o's shape with the values of raw.
func (o dOperand) fromBytes(raw []byte) dOperand {
	var r dOperand
	switch {
	case o.i != nil:
		r.i = make([]int32, len(o.i))
		for k := range r.i {
			r.i[k] = int32(binary.LittleEndian.Uint32(raw[4*k:]))
		}
	case o.d != nil:
		r.d = make([]float64, len(o.d))
		for k := range r.d {
			r.d[k] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*k:]))
		}
	default:
		r.f = make([]float32, len(o.f))
		for k := range r.f {
			r.f[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
	}
	return r
}

// denseCase is a dense op on operands, planned by plan on their buffers,
// run on the emulator or the device, its operands afterwards checked
// against the CPU reference by check.
type denseCase struct {
	name  string
	ops   []dOperand
	plan  func(p *planner, b []*Buffer) error
	check func(t *testing.T, got []dOperand)
}

// emuSMs is the device size the emulated plans are made for: small, so
// that modest shapes split K and chunk their reductions.
const emuSMs = 4

// runDenseEmu plans c against fake buffers and runs the launches in the
// emulator: operand k lives at (k+1)<<40 (fp_dense_emu_main.inc), scratch
// after the operands, filled with NaN bytes so that a read of what no
// launch wrote shows.
func runDenseEmu(t *testing.T, prog string, c denseCase) []dOperand {
	var arrays [][]byte
	fake := func(data []byte) *Buffer {
		arrays = append(arrays, data)
		return &Buffer{ptr: uintptr(len(arrays)) << 40, size: len(data)}
	}
	bufs := make([]*Buffer, len(c.ops))
	for k, o := range c.ops {
		bufs[k] = fake(append([]byte(nil), o.bytes()...))
	}
	p := &planner{sms: emuSMs, alloc: func(n int) (*Buffer, error) {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xff
		}
		return fake(b), nil
	}}
	require.NoError(t, c.plan(p, bufs))
	var launches [][]byte
	for _, l := range p.launches {
		rec := []uint64{uint64(l.grid[0]), uint64(l.grid[1]), uint64(l.grid[2])}
		launches = append(launches, []byte(l.kernel), asBytes(append(rec, l.args...)))
	}
	raw := runEmu(t, prog, c.name, []int64{int64(len(arrays)), int64(len(p.launches))}, append(arrays, launches...)...)
	out := make([]dOperand, len(c.ops))
	off := 0
	for k, o := range c.ops {
		n := len(arrays[k])
		require.GreaterOrEqual(t, len(raw), off+n)
		out[k] = o.fromBytes(raw[off : off+n])
		off += n
	}
	return out
}

// runDenseGPU runs c on the device.
func runDenseGPU(t *testing.T, d *Device, c denseCase) []dOperand {
	bufs := make([]*Buffer, len(c.ops))
	require.NoError(t, d.run(func() error {
		for k, o := range c.ops {
			var err error
			if bufs[k], err = d.upload(o.bytes()); err != nil {
				return err
			}
		}
		return nil
	}))
	defer func() {
		for _, b := range bufs {
			assert.NoError(t, b.Free())
		}
	}()
	call, err := d.denseCall(c.name, func(p *planner) error { return c.plan(p, bufs) })
	require.NoError(t, err)
	defer call.Close()
	require.NoError(t, d.RunCalls(call))
	out := make([]dOperand, len(c.ops))
	for k, o := range c.ops {
		raw := make([]byte, len(o.bytes()))
		require.NoError(t, bufs[k].Read(raw))
		out[k] = o.fromBytes(raw)
	}
	return out
}

func f32s(x []float32) dOperand { return dOperand{f: append([]float32(nil), x...)} }

// nanFloats is an output operand of n NaNs: a value no launch wrote shows.
func nanFloats(n int) dOperand {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(math.NaN())
	}
	return dOperand{f: x}
}

// backward runs the backward closures of the single op that made y with
// y's gradient set to dy (nn.Tape.Backward on a loss no op made).
func backward(tp *nn.Tape, y *nn.Tensor, dy []float32) {
	y.Grad = append([]float32(nil), dy...)
	tp.Backward(nn.New(1, 1))
}

// denseCases are the dense ops' checks, each against internal/nn,
// internal/learn or templates on awkward sizes.
func denseCases() []denseCase {
	r := rand.New(rand.NewPCG(31, 1))
	var cases []denseCase
	// SGEMM: the three layouts of nn.MatMulT and its backward, on sizes
	// around the tiles, with K split (the emulator plans for 4 SMs) and not.
	for _, sh := range [][3]int{{1, 1, 1}, {63, 65, 17}, {130, 70, 600}, {64, 16, 1100}, {5, 3, 0}, {0, 4, 3}, {2, 300, 40}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, lay := range []struct {
			name   string
			ta, tb bool
		}{{"nn", false, false}, {"nt", false, true}, {"tn", true, false}} {
			for _, ab := range [][2]float32{{1, 0}, {1, 1}, {-0.5, 2}} {
				a, b, c0 := randFloats(r, m*k), randFloats(r, k*n), randFloats(r, m*n)
				g := Gemm{TransA: lay.ta, TransB: lay.tb, M: m, N: n, K: k, Alpha: ab[0], Beta: ab[1]}
				lda, ldb := k, n
				if lay.ta {
					lda = m
				}
				if lay.tb {
					ldb = k
				}
				lda, ldb = max(lda, 1), max(ldb, 1) // BLAS strides are at least 1

				want := append([]float32(nil), c0...)
				templates.Sgemm(lay.ta, lay.tb, m, n, k, ab[0], a, lda, b, ldb, ab[1], want, n)
				scale := absAll(c0)
				templates.Sgemm(lay.ta, lay.tb, m, n, k, float32(math.Abs(float64(ab[0]))), absAll(a), lda, absAll(b), ldb, float32(math.Abs(float64(ab[1]))), scale, n)
				cases = append(cases, denseCase{
					name: fmt.Sprintf("sgemm_%s_m%d_n%d_k%d_a%g_b%g", lay.name, m, n, k, ab[0], ab[1]),
					ops:  []dOperand{f32s(a), f32s(b), f32s(c0)},
					plan: func(p *planner, bs []*Buffer) error { return p.sgemm(bs[2], bs[0], bs[1], g) },
					check: func(t *testing.T, got []dOperand) {
						closeTo(t, "C", got[2].f, want, scale)
					},
				})
			}
		}
	}
	// Bias, ReLU and its backward, dropout both ways, axpy, fill, transpose.
	for _, sh := range [][2]int{{1, 1}, {67, 5}, {300, 130}} {
		rows, cols := sh[0], sh[1]
		n := rows * cols
		x, b, dy, acc := randFloats(r, n), randFloats(r, cols), randFloats(r, n), randFloats(r, n)
		for i := range x {
			if i%7 == 0 {
				x[i] = 0 // dropout leaves zeros alone
			}
		}
		tag := fmt.Sprintf("r%d_c%d", rows, cols)
		tp := nn.NewTape(true, nil)
		xt, bt := nn.FromData(rows, cols, x).SetRequiresGrad(true), nn.FromData(1, cols, b).SetRequiresGrad(true)
		biased := tp.AddBias(xt, bt)
		backward(tp, biased, dy)
		cases = append(cases, denseCase{
			name:  "bias_" + tag,
			ops:   []dOperand{f32s(x), f32s(b), nanFloats(n)},
			plan:  func(p *planner, bs []*Buffer) error { return p.bias(bs[2], bs[0], bs[1], rows, cols) },
			check: func(t *testing.T, got []dOperand) { assert.Equal(t, biased.Data, got[2].f) },
		})
		for _, accum := range []bool{false, true} {
			want := append([]float32(nil), bt.Grad...)
			start := nanFloats(cols)
			if accum {
				start = f32s(b)
				for j := range want {
					want[j] += b[j]
				}
			}
			scale := make([]float32, cols)
			for i, v := range dy {
				scale[i%cols] += float32(math.Abs(float64(v)))
			}
			cases = append(cases, denseCase{
				name: fmt.Sprintf("colsum_%s_acc%v", tag, accum),
				ops:  []dOperand{f32s(dy), start},
				plan: func(p *planner, bs []*Buffer) error { return p.colSum(bs[1], bs[0], rows, cols, accum) },
				check: func(t *testing.T, got []dOperand) {
					closeTo(t, "bias grad", got[1].f, want, scale)
				},
			})
		}
		tp = nn.NewTape(true, nil)
		xr := nn.FromData(rows, cols, x).SetRequiresGrad(true)
		relu := tp.ReLU(xr)
		backward(tp, relu, dy)
		cases = append(cases, denseCase{
			name: "relu_" + tag,
			ops:  []dOperand{f32s(x), nanFloats(n), f32s(acc), f32s(dy)},
			plan: func(p *planner, bs []*Buffer) error {
				if err := p.relu(bs[1], bs[0], n); err != nil {
					return err
				}
				return p.reluBack(bs[2], bs[3], bs[0], n, true)
			},
			check: func(t *testing.T, got []dOperand) {
				assert.Equal(t, relu.Data, got[1].f)
				want := append([]float32(nil), acc...)
				for i := range want {
					want[i] += xr.Grad[i]
				}
				assert.Equal(t, want, got[2].f)
			},
		})
		const prob = 0.3
		seed := rand.New(rand.NewPCG(uint64(n), 9)).Uint64()
		tp = nn.NewTape(true, rand.New(rand.NewPCG(uint64(n), 9)))
		xd := nn.FromData(rows, cols, x).SetRequiresGrad(true)
		dropped := tp.Dropout(xd, prob)
		backward(tp, dropped, dy)
		cases = append(cases, denseCase{
			name: "dropout_" + tag,
			ops:  []dOperand{f32s(x), nanFloats(n), f32s(dy), f32s(acc)},
			plan: func(p *planner, bs []*Buffer) error {
				if err := p.dropout(bs[1], bs[0], n, prob, true, false); err != nil {
					return err
				}
				p.launches[len(p.launches)-1].args[3] = seed
				if err := p.dropout(bs[3], bs[2], n, prob, false, true); err != nil {
					return err
				}
				p.launches[len(p.launches)-1].args[3] = seed
				return nil
			},
			check: func(t *testing.T, got []dOperand) {
				assert.Equal(t, dropped.Data, got[1].f)
				want := append([]float32(nil), acc...)
				for i := range want {
					want[i] += xd.Grad[i]
				}
				assert.Equal(t, want, got[3].f)
			},
		})
		cases = append(cases, denseCase{
			name: "axpy_transpose_fill_" + tag,
			ops:  []dOperand{f32s(x), f32s(acc), nanFloats(n), f32s(acc), nanFloats(n)},
			plan: func(p *planner, bs []*Buffer) error {
				if err := p.axpy(bs[1], bs[0], n, -0.5, true); err != nil {
					return err
				}
				if err := p.transpose(bs[2], bs[0], rows, cols, false); err != nil {
					return err
				}
				if err := p.transpose(bs[3], bs[0], rows, cols, true); err != nil {
					return err
				}
				return p.fill(bs[4], n, 0)
			},
			check: func(t *testing.T, got []dOperand) {
				for i := range n {
					ri, ci := i/cols, i%cols
					o := ci*rows + ri
					assert.Equal(t, acc[i]+float32(-0.5)*x[i], got[1].f[i])
					assert.Equal(t, x[i], got[2].f[o])
					assert.Equal(t, acc[o]+x[i], got[3].f[o])
					assert.Zero(t, got[4].f[i])
				}
			},
		})
		// GIN's update and its gradients.
		eps := []float32{0.25}
		tp = nn.NewTape(true, nil)
		aggT, xT, epsT := nn.FromData(rows, cols, acc).SetRequiresGrad(true), nn.FromData(rows, cols, x).SetRequiresGrad(true), nn.FromData(1, 1, eps).SetRequiresGrad(true)
		comb := tp.AddScaled(aggT, xT, epsT)
		backward(tp, comb, dy)
		var epsScale float64
		for i := range dy {
			epsScale += math.Abs(float64(dy[i] * x[i]))
		}
		cases = append(cases, denseCase{
			name: "gin_" + tag,
			ops:  []dOperand{f32s(acc), f32s(x), f32s(eps), f32s(dy), nanFloats(n), f32s(acc), {f: []float32{0.5}}},
			plan: func(p *planner, bs []*Buffer) error {
				if err := p.scaleAdd(bs[4], bs[0], bs[1], bs[2], n, false); err != nil {
					return err
				}
				if err := p.scaleAdd(bs[5], nil, bs[3], bs[2], n, true); err != nil {
					return err
				}
				return p.dot(bs[6], bs[3], bs[1], n, true)
			},
			check: func(t *testing.T, got []dOperand) {
				assert.Equal(t, comb.Data, got[4].f)
				want := append([]float32(nil), acc...)
				for i := range want {
					want[i] += xT.Grad[i]
				}
				assert.Equal(t, want, got[5].f)
				closeTo(t, "d eps", got[6].f, []float32{0.5 + epsT.Grad[0]}, []float32{float32(epsScale) + 0.5})
			},
		})
	}
	// Cross-entropy and evaluation: an index set with a repeated node, one
	// row of a NaN, classes from 1 to 40.
	for _, sh := range [][2]int{{1, 1}, {70, 7}, {600, 40}} {
		rows, classes := sh[0], sh[1]
		logits := randFloats(r, rows*classes)
		labels := make([]int32, rows)
		for i := range labels {
			labels[i] = int32(r.IntN(classes))
		}
		if rows > 5 {
			logits[3*classes+1] = float32(math.NaN())
			for j := range classes { // ties: the first wins
				logits[4*classes+j] = 1
			}
		}
		var splits [3][]int32
		for i := range rows {
			m := r.IntN(3)
			splits[m] = append(splits[m], int32(i))
		}
		splits[0] = append(splits[0], 0, 0) // a node counted thrice
		w := make([]float32, 3*rows)
		for m, s := range splits {
			for _, v := range s {
				w[m*rows+int(v)]++
			}
		}
		train := splits[0]
		for i, v := range train { // the loss has no NaN row
			if v == 3 {
				train = append(train[:i:i], train[i+1:]...)
				w[3]--
				break
			}
		}
		tp := nn.NewTape(true, nil)
		lt := nn.FromData(rows, classes, logits).SetRequiresGrad(true)
		loss := tp.CrossEntropy(lt, labels, train)
		tp.Backward(loss)
		invN := 1 / float32(len(train))
		wantGrad := append([]float32(nil), lt.Grad...)
		if rows > 5 { // the NaN row, outside the index set: nn's backward gives NaN·0, the device 0
			clear(wantGrad[3*classes : 4*classes])
		}
		cases = append(cases, denseCase{
			name: fmt.Sprintf("xent_eval_r%d_c%d", rows, classes),
			ops:  []dOperand{f32s(logits), {i: labels}, f32s(w), nanFloats(rows * classes), {d: make([]float64, 1)}, {d: make([]float64, 6)}},
			plan: func(p *planner, bs []*Buffer) error {
				wTrain := &Buffer{ptr: bs[2].ptr, size: 4 * rows}
				if err := p.crossEntropy(bs[3], bs[4], bs[0], bs[1], wTrain, rows, classes, invN); err != nil {
					return err
				}
				return p.evaluate(bs[5], bs[0], bs[1], bs[2], rows, classes, 3)
			},
			check: func(t *testing.T, got []dOperand) {
				assert.InDelta(t, float64(loss.Data[0]), float64(float32(got[4].d[0]*float64(invN))), 1e-5*math.Max(1, math.Abs(float64(loss.Data[0]))))
				closeTo(t, "dlogits", got[3].f, wantGrad, nil)
				for m, s := range splits {
					hits := 0
					for _, v := range s {
						if int32(learn.Argmax(logits[int(v)*classes:(int(v)+1)*classes])) == labels[v] {
							hits++
						}
					}
					assert.Equal(t, float64(hits), got[5].d[2*m], "split %d hits", m)
					if m == 1 && !containsNode(s, 3) {
						ev := nn.NewTape(false, nil).CrossEntropy(nn.FromData(rows, classes, logits), labels, s)
						assert.InDelta(t, float64(ev.Data[0]), got[5].d[2*m+1]/float64(max(len(s), 1)), 1e-5*math.Max(1, float64(ev.Data[0])))
					}
				}
			},
		})
	}
	// Adam: three steps against learn.Adam, decayed and plain parameters.
	for _, n := range []int{1, 5, 1000} {
		pw, g1, g2 := randFloats(r, n), randFloats(r, n), randFloats(r, n)
		ndecay := n / 2
		cases = append(cases, denseCase{
			name: fmt.Sprintf("adam_n%d", n),
			ops:  []dOperand{f32s(pw), f32s(g1), {d: make([]float64, n)}, {d: make([]float64, n)}, f32s(g2)},
			plan: func(p *planner, bs []*Buffer) error {
				ref := learn.NewAdam(0.01, 0.1)
				for step := range 3 {
					g := bs[1]
					if step == 1 {
						g = bs[4]
					}
					if err := p.adam(bs[0], g, bs[2], bs[3], n, ndecay, adamParams(0.01, 0.1)); err != nil {
						return err
					}
					bc1, bc2 := ref.Next()
					l := &p.launches[len(p.launches)-1]
					l.args[13], l.args[14] = f64(bc1), f64(bc2)
				}
				return nil
			},
			check: func(t *testing.T, got []dOperand) {
				ref := learn.NewAdam(0.01, 0.1)
				want := append([]float32(nil), pw...)
				ps := [][]float32{want[:ndecay], want[ndecay:]}
				for step := range 3 {
					g := g1
					if step == 1 {
						g = g2
					}
					ref.Step(ps, [][]float32{g[:ndecay], g[ndecay:]}, []bool{true, false})
				}
				closeTo(t, "params", got[0].f, want, nil)
			},
		})
	}
	return append(cases, gatCases()...)
}

func containsNode(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func adamParams(lr, wd float64) AdamParams {
	return AdamParams{LR: lr, WeightDecay: wd, Beta1: learn.AdamBeta1, OneMinusB1: 1 - learn.AdamBeta1,
		Beta2: learn.AdamBeta2, OneMinusB2: 1 - learn.AdamBeta2, Eps: learn.AdamEps}
}

// TestFPDenseEmulated runs every dense case's planned launches on the CPU
// emulator (kernels/fp_dense.cu compiled as C++ with testdata/fp_emu.h):
// the kernels' indexing, barriers and reductions, and the planner's grids,
// split-K and scratch, before a GPU sees them.
func TestFPDenseEmulated(t *testing.T) {
	clang := emuTool(t)
	mainSrc, err := os.ReadFile("testdata/fp_dense_emu_main.inc")
	require.NoError(t, err)
	var table strings.Builder
	table.WriteString("#define EMU_DENSE_KERNELS")
	for _, k := range denseKernels {
		fmt.Fprintf(&table, " X(%s)", k)
	}
	table.WriteString("\n")
	prog := emuBuild(t, clang, t.TempDir(), "fp_dense", denseSource()+table.String()+string(mainSrc), "testdata/fp_emu.h")
	for _, c := range denseCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.check(t, runDenseEmu(t, prog, c))
		})
	}
}

// TestFPDense runs the dense cases on the device.
func TestFPDense(t *testing.T) {
	d := fpDevice(t)
	for _, c := range denseCases() {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, runDenseGPU(t, d, c))
		})
	}
}

// TestFPDenseKnobs: a call's seed and bias corrections change between
// runs; a call without them says so.
func TestFPDenseKnobs(t *testing.T) {
	p := &planner{sms: 1, alloc: func(n int) (*Buffer, error) { return &Buffer{size: n}, nil }}
	b := &Buffer{ptr: 1 << 40, size: 4096}
	require.NoError(t, p.dropout(b, b, 10, 0.5, true, false))
	c := &FPCall{launches: []fpLaunch{{params: p.launches[0].args}}, knobs: p.knobs, what: "dropout"}
	require.NoError(t, c.SetSeed(42))
	assert.Equal(t, uint64(42), c.launches[0].params[3])
	assert.ErrorIs(t, c.SetBiasCorrection(1, 1), ErrShape)
	assert.ErrorIs(t, p.sgemm(b, b, b, Gemm{TransA: true, TransB: true, M: 1, N: 1, K: 1}), ErrShape, "both transposed")
	assert.ErrorIs(t, p.sgemm(b, b, b, Gemm{M: 64, N: 64, K: 1}), ErrShape, "C of 4096 floats in 4096 bytes")
	assert.ErrorIs(t, p.dropout(b, b, 10, 1, true, false), ErrShape, "rate 1")
}
