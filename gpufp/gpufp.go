package gpufp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/layers/fp"
	"github.com/qgtc/qgtc/tcu"
	"github.com/qgtc/qgtc/templates"
)

// ErrUnsupported: a model or training mode the device path does not run
// yet; the message says which.
var ErrUnsupported = errors.New("gpufp: not on the GPU yet")

// Supported returns nil when models of c train and evaluate on the device,
// else an error wrapping ErrUnsupported that names what does not.
func Supported(c fp.Config) error {
	switch {
	case c.Model == "sage" && c.Aggr == "max":
		return fmt.Errorf("%w: sage with max aggregation (mean is)", ErrUnsupported)
	case c.Model == "gin" && c.Norm == "batch":
		return fmt.Errorf("%w: gin with batch norm (norm none is)", ErrUnsupported)
	case c.Model != "gcn" && c.Model != "sage" && c.Model != "gin" && c.Model != "gat":
		return fmt.Errorf("%w: model %q", ErrUnsupported, c.Model)
	}
	return nil
}

// Train is fp.Train on the device: the same epochs, early stopping and
// result, full batch. The best parameters end up in m.
func Train(d *tcu.Device, m fp.Model, data *fp.Data, cfg fp.TrainConfig) (*fp.Result, error) {
	if err := cfg.Check(m, data); err != nil {
		return nil, err
	}
	if cfg.Clusters > 0 {
		return nil, fmt.Errorf("%w: Cluster-GCN mini-batches (train full batch, or on the CPU)", ErrUnsupported)
	}
	t, err := New(d, m, data, &Optim{LR: cfg.LR, WeightDecay: cfg.WeightDecay})
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return fp.TrainWith(t, cfg)
}

// Evaluate is fp.Evaluate on the device: the forward pass in evaluation
// mode and the splits' accuracies and validation loss.
func Evaluate(d *tcu.Device, m fp.Model, data *fp.Data) (fp.Eval, error) {
	t, err := New(d, m, data, nil)
	if err != nil {
		return fp.Eval{}, err
	}
	defer t.Close()
	return t.Evaluate()
}

// Optim is the optimizer of a Trainer: Adam (internal/learn's) at LR with
// L2 weight decay on the parameters marked Decay.
type Optim struct {
	LR, WeightDecay float32
}

// Trainer holds a model and a task on the device: the fp.Engine that
// fp.TrainWith drives. Close frees its device memory.
type Trainer struct {
	d    *tcu.Device
	m    fp.Model
	data *fp.Data
	n    int // nodes
	p    float32

	bufs   []*tcu.Buffer
	named  map[string]*tcu.Buffer
	graphs []*tcu.FPGraph
	calls  []*tcu.FPCall

	params    []*nn.Param // trainable, decayed first: their order in P
	views     map[*nn.Param][2]*tcu.Buffer
	byName    map[string]*nn.Param
	P, G      *tcu.Buffer // parameters and gradients, flat
	best      *tcu.Buffer
	nP        int
	keep, put *tcu.FPCall

	x0    input        // the features as uploaded
	g, gT *tcu.FPGraph // the model's graph and its transpose
	edgeW *tcu.Buffer  // a value per edge of g: GCN's weights, or 1/deg for mean

	fwdTrain, fwdEval, back []*tcu.FPCall
	sites                   []*dropSite
	zero, xent, adam, eval  *tcu.FPCall
	opt                     *learn.Adam
	loss, evalOut           *tcu.Buffer
	logits                  *tcu.Buffer
	nTrain, nVal, nTest     int
}

// dropSite is one nn.Dropout of the forward pass: its forward call and,
// when the gradient goes through it, its backward call; both take the
// seed the tape would draw.
type dropSite struct{ fwd, bwd *tcu.FPCall }

// input is a layer's input: dense rows×cols, or the sparse features (their
// CSR, its transpose whose edge ids point at vals, and the stored values).
type input struct {
	dense  *tcu.Buffer
	g, gT  *tcu.FPGraph
	vals   *tcu.Buffer
	nnz    int
	cols   int
	sparse bool
}

// New uploads m and data to d and prepares the programs: the evaluation
// forward pass and, with an optimizer, the training step. The model must
// be Supported; its parameters are read now and written back by Restore.
func New(d *tcu.Device, m fp.Model, data *fp.Data, opt *Optim) (*Trainer, error) {
	c := m.Config()
	if err := Supported(c); err != nil {
		return nil, err
	}
	if c.In != data.Input.X.Cols || c.Out != data.NumClasses {
		return nil, fmt.Errorf("%w: model is %d→%d but dataset %q has %d features and %d classes", fp.ErrConfig, c.In, c.Out, data.Name, data.Input.X.Cols, data.NumClasses)
	}
	if opt != nil && len(data.Train) == 0 {
		return nil, fmt.Errorf("%w: dataset %q has no training nodes", fp.ErrData, data.Name)
	}
	t := &Trainer{d: d, m: m, data: data, n: data.Input.X.Rows, p: c.Dropout, named: map[string]*tcu.Buffer{},
		views: map[*nn.Param][2]*tcu.Buffer{}, byName: map[string]*nn.Param{}}
	if err := t.setup(opt); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// build carries a setup's sticky error: each helper does nothing once it is set.
type build struct {
	t   *Trainer
	err error
}

func (b *build) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// buf is a new device buffer of n floats.
func (b *build) buf(n int) *tcu.Buffer {
	if b.err != nil {
		return nil
	}
	buf, err := b.t.d.Alloc(4 * max(n, 1))
	if err != nil {
		b.fail(err)
		return nil
	}
	b.t.bufs = append(b.t.bufs, buf)
	return buf
}

// named is the buffer of n floats called name, shared by the training and
// evaluation programs (one set of activations).
func (b *build) named(name string, n int) *tcu.Buffer {
	if buf, ok := b.t.named[name]; ok {
		if buf.Size() < 4*n {
			b.fail(fmt.Errorf("gpufp: buffer %s of %d bytes asked for %d floats", name, buf.Size(), n))
		}
		return buf
	}
	buf := b.buf(n)
	b.t.named[name] = buf
	return buf
}

func (b *build) upload(data []byte) *tcu.Buffer {
	buf := b.buf((len(data) + 3) / 4)
	if b.err == nil && len(data) > 0 {
		b.fail(buf.Write(data))
	}
	return buf
}

func (b *build) graph(g templates.CSR, nsrc int) *tcu.FPGraph {
	if b.err != nil {
		return nil
	}
	fg, err := b.t.d.UploadCSR(g, nsrc)
	if err != nil {
		b.fail(err)
		return nil
	}
	b.t.graphs = append(b.t.graphs, fg)
	return fg
}

// to returns what takes a Prepare call's results: the call, appended to
// list (nil: to none) and kept for Close, or nil after a failure.
func (b *build) to(list *[]*tcu.FPCall) func(*tcu.FPCall, error) *tcu.FPCall {
	return func(c *tcu.FPCall, err error) *tcu.FPCall {
		if err != nil || b.err != nil {
			b.fail(err)
			if c != nil {
				c.Close()
			}
			return nil
		}
		b.t.calls = append(b.t.calls, c)
		if list != nil {
			*list = append(*list, c)
		}
		return c
	}
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

func (t *Trainer) setup(opt *Optim) error {
	b := &build{t: t}
	d := t.d
	// Parameters: decayed first, so that one Adam launch decays a prefix.
	var decayed, plain []*nn.Param
	for _, p := range t.m.Params() {
		t.byName[p.Name] = p
		switch {
		case p.Buffer:
			return fmt.Errorf("%w: buffer %s (batch norm)", ErrUnsupported, p.Name)
		case p.Decay:
			decayed = append(decayed, p)
		default:
			plain = append(plain, p)
		}
	}
	t.params = append(decayed, plain...)
	nDecay := 0
	for _, p := range t.params {
		if p.Decay {
			nDecay += len(p.Data)
		}
		t.nP += len(p.Data)
	}
	t.P, t.G, t.best = b.buf(t.nP), b.buf(t.nP), b.buf(t.nP)
	if b.err != nil {
		return b.err
	}
	flat := make([]float32, 0, t.nP)
	for _, p := range t.params {
		pv, err := t.P.Slice(4*len(flat), 4*len(p.Data))
		b.fail(err)
		gv, err := t.G.Slice(4*len(flat), 4*len(p.Data))
		b.fail(err)
		t.views[p] = [2]*tcu.Buffer{pv, gv}
		flat = append(flat, p.Data...)
	}
	if b.err == nil {
		b.fail(t.P.Write(bytesOf(flat)))
	}
	t.keep = b.to(nil)(d.PrepareAxpy(t.best, t.P, t.nP, 1, false))
	t.put = b.to(nil)(d.PrepareAxpy(t.P, t.best, t.nP, 1, false))

	// The task: labels, the splits' weights (a node's count in each).
	n, c := t.n, t.data.NumClasses
	labels := b.upload(bytesOf(t.data.Labels))
	w := make([]float32, 3*n)
	for k, split := range [][]int32{t.data.Train, t.data.Val, t.data.Test} {
		for _, v := range split {
			w[k*n+int(v)]++
		}
	}
	wAll := b.upload(bytesOf(w))
	t.nTrain, t.nVal, t.nTest = len(t.data.Train), len(t.data.Val), len(t.data.Test)

	// The features.
	x := t.data.Input.X
	if x.Sparse != nil {
		xg := templates.CSR{Indptr: x.Sparse.Indptr, Indices: x.Sparse.Indices}
		t.x0 = input{sparse: true, g: b.graph(xg, x.Cols), gT: b.graph(xg.Transpose(x.Cols), n), vals: b.upload(bytesOf(x.Data)), nnz: len(x.Data), cols: x.Cols}
	} else {
		t.x0 = input{dense: b.upload(bytesOf(x.Data)), cols: x.Cols}
	}
	if b.err != nil {
		return b.err
	}

	t.logits = t.forward(b, &t.fwdEval, nil, false)
	t.evalOut = b.buf(12)
	t.eval = b.to(nil)(d.PrepareEvaluate(t.evalOut, t.logits, labels, wAll, n, c, 3))
	if opt == nil {
		return b.err
	}
	t.forward(b, &t.fwdTrain, &t.back, true)
	t.loss = b.buf(2)
	wTrain, err := wAll.Slice(0, 4*n)
	b.fail(err)
	t.xent = b.to(nil)(d.PrepareCrossEntropy(b.named("dlogits", n*c), t.loss, t.logits, labels, wTrain, n, c, 1/float32(t.nTrain)))
	t.zero = b.to(nil)(d.PrepareFill(t.G, t.nP, 0))
	t.opt = learn.NewAdam(float64(opt.LR), float64(opt.WeightDecay))
	// The moments start at zero: float64 zeros are zero words.
	mom, vel := b.buf(2*t.nP), b.buf(2*t.nP)
	zm, zv := b.to(nil)(d.PrepareFill(mom, 2*t.nP, 0)), b.to(nil)(d.PrepareFill(vel, 2*t.nP, 0))
	if b.err == nil {
		b.fail(d.RunCalls(zm, zv))
	}
	t.adam = b.to(nil)(d.PrepareAdam(t.P, t.G, mom, vel, t.nP, nDecay, tcu.AdamParams{
		LR: t.opt.LR, WeightDecay: t.opt.WeightDecay, Beta1: learn.AdamBeta1, OneMinusB1: 1 - learn.AdamBeta1,
		Beta2: learn.AdamBeta2, OneMinusB2: 1 - learn.AdamBeta2, Eps: learn.AdamEps}))
	return b.err
}

// param is the named parameter's (value, gradient) views.
func (t *Trainer) param(b *build, format string, i int) (*nn.Param, *tcu.Buffer, *tcu.Buffer) {
	name := fmt.Sprintf(format, i)
	p, ok := t.byName[name]
	if !ok {
		b.fail(fmt.Errorf("gpufp: model %s has no parameter %s", t.m.Config().Model, name))
		return nil, nil, nil
	}
	v := t.views[p]
	return p, v[0], v[1]
}

// dropIn is nn.Dropout on a layer's input when training: a new site.
func (t *Trainer) dropIn(b *build, fwd *[]*tcu.FPCall, x input, name string, train bool) (input, *dropSite) {
	if !train || t.p <= 0 {
		return x, nil
	}
	site := &dropSite{}
	t.sites = append(t.sites, site)
	if x.sparse {
		out := b.named(name, x.nnz)
		site.fwd = b.to(fwd)(t.d.PrepareDropout(out, x.vals, x.nnz, t.p, true, false))
		x.vals = out
		return x, site
	}
	out := b.named(name, t.n*x.cols)
	site.fwd = b.to(fwd)(t.d.PrepareDropout(out, x.dense, t.n*x.cols, t.p, true, false))
	return input{dense: out, cols: x.cols}, site
}

// dropBack is the site's backward pass on dx (n×cols): the gradient of
// the dropout's input.
func (t *Trainer) dropBack(b *build, back *[]*tcu.FPCall, site *dropSite, dx *tcu.Buffer, cols int, name string) *tcu.Buffer {
	if site == nil {
		return dx
	}
	out := b.named(name, t.n*cols)
	site.bwd = b.to(back)(t.d.PrepareDropout(out, dx, t.n*cols, t.p, false, false))
	return out
}

// linear is nn.MatMulT: y = x·wᵀ (added to y when acc), w out×in.
func (t *Trainer) linear(b *build, list *[]*tcu.FPCall, x input, p *nn.Param, w, y *tcu.Buffer, acc bool, name string) {
	out, in := p.Rows, p.Cols
	if !x.sparse {
		b.to(list)(t.d.PrepareSgemm(y, x.dense, w, tcu.Gemm{TransB: true, M: t.n, N: out, K: in, Alpha: 1, Beta: float32(b2f(acc))}))
		return
	}
	// A sparse x gathers rows of wᵀ, as nn's spmmT does.
	wt := b.named(name+".wt", in*out)
	b.to(list)(t.d.PrepareTranspose(wt, w, out, in, false))
	dst := y
	if acc {
		dst = b.named(name+".tmp", t.n*out)
	}
	b.to(list)(t.d.PrepareSpMM(dst, x.g, tcu.SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: wt, E: x.vals, F: out}))
	if acc {
		b.to(list)(t.d.PrepareAxpy(y, dst, t.n*out, 1, true))
	}
}

// linearBack is nn.MatMulT's backward: gw += dyᵀ·x, and dx = dy·w (added
// to dx when acc) unless dx is nil.
func (t *Trainer) linearBack(b *build, list *[]*tcu.FPCall, x input, p *nn.Param, w, gw, dy, dx *tcu.Buffer, acc bool, name string) {
	out, in := p.Rows, p.Cols
	if x.sparse {
		// xᵀ·dy over the transposed features, then into gw's layout.
		dwt := b.named(name+".dwt", in*out)
		b.to(list)(t.d.PrepareSpMM(dwt, x.gT, tcu.SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: dy, E: x.vals, F: out}))
		b.to(list)(t.d.PrepareTranspose(gw, dwt, in, out, true))
	} else {
		b.to(list)(t.d.PrepareSgemm(gw, dy, x.dense, tcu.Gemm{TransA: true, M: out, N: in, K: t.n, Alpha: 1, Beta: 1}))
	}
	if dx != nil {
		b.to(list)(t.d.PrepareSgemm(dx, dy, w, tcu.Gemm{M: t.n, N: in, K: out, Alpha: 1, Beta: float32(b2f(acc))}))
	}
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// layerIO is what a layer's backward pass needs of its forward pass.
type layerIO struct {
	x    input     // the input after dropout
	site *dropSite // its dropout, if any
	prev *tcu.Buffer
	act  *tcu.Buffer // the activation of prev (ReLU's, or GAT's ELU)
	in   int
}

// eluAlpha is fp.GAT's ELU between layers.
const eluAlpha = 1

// forward builds the model's forward pass into fwd (training mode when
// train: dropout on) and, when back is set, its backward pass from
// "dlogits"; it returns the logits.
func (t *Trainer) forward(b *build, fwd, back *[]*tcu.FPCall, train bool) *tcu.Buffer {
	if b.err != nil {
		return nil
	}
	c := t.m.Config()
	x := t.x0
	var prev *tcu.Buffer // the last layer's output, before its ReLU
	var ios []layerIO
	var backs []func(dy *tcu.Buffer)
	for i := range c.Layers {
		in := x.cols
		var r *tcu.Buffer
		if i > 0 {
			r = b.named(fmt.Sprintf("relu%d", i), t.n*in)
			if c.Model == "gat" {
				b.to(fwd)(t.d.PrepareELU(r, prev, t.n*in, eluAlpha))
			} else {
				b.to(fwd)(t.d.PrepareReLU(r, prev, t.n*in))
			}
			x = input{dense: r, cols: in}
		}
		xd, site := t.dropIn(b, fwd, x, fmt.Sprintf("drop%d", i), train)
		ios = append(ios, layerIO{x: xd, site: site, prev: prev, act: r, in: in})
		var out *tcu.Buffer
		var bk func(dy, dx *tcu.Buffer)
		switch c.Model {
		case "gcn":
			out, bk = t.gcnLayer(b, fwd, back, i, xd)
		case "sage":
			out, bk = t.sageLayer(b, fwd, back, i, xd)
		case "gin":
			out, bk = t.ginLayer(b, fwd, back, i, xd)
		case "gat":
			out, bk = t.gatLayer(b, fwd, back, i, xd, train)
		}
		io := ios[i]
		backs = append(backs, func(dy *tcu.Buffer) {
			if i == 0 {
				bk(dy, nil)
				return
			}
			dxd := b.named(fmt.Sprintf("dxd%d", i), t.n*io.in)
			bk(dy, dxd)
			dxin := t.dropBack(b, back, io.site, dxd, io.in, fmt.Sprintf("dxin%d", i))
			dprev := b.named(fmt.Sprintf("dout%d", i-1), t.n*io.in)
			if c.Model == "gat" {
				b.to(back)(t.d.PrepareELUBackward(dprev, dxin, io.prev, io.act, t.n*io.in, eluAlpha, false))
			} else {
				b.to(back)(t.d.PrepareReLUBackward(dprev, dxin, io.prev, t.n*io.in, false))
			}
			backs[i-1](dprev)
		})
		prev = out
		x = input{dense: out, cols: c.Out}
		if i < c.Layers-1 {
			x.cols = c.Hidden
		}
	}
	if back != nil {
		backs[len(backs)-1](b.named("dlogits", t.n*c.Out))
	}
	return prev
}

// gcnLayer is layer i of fp.GCN: propagate(x·wᵀ) + b over the graph with
// self-loops and its normalized weights.
func (t *Trainer) gcnLayer(b *build, fwd, back *[]*tcu.FPCall, i int, x input) (*tcu.Buffer, func(dy, dx *tcu.Buffer)) {
	g, gT, w := t.gcnGraph(b)
	pw, wv, wg := t.param(b, "convs.%d.lin.weight", i)
	_, bv, bg := t.param(b, "convs.%d.bias", i)
	if b.err != nil {
		return nil, func(_, _ *tcu.Buffer) {}
	}
	out := pw.Rows
	h := b.named(fmt.Sprintf("h%d", i), t.n*out)
	t.linear(b, fwd, x, pw, wv, h, false, fmt.Sprintf("lin%d", i))
	y := b.named(fmt.Sprintf("out%d", i), t.n*out)
	b.to(fwd)(t.d.PrepareSpMM(y, g, tcu.SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: h, E: w, F: out}))
	b.to(fwd)(t.d.PrepareBias(y, y, bv, t.n, out))
	return y, func(dy, dx *tcu.Buffer) {
		b.to(back)(t.d.PrepareColSum(bg, dy, t.n, out, true))
		dh := b.named(fmt.Sprintf("dh%d", i), t.n*out)
		b.to(back)(t.d.PrepareSpMM(dh, gT, tcu.SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: dy, E: w, F: out}))
		t.linearBack(b, back, x, pw, wv, wg, dh, dx, false, fmt.Sprintf("lin%d", i))
	}
}

// sageLayer is layer i of fp.SAGE (mean): mean(x·w_lᵀ) + b_l + x·w_rᵀ.
func (t *Trainer) sageLayer(b *build, fwd, back *[]*tcu.FPCall, i int, x input) (*tcu.Buffer, func(dy, dx *tcu.Buffer)) {
	g, gT, invDeg := t.pullGraph(b)
	pl, wl, gl := t.param(b, "convs.%d.lin_l.weight", i)
	_, bl, gbl := t.param(b, "convs.%d.lin_l.bias", i)
	pr, wr, gr := t.param(b, "convs.%d.lin_r.weight", i)
	if b.err != nil {
		return nil, func(_, _ *tcu.Buffer) {}
	}
	out := pl.Rows
	hl := b.named(fmt.Sprintf("h%d", i), t.n*out)
	t.linear(b, fwd, x, pl, wl, hl, false, fmt.Sprintf("lin_l%d", i))
	y := b.named(fmt.Sprintf("out%d", i), t.n*out)
	b.to(fwd)(t.d.PrepareSpMM(y, g, tcu.SpMMArgs{Msg: templates.CopyU, Reduce: templates.Mean, X: hl, F: out}))
	b.to(fwd)(t.d.PrepareBias(y, y, bl, t.n, out))
	t.linear(b, fwd, x, pr, wr, y, true, fmt.Sprintf("lin_r%d", i))
	return y, func(dy, dx *tcu.Buffer) {
		b.to(back)(t.d.PrepareColSum(gbl, dy, t.n, out, true))
		// Mean's backward: each edge passes dy[v]/deg(v) to its source.
		dhl := b.named(fmt.Sprintf("dh%d", i), t.n*out)
		b.to(back)(t.d.PrepareSpMM(dhl, gT, tcu.SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: dy, E: invDeg, F: out}))
		// nn's tape reaches x through lin_r first, then lin_l.
		t.linearBack(b, back, x, pr, wr, gr, dy, dx, false, fmt.Sprintf("lin_r%d", i))
		t.linearBack(b, back, x, pl, wl, gl, dhl, dx, true, fmt.Sprintf("lin_l%d", i))
	}
}

// ginLayer is layer i of fp.GIN (no norm): h = x·w0ᵀ, c = Σ_{u→v} h_u +
// (1+ε)·h + b0, out = ReLU(c)·w1ᵀ + b1.
func (t *Trainer) ginLayer(b *build, fwd, back *[]*tcu.FPCall, i int, x input) (*tcu.Buffer, func(dy, dx *tcu.Buffer)) {
	g, gT, _ := t.pullGraph(b)
	_, eps, geps := t.param(b, "convs.%d.eps", i)
	p0, w0, gw0 := t.param(b, "convs.%d.nn.lins.0.weight", i)
	_, b0, gb0 := t.param(b, "convs.%d.nn.lins.0.bias", i)
	p1, w1, gw1 := t.param(b, "convs.%d.nn.lins.1.weight", i)
	_, b1, gb1 := t.param(b, "convs.%d.nn.lins.1.bias", i)
	if b.err != nil {
		return nil, func(_, _ *tcu.Buffer) {}
	}
	hid, out := p0.Rows, p1.Rows
	n := t.n
	h := b.named(fmt.Sprintf("h%d", i), n*hid)
	t.linear(b, fwd, x, p0, w0, h, false, fmt.Sprintf("lin0_%d", i))
	agg := b.named(fmt.Sprintf("agg%d", i), n*hid)
	b.to(fwd)(t.d.PrepareSpMM(agg, g, tcu.SpMMArgs{Msg: templates.CopyU, Reduce: templates.Sum, X: h, F: hid}))
	cc := b.named(fmt.Sprintf("c%d", i), n*hid)
	b.to(fwd)(t.d.PrepareScaleAdd(cc, agg, h, eps, n*hid, false))
	b.to(fwd)(t.d.PrepareBias(cc, cc, b0, n, hid))
	r := b.named(fmt.Sprintf("r%d", i), n*hid)
	b.to(fwd)(t.d.PrepareReLU(r, cc, n*hid))
	y := b.named(fmt.Sprintf("out%d", i), n*out)
	t.linear(b, fwd, input{dense: r, cols: hid}, p1, w1, y, false, fmt.Sprintf("lin1_%d", i))
	b.to(fwd)(t.d.PrepareBias(y, y, b1, n, out))
	return y, func(dy, dx *tcu.Buffer) {
		b.to(back)(t.d.PrepareColSum(gb1, dy, n, out, true))
		dr := b.named(fmt.Sprintf("dr%d", i), n*hid)
		t.linearBack(b, back, input{dense: r, cols: hid}, p1, w1, gw1, dy, dr, false, fmt.Sprintf("lin1_%d", i))
		dc := b.named(fmt.Sprintf("dc%d", i), n*hid)
		b.to(back)(t.d.PrepareReLUBackward(dc, dr, cc, n*hid, false))
		b.to(back)(t.d.PrepareColSum(gb0, dc, n, hid, true))
		b.to(back)(t.d.PrepareDot(geps, dc, h, n*hid, true))
		dh := b.named(fmt.Sprintf("dh%d", i), n*hid)
		b.to(back)(t.d.PrepareSpMM(dh, gT, tcu.SpMMArgs{Msg: templates.CopyU, Reduce: templates.Sum, X: dc, F: hid}))
		b.to(back)(t.d.PrepareScaleAdd(dh, nil, dc, eps, n*hid, true))
		t.linearBack(b, back, x, p0, w0, gw0, dh, dx, false, fmt.Sprintf("lin0_%d", i))
	}
}

// gatLayer is layer i of fp.GAT: h = x·wᵀ, the per-head scores
// el = HeadDot(h, att_src) and er = HeadDot(h, att_dst), the fused
// attention aggregation over the graph with self-loops (attention dropout
// when training), the heads' mean on the output layer, + b.
func (t *Trainer) gatLayer(b *build, fwd, back *[]*tcu.FPCall, i int, x input, train bool) (*tcu.Buffer, func(dy, dx *tcu.Buffer)) {
	c := t.m.Config()
	g, gT, _ := t.gcnGraph(b)
	pw, wv, wg := t.param(b, "convs.%d.lin.weight", i)
	_, sv, sg := t.param(b, "convs.%d.att_src", i)
	_, dv, dg := t.param(b, "convs.%d.att_dst", i)
	_, bv, bg := t.param(b, "convs.%d.bias", i)
	if b.err != nil {
		return nil, func(_, _ *tcu.Buffer) {}
	}
	heads, last := c.Heads, i == c.Layers-1
	if last {
		heads = c.OutHeads
	}
	n, hd := t.n, pw.Rows
	d := hd / heads
	h := b.named(fmt.Sprintf("h%d", i), n*hd)
	t.linear(b, fwd, x, pw, wv, h, false, fmt.Sprintf("lin%d", i))
	el, er := b.named(fmt.Sprintf("el%d", i), n*heads), b.named(fmt.Sprintf("er%d", i), n*heads)
	b.to(fwd)(t.d.PrepareHeadDot(el, h, sv, n, heads, d))
	b.to(fwd)(t.d.PrepareHeadDot(er, h, dv, n, heads, d))
	args := tcu.GATArgs{X: h, El: el, Er: er, Out: b.named(fmt.Sprintf("agg%d", i), n*hd),
		Stats: b.named(fmt.Sprintf("stats%d", i), 2*n*heads), Heads: heads, D: d, Slope: c.Slope}
	var site *dropSite
	if train && c.AttnDropout > 0 {
		args.Drop = c.AttnDropout
		site = &dropSite{}
		t.sites = append(t.sites, site) // after the input's: the tape's order
	}
	agg := b.to(fwd)(t.d.PrepareGATAggregate(g, args))
	if site != nil {
		site.fwd = agg
	}
	// The aggregation's output stays as it is: its backward pass reads it.
	ow := hd
	mean := last && heads > 1
	if last {
		ow = d
	}
	y := b.named(fmt.Sprintf("out%d", i), n*ow)
	if mean {
		b.to(fwd)(t.d.PrepareMeanHeads(y, args.Out, n, heads, d))
		b.to(fwd)(t.d.PrepareBias(y, y, bv, n, ow))
	} else {
		b.to(fwd)(t.d.PrepareBias(y, args.Out, bv, n, ow))
	}
	return y, func(dy, dx *tcu.Buffer) {
		b.to(back)(t.d.PrepareColSum(bg, dy, n, ow, true))
		dagg := dy
		if mean {
			dagg = b.named(fmt.Sprintf("dagg%d", i), n*hd)
			b.to(back)(t.d.PrepareMeanHeadsBackward(dagg, dy, n, heads, d, false))
		}
		dh := b.named(fmt.Sprintf("dh%d", i), n*hd)
		del, der := b.named(fmt.Sprintf("del%d", i), n*heads), b.named(fmt.Sprintf("der%d", i), n*heads)
		ab := b.to(back)(t.d.PrepareGATAggregateBackward(g, gT, args, dagg, dh, del, der))
		if site != nil {
			site.bwd = ab
		}
		b.to(back)(t.d.PrepareHeadDotBackward(dh, sg, del, h, sv, n, heads, d, true))
		b.to(back)(t.d.PrepareHeadDotBackward(dh, dg, der, h, dv, n, heads, d, true))
		t.linearBack(b, back, x, pw, wv, wg, dh, dx, false, fmt.Sprintf("lin%d", i))
	}
}

// gcnGraph uploads (once) GCN's graph with self-loops, its transpose and
// the normalized weights by edge id.
func (t *Trainer) gcnGraph(b *build) (g, gT *tcu.FPGraph, w *tcu.Buffer) {
	if t.edgeW == nil {
		ng, wts := t.data.Input.GCNGraph()
		t.uploadGraph(b, ng, wts)
	}
	return t.g, t.gT, t.edgeW
}

// pullGraph uploads (once) the graph without self-loops, its transpose
// and 1/deg(v) per edge u→v by edge id (mean's backward).
func (t *Trainer) pullGraph(b *build) (g, gT *tcu.FPGraph, invDeg *tcu.Buffer) {
	if t.edgeW == nil {
		ng := t.data.Input.Graph
		inv := make([]float32, ng.NumEdges())
		for v := range ng.N() {
			p0, p1 := ng.CSR.Indptr[v], ng.CSR.Indptr[v+1]
			for p := p0; p < p1; p++ {
				inv[p] = 1 / float32(p1-p0)
			}
		}
		t.uploadGraph(b, ng, inv)
	}
	return t.g, t.gT, t.edgeW
}

// uploadGraph uploads the model's graph, its transpose (edge ids: the
// positions in g) and a value per edge. A model uses one graph.
func (t *Trainer) uploadGraph(b *build, g *nn.Graph, w []float32) {
	t.g = b.graph(g.CSR, g.N())
	t.gT = b.graph(g.T(), g.N())
	t.edgeW = b.upload(bytesOf(w))
}

// Step implements fp.Engine: one full-batch epoch on the device; the
// loss is the one scalar that comes back.
func (t *Trainer) Step(rng *rand.Rand) (float64, error) {
	if t.adam == nil {
		return 0, fmt.Errorf("gpufp: a trainer made without an optimizer does not train")
	}
	for _, s := range t.sites {
		seed := rng.Uint64() // nn.Tape.Seed, in the tape's order
		if err := s.fwd.SetSeed(seed); err != nil {
			return 0, err
		}
		if s.bwd != nil {
			if err := s.bwd.SetSeed(seed); err != nil {
				return 0, err
			}
		}
	}
	bc1, bc2 := t.opt.Next()
	if err := t.adam.SetBiasCorrection(bc1, bc2); err != nil {
		return 0, err
	}
	calls := append([]*tcu.FPCall{t.zero}, t.fwdTrain...)
	calls = append(append(append(calls, t.xent), t.back...), t.adam)
	if err := t.d.RunCalls(calls...); err != nil {
		return 0, err
	}
	sum, err := readDoubles(t.loss, 1)
	if err != nil {
		return 0, err
	}
	return float64(float32(sum[0] / float64(t.nTrain))), nil
}

// Evaluate implements fp.Engine: fp.Evaluate's figures from the device.
func (t *Trainer) Evaluate() (fp.Eval, error) {
	if err := t.d.RunCalls(append(append([]*tcu.FPCall(nil), t.fwdEval...), t.eval)...); err != nil {
		return fp.Eval{}, err
	}
	v, err := readDoubles(t.evalOut, 6)
	if err != nil {
		return fp.Eval{}, err
	}
	frac := func(hits float64, n int) float64 {
		if n == 0 {
			return 0
		}
		return hits / float64(n)
	}
	ev := fp.Eval{TrainAcc: frac(v[0], t.nTrain), ValAcc: frac(v[2], t.nVal), TestAcc: frac(v[4], t.nTest)}
	if t.nVal > 0 {
		ev.ValLoss = float64(float32(v[3] / float64(t.nVal))) // nn.NLL's float32 mean
	}
	return ev, nil
}

// Keep implements fp.Engine: a device copy of the parameters.
func (t *Trainer) Keep() error { return t.d.RunCalls(t.keep) }

// Restore implements fp.Engine: the kept parameters back on the device
// and into the model.
func (t *Trainer) Restore() error {
	if err := t.d.RunCalls(t.put); err != nil {
		return err
	}
	flat := make([]float32, t.nP)
	if err := t.P.Read(bytesOf(flat)); err != nil {
		return err
	}
	for _, p := range t.params {
		copy(p.Data, flat)
		flat = flat[len(p.Data):]
	}
	return nil
}

func readDoubles(b *tcu.Buffer, n int) ([]float64, error) {
	raw := make([]byte, 8*n)
	if err := b.Read(raw); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out, nil
}

// Close frees the trainer's device memory (the device stays open).
func (t *Trainer) Close() error {
	var errs []error
	for _, c := range t.calls {
		errs = append(errs, c.Close())
	}
	for _, g := range t.graphs {
		errs = append(errs, g.Close())
	}
	for _, b := range t.bufs {
		errs = append(errs, b.Free())
	}
	t.calls, t.graphs, t.bufs = nil, nil, nil
	return errors.Join(errs...)
}
