package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/subgraph"
)

// Graph classification (QGTC's batched GIN): whole graphs side by side in
// block-diagonal batches, a GIN whose last layer gives every node its class
// scores, and a sum readout per graph. The last linear commutes with the
// sum, so Σ_v (W·u_v + b) = W·Σ_v u_v + n·b is a sum readout of the last
// MLP's hidden units followed by a linear classifier.
//
// The readout runs on the backend like every other op: the node scores are
// quantized to ReadoutBits codes (AddCodes of the scores and zeros, whose
// sum is the score itself) and summed per graph by AggFloat over a graph
// operand whose row g lists graph g's nodes, so it is the same integer sum
// and epilogue on the generic, cpu and tcu backends.

// ReadoutBits is the width of the node scores the readout sums: node
// models keep their logits float32, the readout needs byte codes
// (AggFloat), and 8 bits is the widest of those.
const ReadoutBits = 8

// GraphBatch is a batch of whole graphs: Batch holds their nodes (global
// ids, graph after graph) and their block-diagonal adjacency with
// self-loops; the readout sums rows Pool lists into row i, graph Graphs[i].
type GraphBatch struct {
	*Batch
	Graphs []int32
	Pool   bmm.Graph
	Sizes  []float32 // nodes of each graph: the readout epilogue's RowTerm
}

// NewGraphBatches puts graphs of set (indices into set, in this order)
// perBatch to a batch. packed adds the 1-bit adjacency and its tile count
// that dense aggregations need (inference); without it the batches serve
// the simulation (training) and edge-list aggregations.
func NewGraphBatches(set *subgraph.GraphSet, graphs []int32, perBatch int, packed bool) ([]*GraphBatch, error) {
	if set == nil || set.Graph == nil || len(set.Offsets) == 0 {
		return nil, fmt.Errorf("%w: no graph set", ErrModel)
	}
	if perBatch < 1 {
		return nil, fmt.Errorf("%w: %d graphs per batch", ErrModel, perBatch)
	}
	ng := set.NumGraphs()
	for _, g := range graphs {
		if g < 0 || int(g) >= ng {
			return nil, fmt.Errorf("%w: graph %d outside [0, %d)", ErrModel, g, ng)
		}
	}
	var out []*GraphBatch
	for lo := 0; lo < len(graphs); lo += perBatch {
		gb, err := newGraphBatch(set, graphs[lo:min(len(graphs), lo+perBatch)], packed)
		if err != nil {
			return nil, err
		}
		out = append(out, gb)
	}
	return out, nil
}

func newGraphBatch(set *subgraph.GraphSet, graphs []int32, packed bool) (*GraphBatch, error) {
	gb := &GraphBatch{Graphs: slices.Clone(graphs), Pool: bmm.Graph{Indptr: make([]int32, 1, len(graphs)+1)},
		Sizes: make([]float32, len(graphs))}
	b := &Batch{Indptr: []int32{0}}
	g := set.Graph
	for i, gi := range graphs {
		lo, hi := set.Offsets[gi], set.Offsets[gi+1]
		base := int32(len(b.Nodes))
		for v := lo; v < hi; v++ {
			local := base + v - lo
			b.Nodes = append(b.Nodes, v)
			gb.Pool.Indices = append(gb.Pool.Indices, local)
			looped := false
			for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
				if u < lo || u >= hi {
					return nil, fmt.Errorf("%w: node %d of graph %d has an edge to node %d of another graph", ErrModel, v, gi, u)
				}
				if !looped && u >= v {
					b.Indices = append(b.Indices, local)
					looped = true
				}
				if u != v {
					b.Indices = append(b.Indices, base+u-lo)
				}
			}
			if !looped {
				b.Indices = append(b.Indices, local)
			}
			b.Indptr = append(b.Indptr, int32(len(b.Indices)))
		}
		gb.Pool.Indptr = append(gb.Pool.Indptr, int32(len(gb.Pool.Indices)))
		gb.Sizes[i] = float32(hi - lo)
	}
	n := len(b.Nodes)
	b.degrees()
	b.Edges = bmm.Graph{Indptr: b.Indptr, Indices: b.Indices}
	if packed {
		pad := bittensor.DefaultPadding
		adj, err := bittensor.New(n, n, 1, bittensor.ByRows, pad)
		if err != nil {
			return nil, err
		}
		w, lw := adj.Words(), adj.LineWords()
		for r := range n {
			for _, c := range b.Indices[b.Indptr[r]:b.Indptr[r+1]] {
				w[r*lw+int(c>>6)] |= 1 << (c & 63)
			}
		}
		b.Adj, b.tiles = adj, csrTiles(n, b.Indptr, b.Indices)
	}
	gb.Batch = b
	return gb, nil
}

// GraphModel is a GIN graph classifier: Model (Kind GIN, Classes the graph
// classes) and Heads give each node its class scores, which the sum
// readout adds up per graph before Bias is added. Readout quantizes the
// scores (ReadoutBits) once calibrated.
type GraphModel struct {
	*Model
	// Heads are Xu et al.'s readouts of the earlier layers: Heads[l]
	// (no bias) scores every node from the input of GIN layer l (the
	// features for l = 0), and the scores of every head are added to the
	// last layer's before the sum. Nil: the last layer's only.
	Heads []Linear
	// Bias (Classes) is added to every graph's logits after the sum: the
	// readout's intercept. Without it the sum of node scores
	// has no per-graph constant, so a graph of every node doubled gets
	// doubled logits and the same class: size alone cannot decide
	// (Xu et al.'s heads have biases; bench/accuracy/RESULTS.md).
	Bias    []float32
	Readout Params
	// Scale multiplies the readout's sums: 1/(mean graph size) of the
	// training graphs makes an average graph's logits the size of one
	// node's scores, so an Adam step moves them about as much (a large
	// graph's sum would jump with every step); the sum stays a sum.
	Scale float32
}

// NewGraphModel returns a randomly initialised GIN graph classifier with
// batch norm in its MLPs (norm, NormBatch or NormNone), in tag features,
// hidden units and classes graph classes.
func NewGraphModel(in, hidden, classes, layers, abits, wbits int, norm string, seed uint64) (*GraphModel, error) {
	m, err := NewModel(GIN, in, hidden, classes, layers, abits, wbits, seed)
	if err != nil {
		return nil, err
	}
	m.NormRows = false // one-hot tags: the codes are the features
	if err := m.SetNorm(norm); err != nil {
		return nil, err
	}
	gm := &GraphModel{Model: m, Scale: 1, Bias: make([]float32, classes)}
	r := rand.New(rand.NewPCG(seed, 0x6865616473))
	for l := range layers {
		fi := hidden
		if l == 0 {
			fi = in
		}
		h := glorot(r, fi, classes)
		h.B = nil
		gm.Heads = append(gm.Heads, h)
	}
	return gm, nil
}

// Clone returns a deep copy of gm.
func (gm *GraphModel) Clone() *GraphModel {
	c := &GraphModel{Model: gm.Model.Clone(), Bias: slices.Clone(gm.Bias), Readout: gm.Readout, Scale: gm.Scale}
	for _, h := range gm.Heads {
		c.Heads = append(c.Heads, h.clone())
	}
	return c
}

// headInput is the value Heads[l] reads: the input of GIN layer l.
func (gm *GraphModel) headInput(ops []planOp, l int) int { return ops[3*l].in[0] }

// checkHeads checks the heads' shapes against the model's.
func (gm *GraphModel) checkHeads() error {
	if gm.Kind != GIN || len(gm.Heads) > len(gm.Layers) {
		return fmt.Errorf("%w: a graph classifier is a GIN with at most a head per layer (%s, %d heads, %d layers)", ErrModel, gm.Kind, len(gm.Heads), len(gm.Layers))
	}
	if len(gm.Bias) != gm.Classes {
		return fmt.Errorf("%w: readout bias of %d for %d classes", ErrModel, len(gm.Bias), gm.Classes)
	}
	for l, h := range gm.Heads {
		if h.In != gm.Layers[l].Lin1.In || h.Out != gm.Classes || len(h.W) != h.In*h.Out || h.B != nil {
			return fmt.Errorf("%w: head %d is %d→%d with %d weights and %d biases, layer %d reads %d, %d classes",
				ErrModel, l, h.In, h.Out, len(h.W), len(h.B), l, gm.Layers[l].Lin1.In, gm.Classes)
		}
	}
	return nil
}

// headRun is one head's pass: its weights and what it read, for the
// backward pass.
type headRun struct {
	w      *simWeights
	h      []float64 // its input as read (codes when quant), nil for the features
	p      Params    // the input's params
	v      int       // the value read
	drop   []bool
	sparse bool
}

// nodeScores runs the GIN on b and adds the heads' scores to its last
// layer's, in head order (bmm.AddValue, as AddFloat on the backend).
func (gm *GraphModel) nodeScores(b *GraphBatch, in *Input, quant bool, dropout float32, rng *rand.Rand, wc weightCache) (*simState, []float32, []headRun, error) {
	if err := gm.checkHeads(); err != nil {
		return nil, nil, nil, err
	}
	st, y, err := gm.simRun(b.Batch, in, qUpTo(quant), -1, dropout, true, rng, nil, wc)
	if err != nil || len(gm.Heads) == 0 {
		return st, y, nil, err
	}
	n, c := b.N(), gm.Classes
	acc := slices.Clone(y)
	runs := make([]headRun, len(gm.Heads))
	for l := range gm.Heads {
		head := &gm.Heads[l]
		hr := &runs[l]
		hr.v = gm.headInput(st.ops, l)
		hr.w = wc.get(head, gm.WBits, quant)
		wsrc := hr.w.deq
		if quant {
			wsrc = hr.w.codes
		}
		var prod []float64
		var rowSums []float32
		if hr.v == 0 {
			s := st.features(quant, gm.Input)
			hr.sparse, hr.p = true, gm.Input
			prod = spmmDense(s, wsrc, n, c)
			if quant {
				rowSums = sparseRowSums(s)
			}
		} else {
			src := &st.vals[hr.v]
			hr.h, hr.p, hr.drop = src.read(quant), src.p, src.drop
			prod = matMul(hr.h, wsrc, n, src.width, c)
			if quant {
				rowSums = denseRowSums(hr.h, n, src.width)
			}
		}
		ep := linEpilogue(&planOp{kind: qLin, lin: head}, hr.p, hr.w, head.In, rowSums, b.Batch, quant)
		for r := range n {
			for j := range c {
				k := r*c + j
				acc[k] = bmm.AddValue(acc[k], ep.ApplyFloat(float32(prod[k]), r, j), false)
			}
		}
	}
	return st, acc, runs, nil
}

// headsBackward accumulates the heads' weight gradients from d, the
// gradient at the node scores, and hands the gradient at each value a
// head read to the GIN's backward pass (st.extra).
func (gm *GraphModel) headsBackward(st *simState, runs []headRun, d []float64, g *simGrads) {
	n, c := st.n, gm.Classes
	st.extra = map[int][]float64{}
	for l, hr := range runs {
		head := &gm.Heads[l]
		h := hr.h
		if hr.sparse {
			h = st.input.vals
		}
		if st.quant {
			h = dequantAll(h, hr.p)
		}
		weightGrad(g.w[head], d, n, c, head, h, hr.sparse, st.input)
		if hr.v == 0 {
			continue // the features take no gradient
		}
		dh := st.extra[hr.v]
		if dh == nil {
			dh = make([]float64, n*head.In)
			st.extra[hr.v] = dh
		}
		for k, x := range inputGrad(d, hr.w, n, head, hr.drop, st.dropout) {
			dh[k] += x
		}
	}
}

// readoutEpi is the readout's epilogue: Scale·Σ_v s(q_v + z) + Bias =
// Scale·s·C + Scale·s·z·n_g + Bias.
func (gm *GraphModel) readoutEpi(sizes []float32) *bmm.Epilogue {
	ep := aggEpilogue(&planOp{}, gm.Readout, gm.Classes, &Batch{Deg: sizes}, true)
	for j := range ep.ColScale {
		ep.ColScale[j] *= gm.Scale
		ep.ColTerm[j] *= gm.Scale
	}
	ep.ColBias = slices.Clone(gm.Bias)
	return ep
}

// readoutQuant is the readout's quantizer as the backend's AddCodes
// applies it to the scores plus zeros.
func (gm *GraphModel) readoutQuant(y []float32) []float64 {
	inv, off := gm.Readout.Requant()
	q := make([]float64, len(y))
	for k, x := range y {
		q[k] = float64(qQuant(bmm.AddValue(x, 0, false), inv, off, gm.Readout.Bits))
	}
	return q
}

// graphPass is one batch's simulated pass: the GIN's state, the node
// scores, the heads' runs and the graph logits.
type graphPass struct {
	st     *simState
	y      []float32
	runs   []headRun
	logits []float32
}

// graphForward runs the simulation on b: the graph logits (len(b.Graphs)
// × Classes) are the integer sum of the quantized node scores through the
// readout epilogue (quant), or the float sum of the scores, plus Bias.
func (gm *GraphModel) graphForward(b *GraphBatch, in *Input, quant bool, dropout float32, rng *rand.Rand, wc weightCache) (*graphPass, error) {
	st, y, runs, err := gm.nodeScores(b, in, quant, dropout, rng, wc)
	if err != nil {
		return nil, err
	}
	gp := &graphPass{st: st, y: y, runs: runs}
	c := gm.Classes
	ng := len(b.Graphs)
	gp.logits = make([]float32, ng*c)
	var vals []float64
	if quant {
		vals = gm.readoutQuant(y)
	} else {
		vals = make([]float64, len(y))
		for k, x := range y {
			vals[k] = float64(x)
		}
	}
	sums := aggregate(b.Pool.Indptr, b.Pool.Indices, vals, c)
	var ep *bmm.Epilogue
	if quant {
		ep = gm.readoutEpi(b.Sizes)
	}
	for r := range ng {
		for j := range c {
			k := r*c + j
			if ep != nil {
				gp.logits[k] = ep.ApplyFloat(float32(sums[k]), r, j)
			} else {
				gp.logits[k] = float32(float64(gm.Scale)*sums[k]) + gm.Bias[j]
			}
		}
	}
	return gp, nil
}

// GraphLogits returns the graph logits of every batch, in batch order,
// with the simulation: quantized (what a GraphPlan computes, bit for bit)
// or in full precision.
func (gm *GraphModel) GraphLogits(batches []*GraphBatch, in *Input, quant bool) ([][]float32, error) {
	if quant && !gm.Calibrated {
		return nil, fmt.Errorf("%w: model is not calibrated", ErrModel)
	}
	wc := weightCache{}
	out := make([][]float32, len(batches))
	for i, b := range batches {
		gp, err := gm.graphForward(b, in, quant, 0, nil, wc)
		if err != nil {
			return nil, err
		}
		out[i] = gp.logits
	}
	return out, nil
}

// GraphAccuracy is the fraction of the graphs of batches whose label
// (labels, per graph) the model predicts with the simulation.
func (gm *GraphModel) GraphAccuracy(batches []*GraphBatch, in *Input, labels []int32, quant bool) (float64, error) {
	lgs, err := gm.GraphLogits(batches, in, quant)
	if err != nil {
		return 0, err
	}
	var hit, n int
	for i, b := range batches {
		for r, g := range b.Graphs {
			if learn.Argmax(lgs[i][r*gm.Classes:(r+1)*gm.Classes]) == int(labels[g]) {
				hit++
			}
			n++
		}
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return float64(hit) / float64(n), nil
}

// GraphTrainConfig controls TrainGraphs.
type GraphTrainConfig struct {
	Epochs      int
	LR          float32
	WeightDecay float32
	Dropout     float32 // full precision only
	PerBatch    int     // graphs per training batch
	Halve       int     // halve the learning rate every Halve epochs (Xu et al.: 50); 0: constant
	// Frozen (full precision) runs the last Frozen epochs with the batch
	// norms frozen, as QAT runs: their running statistics folded in, no
	// dropout, so the training pass is the evaluation pass (whose running
	// statistics otherwise lag the weights: bench/accuracy/RESULTS.md).
	Frozen int
	Seed   uint64 // the batches' shuffle and dropout
	// Progress, when set, is called after every epoch with the mean
	// training loss.
	Progress func(epoch int, loss float64)
}

// TrainGraphs trains gm on the graphs train of set (labels set.Labels)
// with Adam and the softmax cross-entropy of the graph logits, a new
// shuffle of the graphs into batches every epoch: in full precision
// (batch norm on the batch's statistics, dropout), or with quant the
// quantization-aware fine-tuning of a calibrated model (the exact
// simulation forward, the straight-through estimator backward, batch norm
// frozen as in QAT). There is no validation set (the folds have none), so
// the last epoch's weights are kept. It returns the last epoch's loss.
func (gm *GraphModel) TrainGraphs(set *subgraph.GraphSet, train []int32, in *Input, quant bool, cfg GraphTrainConfig) (float64, error) {
	if err := gm.Validate(in.Cols); err != nil {
		return 0, err
	}
	switch {
	case gm.Classes != set.NumClasses:
		return 0, fmt.Errorf("%w: model has %d classes, data %d", ErrModel, gm.Classes, set.NumClasses)
	case quant && !gm.Calibrated:
		return 0, fmt.Errorf("%w: QAT needs a calibrated model", ErrModel)
	case cfg.Epochs < 0 || !(cfg.LR > 0) || cfg.PerBatch < 1:
		return 0, fmt.Errorf("%w: epochs %d, learning rate %v, %d graphs per batch", ErrModel, cfg.Epochs, cfg.LR, cfg.PerBatch)
	case len(train) == 0:
		return 0, fmt.Errorf("%w: no training graphs", ErrModel)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x67726170685f636c))
	lins := gm.linears()
	for l := range gm.Heads {
		lins = append(lins, &gm.Heads[l])
	}
	g, params, grads, decay := newSimGrads(lins, gm.Layers)
	gb := make([]float32, len(gm.Bias))
	params, grads, decay = append(params, gm.Bias), append(grads, gb), append(decay, false)
	opt := learn.NewAdam(float64(cfg.LR), float64(cfg.WeightDecay))
	fwdRng := rng
	if quant {
		fwdRng = nil // no dropout; batch norm frozen
	}
	order := slices.Clone(train)
	var loss float64
	for ep := 1; ep <= cfg.Epochs; ep++ {
		if cfg.Halve > 0 && ep > 1 && (ep-1)%cfg.Halve == 0 {
			opt.LR /= 2
		}
		if ep > cfg.Epochs-cfg.Frozen {
			fwdRng = nil
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		batches, err := NewGraphBatches(set, order, cfg.PerBatch, false)
		if err != nil {
			return 0, err
		}
		loss = 0
		for _, b := range batches {
			gp, err := gm.graphForward(b, in, quant, cfg.Dropout, fwdRng, nil)
			if err != nil {
				return 0, err
			}
			idx := make([]int, len(b.Graphs))
			for i := range idx {
				idx[i] = i
			}
			l, dl := crossEntropy(gp.logits, gm.Classes, set.Labels, b.Graphs, idx)
			loss += l * float64(len(b.Graphs))
			for _, gr := range grads {
				clear(gr)
			}
			gm.graphBackward(b, gp, dl, quant, g, gb)
			opt.Step(params, grads, decay)
		}
		loss /= float64(len(order))
		if cfg.Progress != nil {
			cfg.Progress(ep, loss)
		}
	}
	return loss, nil
}

// graphBackward accumulates into g the gradients of the pass gp from dl,
// the gradient at its graph logits, and into gb the readout bias's.
func (gm *GraphModel) graphBackward(b *GraphBatch, gp *graphPass, dl []float64, quant bool, g *simGrads, gb []float32) {
	for k, x := range dl {
		gb[k%gm.Classes] += float32(x)
	}
	d := gm.readoutBackward(b, gp.y, dl, quant)
	gm.headsBackward(gp.st, gp.runs, d, g)
	gm.simBackward(gp.st, d, g)
}

// readoutBackward is the gradient at the node scores y from dl, the
// gradient at the graph logits: each node takes its graph's times Scale,
// through the straight-through mask of the readout's quantizer (quant).
func (gm *GraphModel) readoutBackward(b *GraphBatch, y []float32, dl []float64, quant bool) []float64 {
	c := gm.Classes
	d := make([]float64, len(y))
	var inRange []bool
	if quant {
		inRange = make([]bool, len(y))
		if err := gm.Readout.FakeQuantTo(make([]float32, len(y)), inRange, y); err != nil {
			clear(inRange)
		}
	}
	for r := range b.Graphs {
		for _, v := range b.Pool.Indices[b.Pool.Indptr[r]:b.Pool.Indptr[r+1]] {
			for j := range c {
				k := int(v)*c + j
				if inRange == nil || inRange[k] {
					d[k] = dl[r*c+j] * float64(gm.Scale)
				}
			}
		}
	}
	return d
}

// CalibrateGraphs sets the activation quantizers of gm (post-training
// quantization) from up to maxBatches of batches: the GIN's as Calibrate
// sets a node model's (the node scores standing for the logits), then the
// readout's, the range of least squared error of the node scores with
// every earlier tensor quantized.
func (gm *GraphModel) CalibrateGraphs(batches []*GraphBatch, in *Input, maxBatches int) error {
	if maxBatches > 0 && len(batches) > maxBatches {
		batches = batches[:maxBatches]
	}
	d := &Data{Eval: make([]*Batch, len(batches))}
	for i, b := range batches {
		d.Eval[i] = b.Batch
	}
	if err := gm.Calibrate(d, in, 0); err != nil {
		return err
	}
	var sample []float32
	wc := weightCache{}
	for _, b := range batches {
		_, y, _, err := gm.nodeScores(b, in, true, 0, nil, wc)
		if err != nil {
			return err
		}
		sample = append(sample, y...)
	}
	gm.Readout = bestRange(sample, ReadoutBits, false)
	return nil
}

// GraphPlan is a calibrated GraphModel compiled for a backend: the GIN's
// Plan, then the readout's quantization and per-graph sum on the same
// backend, so that only the graph logits come back.
type GraphPlan struct {
	*Plan
	model *GraphModel
	heads []planHead
	scale bmm.Vector // the readout epilogue's ColScale
	term  bmm.Vector // ColTerm
	bias  bmm.Vector // and ColBias
	rq    bmm.Requant
}

// planHead is a head on the backend: the value it reads, its weight codes
// packed by columns (and one byte each for a sparse first product of the
// features) and its epilogue's static vectors.
type planHead struct {
	v     int
	w     bmm.Bits
	codes bmm.Codes
	epi   bmm.Epi
}

// CompileGraphs compiles gm for be.
func (gm *GraphModel) CompileGraphs(be bmm.Backend) (*GraphPlan, error) {
	if err := gm.checkHeads(); err != nil {
		return nil, err
	}
	p, err := gm.Compile(be)
	if err != nil {
		return nil, err
	}
	gp := &GraphPlan{Plan: p, model: gm, rq: requantOf(gm.Readout)}
	before := be.Traffic()
	if err := gp.compileHeads(); err != nil {
		gp.Close()
		return nil, err
	}
	ep := gm.readoutEpi(nil)
	if gp.scale, err = be.UploadVector(ep.ColScale); err == nil {
		gp.term, err = be.UploadVector(ep.ColTerm)
	}
	if err == nil {
		gp.bias, err = be.UploadVector(ep.ColBias)
	}
	if err != nil {
		gp.Close()
		return nil, fmt.Errorf("layers: uploading the readout's epilogue: %w", err)
	}
	p.Upload.HostToDevice += be.Traffic().Sub(before).HostToDevice
	return gp, nil
}

func (gp *GraphPlan) compileHeads() error {
	gm, be := gp.model, gp.Backend
	for l := range gm.Heads {
		head := &gm.Heads[l]
		gp.heads = append(gp.heads, planHead{v: gm.headInput(gp.ops, l)})
		hp := &gp.heads[len(gp.heads)-1]
		w, nb, err := uploadWeights(be, head, gm.WBits, hp.v == 0, &hp.w, &hp.codes, fmt.Sprintf("head %d", l))
		gp.WeightBytes += nb
		if err != nil {
			return err
		}
		ep := linEpilogue(&planOp{kind: qLin, lin: head}, gp.params[hp.v], w, head.In, nil, &Batch{}, true)
		if err := uploadEpi(be, &hp.epi, ep); err != nil {
			return fmt.Errorf("layers: uploading head %d's epilogue: %w", l, err)
		}
	}
	return nil
}

// Close frees what the plan holds on its backend.
func (gp *GraphPlan) Close() error {
	ops := []bmm.Operand{gp.scale, gp.term, gp.bias}
	for _, h := range gp.heads {
		ops = append(ops, h.w, h.codes, h.epi.ColScale, h.epi.ColTerm, h.epi.ColConst)
	}
	for _, o := range ops {
		if o != nil {
			o.Free()
		}
	}
	gp.scale, gp.term, gp.bias, gp.heads = nil, nil, nil, nil
	return gp.Plan.Close()
}

// Forward runs batch b on the backend with the features in (sparse: the
// first product from their codes, else their bit planes) and returns the
// graph logits, len(b.Graphs) × Classes.
func (gp *GraphPlan) Forward(b *GraphBatch, in *Input, sparse bool) ([]float32, error) {
	return gp.forward(b, in, sparse, func(be bmm.Backend, v bmm.Vector) ([]float32, error) {
		out := make([]float32, len(b.Graphs)*gp.model.Classes)
		return out, be.ReadVector(out, v)
	})
}

// Predict runs every batch on the backend and returns each graph's
// predicted class, indexed by graph (−1 for graphs in no batch, of
// numGraphs).
func (gp *GraphPlan) Predict(batches []*GraphBatch, in *Input, sparse bool, numGraphs int) ([]int32, error) {
	pred := make([]int32, numGraphs)
	fillPred(pred)
	for _, b := range batches {
		_, err := gp.forward(b, in, sparse, func(be bmm.Backend, v bmm.Vector) ([]float32, error) {
			p := make([]int32, len(b.Graphs))
			if err := be.Argmax(p, v, gp.model.Classes); err != nil {
				return nil, err
			}
			for r, g := range b.Graphs {
				if int(g) >= numGraphs {
					return nil, fmt.Errorf("%w: graph %d outside [0, %d)", ErrModel, g, numGraphs)
				}
				pred[g] = p[r]
			}
			return nil, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return pred, nil
}

// forward is one batch's pass, the readout and read (which takes the graph
// logits on the backend).
func (gp *GraphPlan) forward(b *GraphBatch, in *Input, sparse bool, read func(bmm.Backend, bmm.Vector) ([]float32, error)) ([]float32, error) {
	if in.Params != gp.model.Input {
		return nil, fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, in.Params, gp.model.Input)
	}
	var x *bittensor.Tensor
	var sx *Input
	if sparse {
		if err := gp.checkInput(in); err != nil {
			return nil, err
		}
		sx = in
	} else {
		var err error
		if x, err = in.Pack(b.Nodes); err != nil {
			return nil, err
		}
	}
	ps, err := gp.pass(b.Batch, x, sx, nil, nil)
	defer ps.release()
	if err != nil {
		return nil, err
	}
	be, c, n := gp.Backend, gp.model.Classes, b.N()
	var owned []bmm.Operand
	defer func() {
		for _, o := range owned {
			o.Free()
		}
	}()
	scores := ps.logits()
	for l := range gp.heads {
		h := &gp.heads[l]
		ep := h.epi
		out, err := be.NewVector(n * c)
		if err != nil {
			return nil, err
		}
		owned = append(owned, out)
		switch {
		case h.v == 0 && ps.sparseFirst && h.codes != nil:
			ep.RowTerm = ps.featSums
			err = be.AggFloat(out, ps.feat, h.codes, &ep)
		default:
			if ep.RowTerm, err = ps.rowSums(h.v); err == nil {
				err = be.MulFloat(out, ps.vals[h.v].rows, h.w, &ep)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("layers: head %d: %w", l, err)
		}
		sum, err := be.NewVector(n * c)
		if err != nil {
			return nil, err
		}
		owned = append(owned, sum)
		if err := be.AddFloat(sum, scores, out, false); err != nil {
			return nil, fmt.Errorf("layers: head %d: %w", l, err)
		}
		scores = sum
	}
	zeros, err := be.UploadVector(make([]float32, n*c))
	if err != nil {
		return nil, err
	}
	owned = append(owned, zeros)
	codes, err := be.NewCodes(n, c, ReadoutBits)
	if err != nil {
		return nil, err
	}
	owned = append(owned, codes)
	if err := be.AddCodes(codes, scores, zeros, false, gp.rq); err != nil {
		return nil, fmt.Errorf("layers: readout codes: %w", err)
	}
	pool, err := be.UploadGraph(&b.Pool, n)
	if err != nil {
		return nil, fmt.Errorf("layers: uploading the readout graph: %w", err)
	}
	owned = append(owned, pool)
	sizes, err := be.UploadVector(b.Sizes)
	if err != nil {
		return nil, err
	}
	owned = append(owned, sizes)
	out, err := be.NewVector(len(b.Graphs) * c)
	if err != nil {
		return nil, err
	}
	owned = append(owned, out)
	if err := be.AggFloat(out, pool, codes, &bmm.Epi{ColScale: gp.scale, ColTerm: gp.term, RowTerm: sizes, ColBias: gp.bias}); err != nil {
		return nil, fmt.Errorf("layers: readout: %w", err)
	}
	return read(be, out)
}
