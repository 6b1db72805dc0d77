package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/subgraph"
)

// Data is a node-classification task prepared for Model: the graph, the
// labels and split, and the batches. Inference (and evaluation) runs on the
// fixed Eval batches; training draws Cluster-GCN batches of PerBatch random
// parts of Parts each epoch, or uses Eval when there is a single part.
type Data struct {
	Graph            *subgraph.Graph
	Labels           []int32
	Classes          int
	Train, Val, Test []int32
	Parts            []int32 // node → part; nil: the whole graph is one batch
	K                int     // number of parts
	PerBatch         int
	Eval             []*Batch
	NodeScale        []float32 // input scale per node (FeatureScale)
}

// NewData prepares d with the partition parts into k parts (nil for one
// batch) grouped perBatch parts to a batch, and the feature scale
// ScaleSqrt. The Eval batches carry their packed adjacency.
func NewData(d *subgraph.Dataset, parts []int32, k, perBatch int) (*Data, error) {
	return NewDataScaled(d, parts, k, perBatch, ScaleSqrt)
}

// NewDataScaled is NewData with the feature scale mode (ScaleSqrt,
// ScaleMean, ScaleRows or ScaleNone).
func NewDataScaled(d *subgraph.Dataset, parts []int32, k, perBatch int, scale string) (*Data, error) {
	switch scale {
	case ScaleMean, ScaleRows, ScaleSqrt, ScaleNone:
	default:
		return nil, fmt.Errorf("%w: feature scale %q (want mean, sqrt, rows or none)", ErrModel, scale)
	}
	if d.Labels == nil || d.NumClasses < 1 {
		return nil, fmt.Errorf("%w: dataset %q has no single-label classes", ErrModel, d.Name)
	}
	q := &Data{Graph: d.Graph, Labels: d.Labels, Classes: d.NumClasses,
		Train: d.Train, Val: d.Val, Test: d.Test, Parts: parts, K: k, PerBatch: max(1, perBatch)}
	if parts == nil || k <= 1 {
		q.Parts = nil
	} else {
		if len(parts) != d.Graph.N() {
			return nil, fmt.Errorf("%w: %d part assignments for %d nodes", ErrModel, len(parts), d.Graph.N())
		}
		for v, p := range parts {
			if p < 0 || int(p) >= k {
				return nil, fmt.Errorf("%w: node %d in part %d, outside [0, %d)", ErrModel, v, p, k)
			}
		}
	}
	var err error
	if d.Features != nil {
		q.NodeScale = FeatureScale(d.Features, scale)
	}
	q.Eval, err = evalBatches(d.Graph, q.Parts, k, q.PerBatch, q.NodeScale)
	return q, err
}

// TrainConfig controls TrainFP32 and QAT.
type TrainConfig struct {
	Epochs      int
	LR          float32
	WeightDecay float32
	Dropout     float32 // full precision only
	// KeepInput drops out only between layers, not the input features
	// (PyG's BasicGNN models; Kipf & Welling's GCN drops them too).
	KeepInput bool
	Patience  int // stop after this many epochs without a better validation accuracy (0: never)
	Seed      uint64
	// LearnScales (QAT only) learns each activation quantizer's step size
	// with the LSQ gradient (Esser et al., 2020), its zero point fixed in
	// units of the step; the weights' ranges are recomputed every step.
	LearnScales bool
	// PreciseBN (full precision only) sets the batch norms' running
	// statistics to the graph's under the epoch's weights before each
	// validation (preciseBN), instead of the moving average of the
	// training steps' batch statistics, which lags the weights and carries
	// dropout's variance.
	PreciseBN bool
	// Distill (QAT only) adds Distill times the mean KL(fp32 ‖ quantized)
	// of the softmax over every node of each batch to the loss, the fp32
	// model being m as QAT found it. A model trained to fit its few
	// labelled nodes (120 on Citeseer) already fits them quantized, so
	// their cross-entropy alone leaves QAT nothing to learn from; the
	// unlabelled nodes' fp32 predictions do (bench/interop/RESULTS.md).
	Distill float32
	// Progress, when set, is called after every epoch.
	Progress func(epoch int, loss, valAcc float64)
}

func (m *Model) linears() []*Linear {
	var ls []*Linear
	for i := range m.Layers {
		ls = append(ls, &m.Layers[i].Lin1)
		if m.Layers[i].Lin2 != nil {
			ls = append(ls, m.Layers[i].Lin2)
		}
	}
	return ls
}

// TrainFP32 trains m's float weights in full precision on d's batches and
// keeps the weights of the best validation epoch. It returns that accuracy.
func (m *Model) TrainFP32(d *Data, in *Input, cfg TrainConfig) (float64, error) {
	return m.train(d, in, cfg, false)
}

// QAT fine-tunes a calibrated m with quantization in the loop: the forward
// pass is the exact integer simulation of inference (the same quantizer and
// rounding as the bit kernels) and the backward pass the
// straight-through estimator. GIN's batch norm is frozen, as in Jacob et
// al.'s QAT: its running statistics, Gamma and Beta stay as the fp32
// training left them, folded into the aggregation's epilogue, so the
// training pass is inference bit for bit (with the batch's statistics
// instead, the quantizers trained on values inference never sees, which
// cost accuracy: bench/accuracy/RESULTS.md). The weights of the best
// validation epoch (epoch 0 being the calibrated starting point) are kept;
// it returns that accuracy.
func (m *Model) QAT(d *Data, in *Input, cfg TrainConfig) (float64, error) {
	if !m.Calibrated {
		return 0, fmt.Errorf("%w: QAT needs a calibrated model", ErrModel)
	}
	return m.train(d, in, cfg, true)
}

// newSimGrads makes the gradients of lins and of the layers' batch norms,
// and lists them with their parameters for Adam (decay: weights only).
func newSimGrads(lins []*Linear, layers []Layer) (g *simGrads, params, grads [][]float32, decay []bool) {
	g = &simGrads{w: map[*Linear][]float32{}, b: map[*Linear][]float32{},
		gamma: map[*BatchNorm][]float32{}, beta: map[*BatchNorm][]float32{}}
	for _, l := range lins {
		g.w[l] = make([]float32, len(l.W))
		params, grads, decay = append(params, l.W), append(grads, g.w[l]), append(decay, true)
		if l.B != nil {
			g.b[l] = make([]float32, len(l.B))
			params, grads, decay = append(params, l.B), append(grads, g.b[l]), append(decay, false)
		}
	}
	for i := range layers {
		if bn := layers[i].BN; bn != nil {
			g.gamma[bn], g.beta[bn] = make([]float32, len(bn.Gamma)), make([]float32, len(bn.Beta))
			params, grads, decay = append(params, bn.Gamma, bn.Beta), append(grads, g.gamma[bn], g.beta[bn]), append(decay, false, false)
		}
	}
	return g, params, grads, decay
}

func (m *Model) train(d *Data, in *Input, cfg TrainConfig, quant bool) (float64, error) {
	if err := m.Validate(in.Cols); err != nil {
		return 0, err
	}
	if m.Classes != d.Classes {
		return 0, fmt.Errorf("%w: model has %d classes, data %d", ErrModel, m.Classes, d.Classes)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x51ed270b27b6d4a3))
	isTrain := make([]bool, d.Graph.N())
	for _, v := range d.Train {
		isTrain[v] = true
	}
	lins := m.linears()
	g, params, grads, decay := newSimGrads(lins, m.Layers)
	// LSQ: each activation quantizer's step size s as a parameter, held
	// as log s (Adam moves a parameter by about lr a step whatever its
	// size: in log space that is a relative change of the step, what LSQ's
	// gradient scale aims at), written back into its Params (Lower = s·c,
	// c = Lower/Scale fixed) after every step.
	type lsq struct {
		p    *Params
		logS []float32
		grad []float32
		c    float64
	}
	var steps []lsq
	if quant && cfg.LearnScales {
		g.scale = map[*Params][]float32{}
		for _, op := range m.ops() {
			if op.out == nil {
				continue
			}
			l := lsq{p: op.out, logS: []float32{float32(math.Log(float64(op.out.Scale)))}, grad: make([]float32, 1),
				c: float64(op.out.Lower) / float64(op.out.Scale)}
			g.scale[op.out] = l.grad
			params, grads, decay = append(params, l.logS), append(grads, l.grad), append(decay, false)
			steps = append(steps, l)
		}
	}
	opt := learn.NewAdam(float64(cfg.LR), float64(cfg.WeightDecay))
	best := -1.0
	var bestModel *Model
	if quant {
		acc, err := m.Accuracy(d, in, true, d.Val)
		if err != nil {
			return 0, err
		}
		best, bestModel = acc, m.Clone()
	}
	var teacher *teacherLogits
	if quant && cfg.Distill > 0 {
		teacher = &teacherLogits{m: m.Clone(), wc: weightCache{}, eval: map[*Batch][]float32{}}
	}
	stale := 0
	fwdRng := rng // dropout and batch statistics, fp32 only
	if quant {
		fwdRng = nil // no dropout; batch norm frozen (see QAT)
	}
	var idx []int
	for ep := 1; ep <= cfg.Epochs; ep++ {
		batches := d.Eval
		if d.Parts != nil {
			var err error
			batches, err = trainBatches(d.Graph, d.Parts, d.K, d.PerBatch, rng, d.NodeScale)
			if err != nil {
				return 0, err
			}
		}
		var loss float64
		var count int
		for _, b := range batches {
			st, logits, err := m.simRun(b, in, qUpTo(quant), -1, cfg.Dropout, !cfg.KeepInput, fwdRng, nil, nil)
			if err != nil {
				return 0, err
			}
			idx = idx[:0]
			for i, v := range b.Nodes {
				if isTrain[v] {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 && teacher == nil {
				continue
			}
			var l float64
			var dl []float64
			if len(idx) > 0 {
				l, dl = crossEntropy(logits, m.Classes, d.Labels, b.Nodes, idx)
			} else {
				dl = make([]float64, len(logits))
			}
			loss += l * float64(len(idx))
			count += len(idx)
			if teacher != nil {
				t, err := teacher.of(b, in, d.Eval)
				if err != nil {
					return 0, err
				}
				distill(t, logits, m.Classes, float64(cfg.Distill), dl)
			}
			for _, gr := range grads {
				clear(gr)
			}
			m.simBackward(st, dl, g)
			for _, l := range steps {
				l.grad[0] *= l.p.Scale // d/d log s = s·d/ds
			}
			opt.Step(params, grads, decay)
			for _, l := range steps {
				sc := float32(math.Exp(float64(l.logS[0])))
				l.p.Scale, l.p.Lower = sc, float32(l.c*float64(sc))
			}
		}
		if cfg.PreciseBN && !quant {
			if err := m.preciseBN(d, in); err != nil {
				return 0, err
			}
		}
		acc, err := m.Accuracy(d, in, quant, d.Val)
		if err != nil {
			return 0, err
		}
		if count > 0 {
			loss /= float64(count)
		}
		if cfg.Progress != nil {
			cfg.Progress(ep, loss, acc)
		}
		if acc > best {
			best, bestModel, stale = acc, m.Clone(), 0
		} else if stale++; cfg.Patience > 0 && stale >= cfg.Patience {
			break
		}
	}
	if bestModel != nil {
		m.Layers = bestModel.Layers
	}
	return best, nil
}

// teacherLogits is the fp32 model QAT distils from and its logits on the
// Eval batches, which come back every epoch.
type teacherLogits struct {
	m    *Model
	wc   weightCache
	eval map[*Batch][]float32
}

// of returns the teacher's full-precision logits on b (kept when b is one
// of eval).
func (t *teacherLogits) of(b *Batch, in *Input, eval []*Batch) ([]float32, error) {
	if y, ok := t.eval[b]; ok {
		return y, nil
	}
	_, y, err := t.m.simRun(b, in, 0, -1, 0, true, nil, nil, t.wc)
	if err != nil {
		return nil, err
	}
	if slices.Contains(eval, b) {
		t.eval[b] = y
	}
	return y, nil
}

// distill adds to dl (n×c) the gradient of w times the mean over the n rows
// of KL(softmax(teacher) ‖ softmax(student)): w·(p_student − p_teacher)/n.
func distill(teacher, student []float32, c int, w float64, dl []float64) {
	n := len(student) / c
	if n == 0 {
		return
	}
	g := w / float64(n)
	for i := range n {
		t, s := teacher[i*c:(i+1)*c], student[i*c:(i+1)*c]
		mt, st := sumExp(t)
		ms, ss := sumExp(s)
		for j := range c {
			pt := math.Exp(float64(t[j])-mt) / st
			ps := math.Exp(float64(s[j])-ms) / ss
			dl[i*c+j] += g * (ps - pt)
		}
	}
}

// preciseBN sets each batch norm's running statistics to its input's mean
// and variance over d's Eval batches (weighted by their sizes) in one
// training-mode pass without dropout: the statistics inference will meet.
// A model without batch norm is left as it is.
func (m *Model) preciseBN(d *Data, in *Input) error {
	ops := m.ops()
	sum := map[*BatchNorm][2][]float64{}
	var total float64
	rng := rand.New(rand.NewPCG(0, 0)) // batch statistics; no dropout draws
	for _, b := range d.Eval {
		st, _, err := m.simRun(b, in, 0, -1, 0, true, rng, nil, nil)
		if err != nil {
			return err
		}
		n := float64(b.N())
		total += n
		for i, op := range ops {
			if op.bn == nil || st.bnMean[i] == nil {
				continue
			}
			s, ok := sum[op.bn]
			if !ok {
				s = [2][]float64{make([]float64, len(op.bn.Mean)), make([]float64, len(op.bn.Var))}
				sum[op.bn] = s
			}
			for j := range s[0] {
				s[0][j] += n * st.bnMean[i][j]
				s[1][j] += n * st.bnVar[i][j]
			}
		}
	}
	for bn, s := range sum {
		for j := range bn.Mean {
			bn.Mean[j], bn.Var[j] = float32(s[0][j]/total), float32(s[1][j]/total)
		}
	}
	return nil
}

// crossEntropy is the mean softmax cross-entropy over rows idx of logits
// (n×c) and its gradient, n×c.
func crossEntropy(logits []float32, c int, labels, nodes []int32, idx []int) (float64, []float64) {
	n := len(logits) / c
	d := make([]float64, n*c)
	var loss float64
	inv := 1 / float64(len(idx))
	for _, i := range idx {
		row := logits[i*c : (i+1)*c]
		mx, s := sumExp(row)
		y := int(labels[nodes[i]])
		if y < 0 || y >= c {
			continue
		}
		loss -= float64(row[y]) - mx - math.Log(s)
		for j, v := range row {
			p := math.Exp(float64(v)-mx) / s
			if j == y {
				p--
			}
			d[i*c+j] = p * inv
		}
	}
	return loss * inv, d
}

// Accuracy is the fraction of nodes whose label the model predicts, run
// over d's Eval batches: quantized (the exact simulation of Infer) or in
// full precision.
func (m *Model) Accuracy(d *Data, in *Input, quant bool, nodes []int32) (float64, error) {
	if len(nodes) == 0 {
		return math.NaN(), nil
	}
	pred, err := m.Predict(d, in, quant)
	if err != nil {
		return 0, err
	}
	return Accuracy(pred, d.Labels, nodes), nil
}

// Accuracy is the fraction of nodes with pred equal to the label.
func Accuracy(pred, labels, nodes []int32) float64 { return learn.Accuracy(pred, labels, nodes) }

// Predict returns the predicted class of every node (−1 for nodes in no
// batch) with the simulation.
func (m *Model) Predict(d *Data, in *Input, quant bool) ([]int32, error) {
	pred := make([]int32, d.Graph.N())
	for i := range pred {
		pred[i] = -1
	}
	wc := weightCache{}
	for _, b := range d.Eval {
		_, logits, err := m.simRun(b, in, qUpTo(quant), -1, 0, true, nil, nil, wc)
		if err != nil {
			return nil, err
		}
		Argmax(pred, logits, m.Classes, b.Nodes)
	}
	return pred, nil
}

// Argmax writes the arg max of each logits row to pred[nodes[row]].
func Argmax(pred []int32, logits []float32, c int, nodes []int32) {
	if c == 0 {
		return
	}
	parFor(len(nodes), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pred[nodes[i]] = int32(learn.Argmax(logits[i*c : (i+1)*c]))
		}
	})
}

// Calibrate sets m's activation parameters (post-training quantization):
// the features' params from in, then each quantized tensor in order, from
// its values over up to maxBatches of d's Eval batches with every earlier
// tensor already quantized. The candidate ranges are the min/max, tail
// percentiles and shrinks of those values (qRanges); the one kept is the one
// whose quantization moves the model's output least: the smallest mean
// KL(fp32 ‖ quantized) of the softmax over all the nodes of those batches,
// with the tensors before it quantized and those after it in full precision
// (no labels are used). The range of least squared error, which this
// replaced, clips the sums of GIN's high-degree nodes or wastes levels on
// them (bench/accuracy/RESULTS.md has what that cost).
func (m *Model) Calibrate(d *Data, in *Input, maxBatches int) error {
	if err := m.Validate(in.Cols); err != nil {
		return err
	}
	m.Input = in.Params
	batches := d.Eval
	if maxBatches > 0 && len(batches) > maxBatches {
		batches = batches[:maxBatches]
	}
	for i := range m.Layers {
		m.Layers[i].ZScale, m.Layers[i].ZShift = nil, nil
	}
	ops := m.ops()
	m.Calibrated = true
	wc := weightCache{} // the weights do not change while calibrating
	ref := make([][]float32, len(batches))
	for bi, b := range batches {
		_, y, err := m.simRun(b, in, 0, -1, 0, true, nil, nil, wc)
		if err != nil {
			return err
		}
		ref[bi] = y
	}
	// res[bi] resumes batch bi's quantized pass after the last calibrated
	// op, from the values made so far: each op runs once per batch, not
	// once per later tensor.
	res := make([]*resume, len(batches))
	for i := range ops {
		if ops[i].out == nil {
			continue
		}
		var sample []float32
		outs := make([][]float32, len(batches))
		prefix := make([][]simVal, len(batches))
		pass := func() error {
			sample = sample[:0]
			for bi, b := range batches {
				st, y, err := m.simRun(b, in, qUpTo(true), i, 0, true, nil, res[bi], wc)
				if err != nil {
					return err
				}
				outs[bi], prefix[bi] = y, st.vals[:i+1]
				sample = append(sample, y...)
			}
			return nil
		}
		if err := pass(); err != nil {
			return err
		}
		if ly := ops[i].eqOf; ly != nil && m.ChannelZ {
			ly.ZScale, ly.ZShift = channelEq(outs, ly.Lin1.Out)
			ops = m.ops()
			if err := pass(); err != nil {
				return err
			}
		}
		const maxSample = 1 << 19
		if len(sample) > maxSample {
			stride := len(sample) / maxSample
			s := sample[:0]
			for j := 0; j < len(sample); j += stride {
				s = append(s, sample[j])
			}
			sample = s
		}
		best, cands := qRanges(sample, m.actBits(ops[i].out), ops[i].relu)
		if len(cands) > 1 {
			bestKL := math.Inf(1)
			for _, c := range cands {
				*ops[i].out = c
				kl, err := m.klFrom(ref, batches, in, i, outs, prefix, wc)
				if err != nil {
					return err
				}
				if kl < bestKL {
					best, bestKL = c, kl
				}
			}
		}
		*ops[i].out = best
		for bi, y := range outs {
			res[bi] = &resume{from: i + 1, vals: withOutput(prefix[bi], y, rowWidth(y, batches[bi].N()), best, ops[i].outEq)}
		}
	}
	return nil
}

// channelEq returns the mean and the mean absolute deviation of each of
// the w columns of the rows in outs: ZShift and ZScale (1 for a constant
// column), so that each channel's codes span its own values.
func channelEq(outs [][]float32, w int) (scale, shift []float32) {
	sum, dev := make([]float64, w), make([]float64, w)
	var n int
	for _, y := range outs {
		for k, v := range y {
			sum[k%w] += float64(v)
		}
		n += len(y) / w
	}
	scale, shift = make([]float32, w), make([]float32, w)
	for j := range sum {
		shift[j] = float32(sum[j] / float64(max(1, n)))
	}
	for _, y := range outs {
		for k, v := range y {
			dev[k%w] += math.Abs(float64(v) - float64(shift[k%w]))
		}
	}
	for j := range dev {
		scale[j] = float32(dev[j] / float64(max(1, n)))
		if !(scale[j] > 0) || math.IsInf(float64(scale[j]), 0) || math.IsNaN(float64(shift[j])) {
			scale[j], shift[j] = 1, 0
		}
	}
	return scale, shift
}

// withOutput returns the values vals (0..i) followed by op i's output y
// (rows of width values) quantized with p, for a pass resumed at op i+1.
func withOutput(vals []simVal, y []float32, width int, p Params, eq *chanEq) []simVal {
	inv, off := p.Requant()
	v := simVal{data: make([]float64, len(y)), width: width, quant: true, p: p, eq: eq}
	for j, x := range y {
		v.data[j] = float64(qQuant(x, inv, off, p.Bits))
	}
	return append(slices.Clone(vals), v)
}

// rowWidth is the width of y, n rows of values (0 without rows).
func rowWidth(y []float32, n int) int {
	if n == 0 {
		return 0
	}
	return len(y) / n
}

// klFrom is klTo(ref, batches, in, i+1) from outs, op i's output on each
// batch before quantization, and prefix, the values before it: it
// quantizes the outputs with op i's params and runs the rest of the model
// in full precision on the dequantized values, the same values klTo's pass
// computes (tested), without rerunning ops 0..i. The weights come from wc
// (nil: prepared now).
func (m *Model) klFrom(ref [][]float32, batches []*Batch, in *Input, i int, outs [][]float32, prefix [][]simVal, wc weightCache) (float64, error) {
	op := m.ops()[i]
	p := *op.out
	var kl float64
	var n int
	c := m.Classes
	for bi, b := range batches {
		_, lg, err := m.simRun(b, in, i+1, -1, 0, true, nil, &resume{from: i + 1, vals: withOutput(prefix[bi], outs[bi], rowWidth(outs[bi], b.N()), p, op.outEq)}, wc)
		if err != nil {
			return 0, err
		}
		for r := 0; r < b.N(); r++ {
			kl += klDivergence(ref[bi][r*c:(r+1)*c], lg[r*c:(r+1)*c])
			n++
		}
	}
	return kl / float64(max(1, n)), nil
}

// sumExp returns the largest of v and Σ exp(v − max): the stable pieces
// of a softmax and of its log-sum-exp, max + log(sum).
func sumExp(v []float32) (mx, sum float64) {
	mx = math.Inf(-1)
	for _, x := range v {
		mx = max(mx, float64(x))
	}
	for _, x := range v {
		sum += math.Exp(float64(x) - mx)
	}
	return mx, sum
}

// klDivergence is KL(softmax(p) ‖ softmax(q)).
func klDivergence(p, q []float32) float64 {
	lse := func(v []float32) float64 {
		mx, s := sumExp(v)
		return mx + math.Log(s)
	}
	lp, lq := lse(p), lse(q)
	var kl float64
	for j := range p {
		a := float64(p[j]) - lp
		kl += math.Exp(a) * (a - (float64(q[j]) - lq))
	}
	return kl
}
