package tcu

// The dense and elementwise fp32 ops of full-precision training on the
// device (kernels/fp_dense.cu): the products, bias, ReLU, dropout, GIN's
// update, cross-entropy, evaluation and Adam, each a twin of an op of
// internal/nn or internal/learn. A Prepare* call plans its launches once
// (a planner: grids, split-K, scratch) into an FPCall that a training loop
// runs every step; RunCalls queues a step's calls in one piece of device
// work. The planner does not touch the device except to allocate
// scratch, so the CPU emulation tests run the very launches it plans.

import (
	"fmt"
	"math"
)

// denseKernels are the kernels of kernels/fp_dense.cu and fp_gat.cu.
var denseKernels = []string{"sgemm_nn", "sgemm_nt", "sgemm_tn", "sgemm_reduce", "bias_add", "relu", "relu_back",
	"dropout", "axpy", "fill", "transpose", "scale_add", "colsum_part", "colsum_final", "dot_part", "reduce_parts",
	"xent", "eval_part", "adam",
	"headdot", "headdot_back_x", "headdot_back_att_part", "gat_fwd", "gat_back_dst", "gat_back_src",
	"elu", "elu_back", "mean_heads", "mean_heads_back"}

// denseBlock is the block of every dense kernel (BLOCK in fp_dense.cu).
const denseBlock = 256

// SGEMM tiles (TM, TN, TK in fp_dense.cu) and the least K a split-K slice
// takes.
const (
	gemmTM, gemmTN, gemmTK = 64, 64, 16
	gemmMinSlice           = 256
)

// dLaunch is a planned launch of a dense kernel.
type dLaunch struct {
	kernel string
	grid   [3]uint32
	args   []uint64
}

// knob locates a parameter a call changes between runs (a seed, Adam's
// bias corrections): launch l, parameter p. A name may have several (the
// two launches of GAT's backward pass share a seed).
type knob struct{ l, p int }

// planner plans dense launches: alloc gives scratch (device memory, or a
// fake buffer in the emulation tests), sms sizes the grids.
type planner struct {
	alloc    func(n int) (*Buffer, error)
	sms      int
	launches []dLaunch
	scratch  []*Buffer
	knobs    map[string][]knob
}

func (p *planner) add(kernel string, grid [3]uint32, args ...uint64) {
	p.launches = append(p.launches, dLaunch{kernel: kernel, grid: grid, args: args})
}

// mark records that parameter i of the last launch is (one place of) the
// knob name.
func (p *planner) mark(name string, i int) {
	if p.knobs == nil {
		p.knobs = map[string][]knob{}
	}
	p.knobs[name] = append(p.knobs[name], knob{len(p.launches) - 1, i})
}

func (p *planner) scratchBuf(n int) (*Buffer, error) {
	b, err := p.alloc(max(n, 4))
	if err != nil {
		return nil, err
	}
	p.scratch = append(p.scratch, b)
	return b, nil
}

// flat is the grid of a grid-stride loop over n elements: enough blocks to
// fill the device a few times over, no more.
func (p *planner) flat(n int) [3]uint32 {
	b := (n + denseBlock - 1) / denseBlock
	return [3]uint32{uint32(max(1, min(b, 32*max(p.sms, 1)))), 1, 1}
}

func f64(v float64) uint64 { return math.Float64bits(v) }
func u(v int) uint64       { return uint64(v) }
func bit(b bool) uint64    { return uint64(b2i(b)) }

// want is a buffer an op needs: name for the error, and its size in
// 4-byte words (a float32 or an int32 each; a float64 takes two).
type want struct {
	name  string
	b     *Buffer
	words int
}

func needAll(ws ...want) error {
	for _, w := range ws {
		if err := needBytes(w.name, w.b, w.words); err != nil {
			return err
		}
	}
	return nil
}

// Gemm describes C = Alpha·op(A)·op(B) + Beta·C for contiguous row-major
// matrices, templates.Sgemm's convention with leading dimensions equal to
// the widths: op(A) is M×K (A stored K×M when TransA), op(B) K×N (B stored
// N×K when TransB), C M×N. Beta 0 does not read C. Both transposed is not
// a case training needs.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
}

func (p *planner) sgemm(c, a, b *Buffer, g Gemm) error {
	if g.M < 0 || g.N < 0 || g.K < 0 || (g.TransA && g.TransB) {
		return fmt.Errorf("%w: sgemm %+v", ErrShape, g)
	}
	if err := needAll(want{"C", c, g.M * g.N}, want{"A", a, g.M * g.K}, want{"B", b, g.K * g.N}); err != nil {
		return err
	}
	if g.M == 0 || g.N == 0 {
		return nil
	}
	kernel := "sgemm_nn"
	switch {
	case g.TransA:
		kernel = "sgemm_tn"
	case g.TransB:
		kernel = "sgemm_nt"
	}
	tiles := ceilDiv(g.M, gemmTM) * ceilDiv(g.N, gemmTN)
	// Split K when the tiles alone leave most of the device idle.
	splits := 1
	if want := 2 * max(p.sms, 1); tiles < want && g.K > 2*gemmMinSlice {
		splits = min(ceilDiv(want, tiles), g.K/gemmMinSlice)
	}
	kc := ceilDiv(ceilDiv(max(g.K, 1), splits), gemmTK) * gemmTK
	splits = max(1, ceilDiv(g.K, kc))
	grid := [3]uint32{uint32(ceilDiv(g.M, gemmTM)), uint32(ceilDiv(g.N, gemmTN)), uint32(splits)}
	if g.N > gemmTN*65535 {
		return fmt.Errorf("%w: sgemm N = %d is past the grid", ErrShape, g.N)
	}
	alpha, beta := f64(float64(g.Alpha)), f64(float64(g.Beta))
	if splits == 1 {
		p.add(kernel, grid, ptrOf(a), ptrOf(b), ptrOf(c), 0, u(g.M), u(g.N), u(g.K), u(kc), alpha, beta)
		return nil
	}
	part, err := p.scratchBuf(4 * splits * g.M * g.N)
	if err != nil {
		return err
	}
	p.add(kernel, grid, ptrOf(a), ptrOf(b), ptrOf(c), ptrOf(part), u(g.M), u(g.N), u(g.K), u(kc), alpha, beta)
	p.add("sgemm_reduce", p.flat(g.M*g.N), ptrOf(part), ptrOf(c), u(g.M*g.N), u(splits), alpha, beta)
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func (p *planner) bias(out, x, b *Buffer, rows, cols int) error {
	if err := needAll(want{"out", out, rows * cols}, want{"x", x, rows * cols}, want{"b", b, cols}); err != nil {
		return err
	}
	if rows*cols > 0 {
		p.add("bias_add", p.flat(rows*cols), ptrOf(out), ptrOf(x), ptrOf(b), u(rows), u(cols))
	}
	return nil
}

func (p *planner) relu(out, x *Buffer, n int) error {
	if err := needAll(want{"out", out, n}, want{"x", x, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("relu", p.flat(n), ptrOf(out), ptrOf(x), u(n))
	}
	return nil
}

func (p *planner) reluBack(dx, dy, x *Buffer, n int, acc bool) error {
	if err := needAll(want{"dx", dx, n}, want{"dy", dy, n}, want{"x", x, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("relu_back", p.flat(n), ptrOf(dx), ptrOf(dy), ptrOf(x), u(n), bit(acc))
	}
	return nil
}

// dropKnob is the seed knob of a dropout call.
const dropKnob = "seed"

func (p *planner) dropout(out, x *Buffer, n int, prob float32, forward, acc bool) error {
	if !(prob > 0 && prob < 1) {
		return fmt.Errorf("%w: dropout rate %v outside (0, 1)", ErrShape, prob)
	}
	if err := needAll(want{"out", out, n}, want{"x", x, n}); err != nil {
		return err
	}
	// templates.DropKeep's test on the hash's top 24 bits k, float32(k)·2⁻²⁴
	// ≥ p, is exactly k ≥ ⌈p·2²⁴⌉: both sides are exact in float32.
	thr := uint64(math.Ceil(float64(prob) * (1 << 24)))
	scale := 1 / (1 - prob)
	p.add("dropout", p.flat(max(n, 1)), ptrOf(out), ptrOf(x), u(n), 0, thr, f64(float64(scale)), bit(forward), bit(acc))
	p.mark(dropKnob, 3)
	return nil
}

func (p *planner) axpy(out, x *Buffer, n int, alpha float32, acc bool) error {
	if err := needAll(want{"out", out, n}, want{"x", x, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("axpy", p.flat(n), ptrOf(out), ptrOf(x), u(n), f64(float64(alpha)), bit(acc))
	}
	return nil
}

func (p *planner) fill(out *Buffer, n int, v float32) error {
	if err := needAll(want{"out", out, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("fill", p.flat(n), ptrOf(out), u(n), f64(float64(v)))
	}
	return nil
}

func (p *planner) transpose(out, in *Buffer, rows, cols int, acc bool) error {
	if err := needAll(want{"out", out, rows * cols}, want{"in", in, rows * cols}); err != nil {
		return err
	}
	if rows*cols > 0 {
		p.add("transpose", p.flat(rows*cols), ptrOf(out), ptrOf(in), u(rows), u(cols), bit(acc))
	}
	return nil
}

func (p *planner) scaleAdd(out, agg, x, eps *Buffer, n int, acc bool) error {
	if err := needAll(want{"out", out, n}, want{"x", x, n}, want{"eps", eps, 1}); err != nil {
		return err
	}
	if agg != nil {
		if err := needAll(want{"agg", agg, n}); err != nil {
			return err
		}
	}
	if n > 0 {
		p.add("scale_add", p.flat(n), ptrOf(out), ptrOf(agg), ptrOf(x), ptrOf(eps), u(n), bit(acc))
	}
	return nil
}

// colChunk is the rows one block of colsum_part sums: enough chunks to
// fill the device, none shorter than 64 rows.
func (p *planner) colChunk(rows, cols int) int {
	want := 4 * max(p.sms, 1) / max(1, ceilDiv(cols, denseBlock))
	return max(64, ceilDiv(rows, max(want, 1)))
}

func (p *planner) colSum(out, x *Buffer, rows, cols int, acc bool) error {
	if err := needAll(want{"out", out, cols}, want{"x", x, rows * cols}); err != nil {
		return err
	}
	if cols == 0 {
		return nil
	}
	chunk := p.colChunk(rows, cols)
	chunks := max(1, ceilDiv(rows, chunk))
	part, err := p.scratchBuf(8 * chunks * cols)
	if err != nil {
		return err
	}
	p.add("colsum_part", [3]uint32{uint32(chunks), uint32(ceilDiv(cols, denseBlock)), 1}, ptrOf(part), ptrOf(x), u(rows), u(cols), u(chunk))
	p.add("colsum_final", p.flat(cols), ptrOf(out), ptrOf(part), u(chunks), u(cols), bit(acc))
	return nil
}

func (p *planner) dot(out, a, b *Buffer, n int, acc bool) error {
	if err := needAll(want{"out", out, 1}, want{"a", a, n}, want{"b", b, n}); err != nil {
		return err
	}
	grid := p.flat(max(n, 1))
	part, err := p.scratchBuf(8 * int(grid[0]))
	if err != nil {
		return err
	}
	p.add("dot_part", grid, ptrOf(part), ptrOf(a), ptrOf(b), u(n))
	p.add("reduce_parts", [3]uint32{1, 1, 1}, 0, ptrOf(out), ptrOf(part), u(int(grid[0])), 1, bit(acc))
	return nil
}

func (p *planner) crossEntropy(dlogits, loss, logits, labels, w *Buffer, rows, classes int, invN float32) error {
	if classes < 1 {
		return fmt.Errorf("%w: %d classes", ErrShape, classes)
	}
	if err := needAll(want{"dlogits", dlogits, rows * classes}, want{"loss", loss, 2}, want{"logits", logits, rows * classes}, want{"labels", labels, rows}, want{"w", w, rows}); err != nil {
		return err
	}
	blocks := max(1, ceilDiv(rows, denseBlock))
	part, err := p.scratchBuf(8 * blocks)
	if err != nil {
		return err
	}
	p.add("xent", [3]uint32{uint32(blocks), 1, 1}, ptrOf(dlogits), ptrOf(part), ptrOf(logits), ptrOf(labels), ptrOf(w),
		u(rows), u(classes), f64(float64(invN)))
	p.add("reduce_parts", [3]uint32{1, 1, 1}, ptrOf(loss), 0, ptrOf(part), u(blocks), 1, 0)
	return nil
}

func (p *planner) evaluate(out, logits, labels, w *Buffer, rows, classes, k int) error {
	if classes < 1 || k < 1 {
		return fmt.Errorf("%w: %d classes, %d splits", ErrShape, classes, k)
	}
	if err := needAll(want{"out", out, 4 * k}, want{"logits", logits, rows * classes}, want{"labels", labels, rows}, want{"w", w, k * rows}); err != nil {
		return err
	}
	blocks := max(1, ceilDiv(rows, denseBlock))
	part, err := p.scratchBuf(8 * blocks * 2 * k)
	if err != nil {
		return err
	}
	p.add("eval_part", [3]uint32{uint32(blocks), 1, 1}, ptrOf(part), ptrOf(logits), ptrOf(labels), ptrOf(w), u(rows), u(classes), u(k))
	p.add("reduce_parts", [3]uint32{uint32(2 * k), 1, 1}, ptrOf(out), 0, ptrOf(part), u(blocks), u(2*k), 0)
	return nil
}

// AdamParams are Adam's hyper-parameters (internal/learn's): the rate, L2
// weight decay, β1 and 1−β1, β2 and 1−β2 (given apart so that each is the
// host's exact float64) and ε.
type AdamParams struct {
	LR, WeightDecay   float64
	Beta1, OneMinusB1 float64
	Beta2, OneMinusB2 float64
	Eps               float64
}

// adamKnob is the first of the two bias-correction parameters.
const adamKnob = "bc"

func (p *planner) adam(params, grads, m, v *Buffer, n, ndecay int, a AdamParams) error {
	if ndecay < 0 || ndecay > n {
		return fmt.Errorf("%w: %d of %d parameters decayed", ErrShape, ndecay, n)
	}
	if err := needAll(want{"params", params, n}, want{"grads", grads, n}, want{"m", m, 2 * n}, want{"v", v, 2 * n}); err != nil {
		return err
	}
	p.add("adam", p.flat(max(n, 1)), ptrOf(params), ptrOf(grads), ptrOf(m), ptrOf(v), u(n), u(ndecay),
		f64(a.LR), f64(a.WeightDecay), f64(a.Beta1), f64(a.OneMinusB1), f64(a.Beta2), f64(a.OneMinusB2), f64(a.Eps), f64(1), f64(1))
	p.mark(adamKnob, 13)
	return nil
}

// denseCall plans a call on the device: scratch from its pool, the kernels
// from the fp_dense module (compiled once, then cached).
func (d *Device) denseCall(what string, plan func(p *planner) error) (*FPCall, error) {
	p := &planner{sms: d.info.SMs}
	p.alloc = d.alloc
	err := d.run(func() error { return plan(p) })
	c := &FPCall{d: d, what: what, extra: p.scratch, knobs: p.knobs}
	if err != nil {
		c.Close()
		return nil, err
	}
	if len(p.launches) == 0 {
		return c, nil
	}
	fns, err := d.fpFunctions("fp_dense.cu", denseSource(), denseKernels...)
	if err != nil {
		c.Close()
		return nil, err
	}
	byName := map[string]uintptr{}
	for i, k := range denseKernels {
		byName[k] = fns[i]
	}
	for _, l := range p.launches {
		c.launches = append(c.launches, fpLaunch{fn: byName[l.kernel], grid: l.grid, params: l.args})
	}
	return c, nil
}

// denseSource is kernels/fp_dense.cu with kernels/fp_gat.cu appended:
// one module, one planner, one emulation harness for both.
func denseSource() string {
	var src []byte
	for _, name := range []string{"fp_dense.cu", "fp_gat.cu"} {
		b, err := kernelFS.ReadFile("kernels/" + name)
		if err != nil {
			panic("tcu: missing embedded kernel " + name) // build error, not a user one
		}
		src = append(append(src, b...), '\n')
	}
	return string(src)
}

// PrepareSgemm prepares c = g.Alpha·op(a)·op(b) + g.Beta·c (see Gemm),
// the twin of templates.Sgemm: tiled, split along K into slices added in
// order when the output has too few tiles to fill the device.
func (d *Device) PrepareSgemm(c, a, b *Buffer, g Gemm) (*FPCall, error) {
	return d.denseCall(fmt.Sprintf("sgemm %+v", g), func(p *planner) error { return p.sgemm(c, a, b, g) })
}

// PrepareBias prepares out = x + b over rows×cols, b broadcast over rows
// (nn.AddBias); out may be x.
func (d *Device) PrepareBias(out, x, b *Buffer, rows, cols int) (*FPCall, error) {
	return d.denseCall("bias", func(p *planner) error { return p.bias(out, x, b, rows, cols) })
}

// PrepareReLU prepares out = max(x, 0) over n values; out may be x.
func (d *Device) PrepareReLU(out, x *Buffer, n int) (*FPCall, error) {
	return d.denseCall("relu", func(p *planner) error { return p.relu(out, x, n) })
}

// PrepareReLUBackward prepares dx = dy where x > 0, else 0 (added to dx
// when acc), x being the ReLU's input.
func (d *Device) PrepareReLUBackward(dx, dy, x *Buffer, n int, acc bool) (*FPCall, error) {
	return d.denseCall("relu backward", func(p *planner) error { return p.reluBack(dx, dy, x, n, acc) })
}

// PrepareDropout prepares nn.Dropout's mask at rate prob over n values:
// out = x/(1−prob) where templates.DropKeep(seed, i, prob) keeps element
// i, else 0 (added to out when acc). The forward pass (forward) leaves
// zeros of x alone, as nn.Dropout does; run with forward false on the
// gradient it is the backward pass. SetSeed sets the seed before each run.
func (d *Device) PrepareDropout(out, x *Buffer, n int, prob float32, forward, acc bool) (*FPCall, error) {
	return d.denseCall("dropout", func(p *planner) error { return p.dropout(out, x, n, prob, forward, acc) })
}

// PrepareAxpy prepares out = alpha·x, added to out when acc: copies and
// sums of gradients.
func (d *Device) PrepareAxpy(out, x *Buffer, n int, alpha float32, acc bool) (*FPCall, error) {
	return d.denseCall("axpy", func(p *planner) error { return p.axpy(out, x, n, alpha, acc) })
}

// PrepareFill prepares out[i] = v for n values.
func (d *Device) PrepareFill(out *Buffer, n int, v float32) (*FPCall, error) {
	return d.denseCall("fill", func(p *planner) error { return p.fill(out, n, v) })
}

// PrepareTranspose prepares out (cols×rows) = inᵀ (in rows×cols), added
// to out when acc.
func (d *Device) PrepareTranspose(out, in *Buffer, rows, cols int, acc bool) (*FPCall, error) {
	return d.denseCall("transpose", func(p *planner) error { return p.transpose(out, in, rows, cols, acc) })
}

// PrepareScaleAdd prepares out = agg + (1+eps[0])·x over n values (GIN's
// update, nn.AddScaled; agg nil: no agg), added to out when acc.
func (d *Device) PrepareScaleAdd(out, agg, x, eps *Buffer, n int, acc bool) (*FPCall, error) {
	return d.denseCall("scale add", func(p *planner) error { return p.scaleAdd(out, agg, x, eps, n, acc) })
}

// PrepareColSum prepares out[j] = Σ_i x[i][j] over rows×cols (a bias
// gradient), added to out when acc; deterministic (partials in double,
// added in order).
func (d *Device) PrepareColSum(out, x *Buffer, rows, cols int, acc bool) (*FPCall, error) {
	return d.denseCall("colsum", func(p *planner) error { return p.colSum(out, x, rows, cols, acc) })
}

// PrepareDot prepares out[0] = Σ float32(a[i]·b[i]) over n values, summed
// in double and added to out[0] when acc (GIN's d eps).
func (d *Device) PrepareDot(out, a, b *Buffer, n int, acc bool) (*FPCall, error) {
	return d.denseCall("dot", func(p *planner) error { return p.dot(out, a, b, n, acc) })
}

// PrepareCrossEntropy prepares nn.CrossEntropy and its gradient on
// rows×classes logits with int32 labels: w[i] is node i's count in the
// index set (0 for the others), invN = 1/|idx|. loss gets the float64 sum
// Σ w·(−log softmax[label]) (the loss times |idx|); dlogits the loss's
// gradient, 0 on rows of weight 0.
func (d *Device) PrepareCrossEntropy(dlogits, loss, logits, labels, w *Buffer, rows, classes int, invN float32) (*FPCall, error) {
	return d.denseCall("cross entropy", func(p *planner) error {
		return p.crossEntropy(dlogits, loss, logits, labels, w, rows, classes, invN)
	})
}

// PrepareEvaluate prepares, for k weightings of the rows (w is k×rows,
// counts in index sets), out[2m] = Σ w_m·[argmax = label] (learn.Argmax)
// and out[2m+1] = Σ w_m·(−log softmax[label]), float64: the hits and
// losses of k splits in one pass.
func (d *Device) PrepareEvaluate(out, logits, labels, w *Buffer, rows, classes, k int) (*FPCall, error) {
	return d.denseCall("evaluate", func(p *planner) error { return p.evaluate(out, logits, labels, w, rows, classes, k) })
}

// PrepareAdam prepares learn.Adam's step on n float32 parameters with
// their gradients and float64 moments m, v; the first ndecay parameters
// take the weight decay. SetBiasCorrection sets the step's corrections
// before each run.
func (d *Device) PrepareAdam(params, grads, m, v *Buffer, n, ndecay int, a AdamParams) (*FPCall, error) {
	return d.denseCall("adam", func(p *planner) error { return p.adam(params, grads, m, v, n, ndecay, a) })
}

func (c *FPCall) setKnob(name string, vals ...uint64) error {
	ks, ok := c.knobs[name]
	if !ok {
		return fmt.Errorf("%w: %s has no %s to set", ErrShape, c.what, name)
	}
	for _, k := range ks {
		copy(c.launches[k.l].params[k.p:], vals)
	}
	return nil
}

// SetSeed sets a dropout call's seed for the next runs.
func (c *FPCall) SetSeed(seed uint64) error { return c.setKnob(dropKnob, seed) }

// SetBiasCorrection sets an Adam call's 1−β1ᵗ and 1−β2ᵗ for the next runs.
func (c *FPCall) SetBiasCorrection(bc1, bc2 float64) error {
	return c.setKnob(adamKnob, f64(bc1), f64(bc2))
}

// RunCalls queues calls in order on the device's stream in one piece of
// device work (a training step is dozens of launches) and returns; a Read
// waits for them.
func (d *Device) RunCalls(calls ...*FPCall) error {
	return d.run(func() error {
		for _, c := range calls {
			if c == nil || c.d != d {
				return fmt.Errorf("%w: a call of another device (or none)", ErrShape)
			}
			if err := c.run(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Sync waits for everything queued on the device's stream.
func (d *Device) Sync() error { return d.stream.Sync() }
