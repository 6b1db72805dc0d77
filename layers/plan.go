package layers

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// Plan is a calibrated Model compiled for a bmm.Backend: each linear's
// weights quantized per output channel, packed by columns and uploaded
// once with the static vectors of every op's epilogue, kept on the backend
// until Close. A pass uploads each batch's inputs once, runs the ops of the
// model's DAG on backend operands and brings back only the predictions
// (and the logits when asked for).
//
// A Plan is used by one goroutine at a time, like its backend.
type Plan struct {
	Model   *Model
	Backend bmm.Backend
	// Agg picks how aggregations run: dense bit products on the packed
	// adjacency, or sums over its edge list, with the same results bit for
	// bit.
	Agg AggMode
	// Merge picks whether Run runs batches whose aggregations all go over
	// edge lists as one block-diagonal batch (every op once over all rows,
	// the same values row by row) or batch by batch.
	Merge MergeMode
	// Resident keeps each batch's inputs on the backend from one Run to
	// the next, until Close (a serving process's passes then move only the
	// predictions); otherwise every pass uploads them and frees them after.
	Resident bool
	// Replay, on a resident plan whose backend records (bmm.Recorder),
	// records the first pass that finds every batch's inputs kept and
	// replays it as one launch from then on (a CUDA graph on a GPU).
	Replay bool
	// WeightBytes is the packed size of every weight tensor.
	WeightBytes int
	// Upload is what Compile moved to the backend, once: the weights and
	// the static epilogue vectors.
	Upload bmm.Traffic

	ops     []planOp
	weights []*simWeights // per op; nil but for linears
	w       []bmm.Bits    // per op: weight codes, K×N packed by columns
	// wCodes holds, for the linears of the features (value 0), their
	// weight codes one byte each (weights of at most 8 bits, else nil): the
	// sparse first product is then the sum of W's code rows at each node's
	// features, times their codes (an aggregation over the feature lists).
	wCodes []bmm.Codes
	epi    []bmm.Epi // per op: the static vectors; the pass adds the batch's
	run    []bmm.Epi // per op: the epilogue a pass hands the backend, reused
	widths []int     // per value (0: the input, i+1: op i's output)
	params []Params  // per value: its quantizer
	pool   opPool
	// graphs keeps the graphs whose upload moved no bytes (a backend on
	// host memory): checking a graph again every pass costs, on one core,
	// about what aggregating over it costs on all of them.
	graphs map[graphKey]bmm.GraphOperand
	// shared is a lane's view of its plan's graphs (Prepare's), which the
	// plan does not change while lanes run.
	shared map[graphKey]bmm.GraphOperand
	pred   []int32 // one batch's predictions, reused
	// kept holds the batches' uploads of a resident plan.
	kept map[keptKey]*batchIn
	// merged is the block-diagonal batch of the last Data run merged.
	merged struct {
		d     *Data
		first *Batch
		n     int
		b     *Batch
	}
	// nodeIdx holds each batch's nodes as a backend index, where its
	// argmax writes (ArgmaxTo); nil for a batch the backend refused (a
	// node twice in a merged batch).
	nodeIdx   map[*Batch]bmm.Index
	closed    bool
	par       *planLanes // Run's batch-parallel lanes (run.go)
	replay    *replayed  // the recorded pass (replay.go)
	replayOff bool       // the backend could not record a pass
	// onLane: the plan is one of Run's lanes, which run side by side on
	// the cores, so its own loops stay on its goroutine.
	onLane bool
}

// keptKey names a batch's uploads for the features of in, sparse or
// packed.
type keptKey struct {
	b      *Batch
	in     *Input
	sparse bool
}

// MergeMode is how a plan groups batches (see Plan.Merge).
type MergeMode int

const (
	// MergeAuto asks the backend's cost model (bmm.Backend.PreferMerged).
	MergeAuto MergeMode = iota
	// MergeOn merges whenever every aggregation goes over edge lists.
	MergeOn
	// MergeOff runs batch by batch.
	MergeOff
)

// String is the mode's flag value.
func (m MergeMode) String() string {
	return [...]string{"auto", "on", "off"}[m]
}

// ParseMergeMode reads a mode's flag value.
func ParseMergeMode(s string) (MergeMode, error) {
	for m := MergeAuto; m <= MergeOff; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: merge mode %q (want auto, on or off)", ErrModel, s)
}

// AggMode is how a plan runs its aggregations.
type AggMode int

const (
	// AggAuto asks the backend's cost model (bmm.Backend.PreferEdges)
	// batch by batch.
	AggAuto AggMode = iota
	// AggDense always multiplies by the packed 1-bit adjacency (zero
	// chunks skipped): the tensor-core formulation.
	AggDense
	// AggSparse always sums codes over the edge list (inputs of more than
	// 8 bits still go dense).
	AggSparse
)

// String is the mode's flag value.
func (a AggMode) String() string {
	return [...]string{"auto", "dense", "sparse"}[a]
}

// ParseAggMode reads a mode's flag value.
func ParseAggMode(s string) (AggMode, error) {
	for m := AggAuto; m <= AggSparse; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: aggregation mode %q (want auto, dense or sparse)", ErrModel, s)
}

// Compile quantizes and packs m's weights and uploads them to be with the
// static part of every epilogue. m must be calibrated; the plan holds its
// operands until Close (be stays the caller's to close).
func (m *Model) Compile(be bmm.Backend) (*Plan, error) {
	if !m.Calibrated {
		return nil, fmt.Errorf("%w: model is not calibrated (run Calibrate or QAT first)", ErrModel)
	}
	if be == nil {
		return nil, fmt.Errorf("%w: no backend to compile for", ErrModel)
	}
	p := &Plan{Model: m, Backend: be, ops: m.ops()}
	if err := p.compile(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Plan) compile() error {
	m, be := p.Model, p.Backend
	before := be.Traffic()
	n := len(p.ops)
	if n == 0 {
		return fmt.Errorf("%w: model has no ops", ErrModel)
	}
	p.weights = make([]*simWeights, n)
	p.w = make([]bmm.Bits, n)
	p.wCodes = make([]bmm.Codes, n)
	p.epi = make([]bmm.Epi, n)
	p.run = make([]bmm.Epi, n)
	p.widths = make([]int, n+1)
	p.params = make([]Params, n+1)
	p.widths[0], p.params[0] = m.Layers[0].Lin1.In, m.Input
	empty := &Batch{} // the static vectors do not depend on the batch
	for i := range p.ops {
		op := &p.ops[i]
		if len(op.in) == 0 {
			return fmt.Errorf("%w: op %d reads no value", ErrModel, i)
		}
		if err := p.checkOp(i); err != nil {
			return err
		}
		in := op.in[0]
		var ep *bmm.Epilogue
		switch op.kind {
		case qLin:
			w, nb, err := uploadWeights(be, op.lin, m.linBits(op.lin), in == 0, &p.w[i], &p.wCodes[i], fmt.Sprintf("op %d", i))
			p.weights[i] = w
			p.WeightBytes += nb
			if err != nil {
				return err
			}
			ep = linEpilogue(op, p.params[in], w, op.lin.In, nil, empty, true)
			p.widths[i+1] = op.lin.Out
		case qAgg:
			ep = aggEpilogue(op, p.params[in], p.widths[in], empty, true)
			p.widths[i+1] = p.widths[in]
		case qAdd:
			p.widths[i+1] = p.widths[in]
			ep = &bmm.Epilogue{}
		default:
			return fmt.Errorf("%w: op %d has a kind (%d) the plan cannot run", ErrModel, i, op.kind)
		}
		if op.out != nil {
			p.params[i+1] = *op.out
		}
		if err := uploadEpi(be, &p.epi[i], ep); err != nil {
			return fmt.Errorf("layers: uploading op %d's epilogue: %w", i, err)
		}
	}
	p.Upload = be.Traffic().Sub(before)
	return nil
}

// uploadWeights puts l's weight codes at wbits on be: packed by columns
// into *bits and, for a product from the features' codes (features) at 8
// bits or fewer, one byte each into *codes; what names the linear in
// errors. It returns the prepared weights and the packed size in bytes
// (counted once *bits is set, as the caller frees it).
func uploadWeights(be bmm.Backend, l *Linear, wbits int, features bool, bits *bmm.Bits, codes *bmm.Codes, what string) (*simWeights, int, error) {
	w := prepareWeights(l, wbits, true)
	ints := make([]int32, len(w.codes))
	for j, c := range w.codes {
		ints[j] = int32(uint32(c)) // 32-bit codes wrap; Pack stores the bit pattern
	}
	t, err := bittensor.Pack(ints, l.In, l.Out, wbits, bittensor.ByCols, bittensor.DefaultPadding)
	if err != nil {
		return w, 0, err
	}
	if *bits, err = be.UploadBits(t); err != nil {
		return w, 0, fmt.Errorf("layers: uploading %s's weights: %w", what, err)
	}
	nb := 8 * len(t.Words())
	if features && wbits <= 8 {
		b := make([]uint8, len(ints))
		for j, c := range ints {
			b[j] = uint8(c)
		}
		if *codes, err = be.UploadCodes(b, l.In, l.Out, wbits); err != nil {
			return w, nb, fmt.Errorf("layers: uploading %s's weight codes: %w", what, err)
		}
	}
	return w, nb, nil
}

// uploadEpi puts ep's per-column vectors on be into e, with its ReLU.
func uploadEpi(be bmm.Backend, e *bmm.Epi, ep *bmm.Epilogue) error {
	e.ReLU = ep.ReLU
	for _, f := range []struct {
		dst *bmm.Vector
		v   []float32
	}{{&e.ColScale, ep.ColScale}, {&e.ColTerm, ep.ColTerm}, {&e.ColConst, ep.ColConst}, {&e.ColBias, ep.ColBias}} {
		if f.v == nil {
			continue
		}
		var err error
		if *f.dst, err = be.UploadVector(f.v); err != nil {
			return err
		}
	}
	return nil
}

// checkOp checks op i's place in the DAG: it reads values made before it,
// a linear or an aggregation reads codes (the features or a quantized
// output), a sum reads two float values of one width, and only the last
// op's output, the logits, is read by no op.
func (p *Plan) checkOp(i int) error {
	op, n := &p.ops[i], len(p.ops)
	codes := func(v int) bool { return v == 0 || p.ops[v-1].out != nil }
	for _, v := range op.in {
		if v < 0 || v > i {
			return fmt.Errorf("%w: op %d reads value %d, not made before it", ErrModel, i, v)
		}
	}
	switch {
	case i == n-1 && op.out != nil:
		return fmt.Errorf("%w: the last op (%d) quantizes its output instead of giving the logits", ErrModel, i)
	case op.kind == qAdd && (len(op.in) != 2 || codes(op.in[0]) || codes(op.in[1])):
		return fmt.Errorf("%w: op %d adds values %v, want two float ones", ErrModel, i, op.in)
	case op.kind == qAdd && p.widths[op.in[0]] != p.widths[op.in[1]]:
		return fmt.Errorf("%w: op %d adds values of widths %d and %d", ErrModel, i, p.widths[op.in[0]], p.widths[op.in[1]])
	case op.kind != qAdd && (len(op.in) != 1 || !codes(op.in[0])):
		return fmt.Errorf("%w: op %d reads values %v, want one of codes", ErrModel, i, op.in)
	case (op.mean || op.selfMean) && (op.rowScale || op.featScale):
		return fmt.Errorf("%w: op %d takes a mean and another row scale", ErrModel, i)
	}
	return nil
}

// Close frees every operand the plan holds on its backend; a second Close
// does nothing. The backend itself stays open.
func (p *Plan) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	free := func(o bmm.Operand) {
		if o != nil {
			o.Free()
		}
	}
	for _, w := range p.w {
		if w != nil {
			w.Free()
		}
	}
	for _, c := range p.wCodes {
		if c != nil {
			c.Free()
		}
	}
	for i := range p.epi {
		e := &p.epi[i]
		for _, v := range []bmm.Vector{e.ColScale, e.ColTerm, e.ColConst, e.ColBias} {
			if v != nil {
				free(v)
			}
		}
	}
	p.dropReplay()
	p.pool.close()
	for _, g := range p.graphs {
		g.Free()
	}
	p.graphs = nil
	for _, in := range p.kept {
		in.free()
	}
	p.kept = nil
	for _, ix := range p.nodeIdx {
		free(ix)
	}
	p.nodeIdx = nil
	p.closeLanes()
	return nil
}

// graphKey names a batch's graph: its edge list (in nil; without the
// self-loops when nbr) or its feature lists in in.
type graphKey struct {
	b   *Batch
	in  *Input
	nbr bool
}

// Trace receives, for tests and the fusion benchmark, each op's output
// before the next op consumes it: the codes (nil for the logits), read back
// from the backend.
type Trace func(op int, codes *bittensor.Tensor)

// Stats counts what a forward pass moved between layers.
type Stats struct {
	// InterBytes is the size of every inter-layer tensor as the backend
	// stores it: packed bit planes, or a byte per code before an edge-list
	// aggregation.
	InterBytes int
	// UnfusedBytes is what the same pass would store without fusion: an
	// int32 product and a float32 epilogue output per op.
	UnfusedBytes int
}

// Forward runs the plan on batch b whose features x are packed by rows
// (Input.Pack of b.Nodes) and returns the float32 logits, b.N()×Classes.
// Every product is a bit product; between ops only codes exist.
func (p *Plan) Forward(b *Batch, x *bittensor.Tensor, trace Trace) ([]float32, Stats, error) {
	return p.forwardLogits(b, x, nil, trace)
}

// ForwardSparse is Forward with the first product (features × weights)
// computed from the sparse feature codes of in instead of their bit planes
// where codes and weights fit 8 bits: the same integer product, so the same
// codes and logits, at a cost in stored codes rather than in K·bits².
// Wider codes take the dense first product.
func (p *Plan) ForwardSparse(b *Batch, in *Input, trace Trace) ([]float32, Stats, error) {
	if err := p.checkInput(in); err != nil {
		return nil, Stats{}, err
	}
	return p.forwardLogits(b, nil, in, trace)
}

func (p *Plan) checkInput(in *Input) error {
	if in.Params != p.Model.Input || in.Cols != p.Model.Layers[0].Lin1.In {
		return fmt.Errorf("%w: features quantized with %+v (%d columns), the model expects %+v (%d)",
			ErrModel, in.Params, in.Cols, p.Model.Input, p.Model.Layers[0].Lin1.In)
	}
	return nil
}

// forwardLogits is one batch's pass with its logits read back.
func (p *Plan) forwardLogits(b *Batch, x *bittensor.Tensor, sx *Input, trace Trace) ([]float32, Stats, error) {
	ps, err := p.pass(b, x, sx, trace, nil)
	defer ps.release()
	if err != nil {
		return nil, ps.st, err
	}
	logits := make([]float32, b.N()*p.Model.Classes)
	if err := p.Backend.ReadVector(logits, ps.logits()); err != nil {
		return nil, ps.st, err
	}
	return logits, ps.st, nil
}

// Result is the outcome of running a plan over every batch of a task.
type Result struct {
	Pred []int32 // predicted class per node (−1: in no batch)
	// Pack is packing each batch's feature codes: into bit planes, or
	// (sparse) into the feature lists and code sums of its first product;
	// either is made on a batch's first run and kept.
	Pack    time.Duration
	Compute time.Duration // uploads, ops and the predictions' download
	Stats   Stats         // summed over batches
	Batches int
	Nodes   int
	// EdgeListBatches counts the batches whose aggregations summed codes
	// over the edge list instead of the packed adjacency (see Plan.Agg).
	EdgeListBatches int
	// Merged says the batches ran as one block-diagonal batch (Plan.Merge).
	Merged bool
	// Replayed says the pass ran from a recording (Plan.Replay).
	Replayed bool
	// Traffic is what the pass moved between host and backend and the ops
	// it ran (the weights' upload is Plan.Upload).
	Traffic bmm.Traffic
}

// Run runs p over d's Eval batches with features in (quantized with the
// plan's input params). With sparse, the first product reads the sparse
// codes (ForwardSparse) instead of packing bit planes. progress, when set,
// is called after each batch (once for a merged pass), from one goroutine
// at a time.
//
// On a backend that forks (bmm.Forker) with batches enough for the cores,
// unmerged batches run side by side, whole, one per core (run.go); Pack
// and Compute then split the wall time between them. The predictions are
// the same bit for bit either way.
func (p *Plan) Run(d *Data, in *Input, sparse bool, progress func(done, total int)) (*Result, error) {
	if in.Params != p.Model.Input {
		return nil, fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, in.Params, p.Model.Input)
	}
	if sparse {
		if err := p.checkInput(in); err != nil {
			return nil, err
		}
	}
	r := &Result{Pred: make([]int32, d.Graph.N()), Batches: len(d.Eval)}
	before := p.Backend.Traffic()
	batches := d.Eval
	if p.merges(d) {
		batches, r.Merged = []*Batch{p.mergedBatch(d)}, true
	}
	if len(batches) > 0 && !p.closed {
		key := replayKey{d: d, first: d.Eval[0], n: len(d.Eval), in: in, sparse: sparse, merged: r.Merged}
		t0 := time.Now()
		ok, err := p.replayRun(r, batches, key, in, sparse)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Compute = time.Since(t0)
			if r.Merged {
				r.EdgeListBatches = len(d.Eval)
			}
			r.Traffic = p.Backend.Traffic().Sub(before)
			return r, nil
		}
	}
	if l := p.laneCount(len(batches)); l > 1 && !p.closed && p.disjointOK(d) {
		fillPred(r.Pred)
		if err := p.runLanes(l, r, d, in, sparse, progress); err != nil {
			return nil, err
		}
		r.Traffic = p.Backend.Traffic().Sub(before)
		return r, nil
	}
	// The batches' predictions go to one array on the backend, read once
	// at the end: no wait between batches, so the host packs and uploads
	// a batch while the device still runs the one before.
	idx, dst, err := p.scatterTo(batches, d.Graph.N())
	if err != nil {
		return nil, err
	}
	if dst == nil {
		fillPred(r.Pred)
	} else {
		defer dst.Free()
	}
	for i, b := range batches {
		var at bmm.Index
		if dst != nil {
			at = idx[i]
		}
		pack, compute, err := p.runBatchTo(r, b, in, sparse, dst, at)
		if err != nil {
			return nil, err
		}
		r.Pack += pack
		r.Compute += compute
		if progress != nil {
			progress(i+1, len(batches))
		}
	}
	if dst != nil {
		t0 := time.Now()
		if err := p.Backend.ReadInts(r.Pred, dst); err != nil {
			return nil, err
		}
		r.Compute += time.Since(t0)
	}
	if r.Merged {
		r.EdgeListBatches = len(d.Eval)
	}
	r.Traffic = p.Backend.Traffic().Sub(before)
	return r, nil
}

// merges reports whether Run runs d's batches merged: more than one,
// each with every aggregation over edge lists, and the mode or the
// backend's cost model says so.
func (p *Plan) merges(d *Data) bool {
	if p.Merge == MergeOff || len(d.Eval) < 2 {
		return false
	}
	if p.Agg == AggDense {
		return false
	}
	for _, op := range p.ops {
		if op.kind == qAgg && p.params[op.in[0]].Bits > 8 {
			return false // codes past a byte aggregate on the packed adjacency
		}
	}
	if p.Merge == MergeOn {
		return true
	}
	all := bmm.AggCost{Cols: p.widths[1], Bits: p.Model.ABits, Batches: len(d.Eval), Uploaded: !p.Resident}
	each := true // every batch takes the edge list by itself
	for _, b := range d.Eval {
		c := p.aggCost(b)
		all.Rows, all.Edges, all.DenseTiles, all.DenseBytes = all.Rows+c.Rows, all.Edges+c.Edges, all.DenseTiles+c.DenseTiles, all.DenseBytes+c.DenseBytes
		each = each && p.edges(b)
	}
	// Batches that would aggregate densely one by one merge where one
	// edge-list op over all of them is cheaper.
	return (each || p.Backend.PreferEdges(all)) && p.Backend.PreferMerged(len(d.Eval), all.Rows)
}

// mergedBatch returns d's batches merged (mergeBatches), made once per
// Data and Eval.
func (p *Plan) mergedBatch(d *Data) *Batch {
	m := &p.merged
	if m.d != d || m.first != d.Eval[0] || m.n != len(d.Eval) {
		m.d, m.first, m.n, m.b = d, d.Eval[0], len(d.Eval), mergeBatches(d.Eval, p.cores())
	}
	return m.b
}

// runBatch packs batch b's features as the pass reads them (the feature
// lists, or the bit planes unless a resident plan holds them) and runs it
// into r; it returns the time of each half.
func (p *Plan) runBatch(r *Result, b *Batch, in *Input, sparse bool) (pack, compute time.Duration, err error) {
	return p.runBatchTo(r, b, in, sparse, nil, nil)
}

// runBatchTo is runBatch whose predictions go to dst at the index at on
// the backend (ArgmaxTo), or with dst nil to r.Pred.
func (p *Plan) runBatchTo(r *Result, b *Batch, in *Input, sparse bool, dst bmm.Ints, at bmm.Index) (pack, compute time.Duration, err error) {
	t0 := time.Now()
	var x *bittensor.Tensor
	var sx *Input
	key := keptKey{b, in, sparse}
	switch {
	case sparse:
		sx = in
		p.packLists(b, in)
	case p.kept[key] != nil: // resident: the packed features are there
	default:
		if x, err = b.packed(in); err != nil {
			return 0, 0, err
		}
	}
	t1 := time.Now()
	err = p.predictTo(r, b, x, sx, &key, dst, at)
	return t1.Sub(t0), time.Since(t1), err
}

// predict runs one batch of Run and scatters its predictions into r.
func (p *Plan) predict(r *Result, b *Batch, x *bittensor.Tensor, sx *Input, key *keptKey) error {
	return p.predictTo(r, b, x, sx, key, nil, nil)
}

// predictTo is predict whose predictions go, with dst, to dst at the
// index at on the backend (ArgmaxTo).
func (p *Plan) predictTo(r *Result, b *Batch, x *bittensor.Tensor, sx *Input, key *keptKey, dst bmm.Ints, at bmm.Index) error {
	ps, err := p.pass(b, x, sx, nil, key)
	defer ps.release()
	if err != nil {
		return err
	}
	n := b.N()
	if dst != nil {
		if err := p.Backend.ArgmaxTo(dst, at, ps.logits(), p.Model.Classes); err != nil {
			return err
		}
	} else {
		if cap(p.pred) < n {
			p.pred = make([]int32, n)
		}
		pred := p.pred[:n]
		if err := p.Backend.Argmax(pred, ps.logits(), p.Model.Classes); err != nil {
			return err
		}
		scatterPred(r.Pred, b.Nodes, pred)
	}
	r.Stats.InterBytes += ps.st.InterBytes
	r.Stats.UnfusedBytes += ps.st.UnfusedBytes
	r.Nodes += n
	if ps.edges {
		r.EdgeListBatches++
	}
	return nil
}

// nodeIndex returns b's nodes as an index below n on the backend,
// uploaded on b's first run and kept until Close; nil where the backend
// refuses it (a node twice, in a merged batch), asked once.
func (p *Plan) nodeIndex(b *Batch, n int) (bmm.Index, error) {
	if ix, ok := p.nodeIdx[b]; ok && (ix == nil || ix.Bound() == n) {
		return ix, nil
	}
	ix, err := p.Backend.UploadIndex(b.Nodes, n)
	if errors.Is(err, bmm.ErrIndex) {
		ix, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if old := p.nodeIdx[b]; old != nil {
		old.Free()
	}
	if p.nodeIdx == nil {
		p.nodeIdx = map[*Batch]bmm.Index{}
	}
	p.nodeIdx[b] = ix
	return ix, nil
}

// scatterTo returns each batch's node index and an array of n
// predictions set to −1 on the backend for ArgmaxTo; a nil array where
// some batch has no index (its predictions then go through the host).
func (p *Plan) scatterTo(batches []*Batch, n int) ([]bmm.Index, bmm.Ints, error) {
	if len(batches) == 0 || p.closed {
		return nil, nil, nil
	}
	idx, err := p.nodeIndexes(batches, n)
	if idx == nil {
		return nil, nil, err
	}
	dst, err := p.Backend.NewInts(n, -1)
	if err != nil {
		return nil, nil, err
	}
	return idx, dst, nil
}

// edges reports whether b's aggregations run from its edge list.
func (p *Plan) edges(b *Batch) bool {
	if b.keptAdj {
		return false
	}
	if b.edgesOnly {
		return true
	}
	switch p.Agg {
	case AggDense:
		return false
	case AggSparse:
		return true
	}
	return p.Backend.PreferEdges(p.aggCost(b))
}

// aggCost describes b's aggregation for PreferEdges.
func (p *Plan) aggCost(b *Batch) bmm.AggCost {
	n := b.N()
	return bmm.AggCost{Rows: n, Cols: p.widths[1], Edges: len(b.Indices), DenseTiles: b.tiles, Bits: p.Model.ABits,
		Uploaded: !p.Resident, DenseBytes: bittensor.Bytes(n, n, 1, bittensor.ByRows, bittensor.DefaultPadding)}
}

// byteFirst reports whether the linears of the features can run as code
// aggregations over in's feature lists: weights and feature codes of at
// most 8 bits (the linears of value 0 share their width and bits, so
// either all have their weight codes or none).
func (p *Plan) byteFirst(in *Input) bool {
	for i, c := range p.wCodes {
		if p.ops[i].kind == qLin && p.ops[i].in[0] == 0 {
			return c != nil && in.Params.Bits <= 8
		}
	}
	return false
}

// SparseCheaper reports whether ForwardSparse's first product is expected
// to cost less on the plan's backend than packing the features and
// multiplying their bit planes: the backend's cost model with the feature
// lists as the edge list and the padded feature matrix as the dense
// operand, whose a·w plane products stand for the aggregated width.
func (p *Plan) SparseCheaper(in *Input) bool {
	return p.SparseCheaperSize(in.Rows, in.Cols, len(in.Codes), in.Params.Bits, false)
}

// requantOf is p's quantizer as a fused-epilogue re-quantization.
func requantOf(p Params) bmm.Requant {
	inv, off := p.Requant()
	return bmm.Requant{Scale: inv, Offset: off}
}

// value is one value of the DAG (0: the batch's features, i+1: op i's
// output) in the forms its readers take, on the backend.
type value struct {
	rows  bmm.Bits   // packed by rows: a product's left operand
	cols  bmm.Bits   // packed by columns: a dense aggregation's right operand
	codes bmm.Codes  // a byte per code: an edge-list aggregation's operand
	sums  bmm.Vector // the row sums of its codes: a product's RowTerm
	float bmm.Vector // an unquantized output: the logits, or a branch a sum reads
}

// pass is one batch on the backend: its uploads (made on first use, or
// kept by a resident plan), the values of the DAG, and the outputs to give
// back when it ends.
type pass struct {
	p     *Plan
	b     *Batch
	edges bool // aggregations over the edge list
	*batchIn
	key    *keptKey // where a resident plan keeps the uploads (nil: not kept)
	vals   []value
	st     Stats
	pooled []pooled // outputs, back to the pool at the end
}

// batchIn is a batch's uploads: per adjacency (with self-loops, and
// without them for SAGE's neighbours) its packed tensor, edge list and row
// sums; the row scales; the feature lists and their code sums; the forms
// of the features (value 0).
type batchIn struct {
	owned                         []bmm.Operand // freed with the uploads
	adj                           [2]bmm.Bits
	graph                         [2]bmm.GraphOperand
	deg                           [2]bmm.Vector
	feat                          bmm.GraphOperand
	dinv, fs, dfs, mean, selfMean bmm.Vector
	featSums                      bmm.Vector
	x                             value
	// sparseFirst: the linears of the features sum W's code rows over the
	// feature lists (feat).
	sparseFirst bool
	made        bool // the features are up (a kept batchIn is reused as it is)
}

// free frees the uploads.
func (in *batchIn) free() {
	for _, o := range in.owned {
		o.Free()
	}
	in.owned = nil
}

// pass uploads batch b's inputs and runs every op of the DAG on the
// backend. The caller releases the pass once it has read the logits.
func (p *Plan) pass(b *Batch, x *bittensor.Tensor, sx *Input, trace Trace, key *keptKey) (*pass, error) {
	m := p.Model
	ps := &pass{p: p, b: b, vals: make([]value, len(p.ops)+1), batchIn: &batchIn{}}
	if p.closed {
		return ps, fmt.Errorf("%w: plan is closed", ErrModel)
	}
	if p.Resident && key != nil {
		ps.key = key
		if in := p.kept[*key]; in != nil {
			ps.batchIn = in
		}
	}
	ps.edges = p.edges(b)
	if !ps.edges && !b.hasAdj() {
		return ps, fmt.Errorf("%w: batch has no packed adjacency (built without bits)", ErrModel)
	}
	if m.NormRows && b.FeatScale == nil {
		return ps, fmt.Errorf("%w: the model normalizes feature rows but the batch has no FeatScale", ErrModel)
	}
	if ps.made {
		ps.vals[0] = ps.x
	} else if err := ps.features(x, sx); err != nil {
		return ps, err
	}
	for i := range p.ops {
		if err := ps.op(i, trace); err != nil {
			return ps, fmt.Errorf("layers: op %d: %w", i, err)
		}
	}
	return ps, nil
}

// features uploads the features' forms its readers take: the feature
// lists of a sparse first product, the packed rows, columns or codes.
func (ps *pass) features(x *bittensor.Tensor, sx *Input) error {
	p, b, m := ps.p, ps.b, ps.p.Model
	if sx != nil {
		// Codes or weights past 8 bits, or feature lists whose sums could
		// pass int32, take the dense first product.
		var err error
		if g := p.sparseLists(b, sx); g != nil {
			ps.sparseFirst = true
			if ps.feat, err = ps.uploadGraph(g, sx.Cols, graphKey{b: b, in: sx}); err != nil {
				return err
			}
			if ps.featSums, err = ps.upload(b.featSums(sx)); err != nil {
				return err
			}
		}
	}
	// The packed features, where a product reads them (always but for
	// sparse first products that are their only readers).
	if f := ps.need(0); f.rows {
		if x == nil && sx != nil {
			var err error
			if x, err = b.packed(sx); err != nil {
				return err
			}
		}
		if x == nil {
			return fmt.Errorf("%w: no features", ErrModel)
		}
		if x.Rows() != b.N() || x.Cols() != m.Layers[0].Lin1.In || x.Packing() != bittensor.ByRows {
			return fmt.Errorf("%w: features are %d×%d (%v), batch has %d nodes and the model takes %d",
				ErrModel, x.Rows(), x.Cols(), x.Packing(), b.N(), m.Layers[0].Lin1.In)
		}
		if x.Bits() != m.Input.Bits {
			return fmt.Errorf("%w: features are %d-bit, the model expects %d", ErrModel, x.Bits(), m.Input.Bits)
		}
		xb, err := p.Backend.UploadBits(x)
		if err != nil {
			return fmt.Errorf("layers: uploading the features: %w", err)
		}
		ps.owned = append(ps.owned, xb)
		ps.vals[0].rows = xb
	}
	if err := ps.inputForms(x, sx); err != nil {
		return err
	}
	ps.x, ps.made = ps.vals[0], true
	return nil
}

// sparseLists is the graph of b's feature lists in sx when the first
// product sums weight rows over them, nil when it takes the dense one.
func (p *Plan) sparseLists(b *Batch, sx *Input) *bmm.Graph {
	g, bound := b.featRows(sx, p.byteFirst(sx), p.cores())
	if g == nil || float64(bound)*(math.Exp2(float64(p.Model.linBits(&p.Model.Layers[0].Lin1)))-1) > math.MaxInt32 {
		return nil
	}
	return g
}

// logits is the last op's output.
func (ps *pass) logits() bmm.Vector { return ps.vals[len(ps.vals)-1].float }

// release gives the batch's operands back: its uploads freed, its outputs
// to the plan's pool for the next batch. Every op before has finished (the
// caller read the logits or the predictions), so reusing them is safe.
func (ps *pass) release() {
	switch p := ps.p; {
	case ps.key != nil && ps.made && !p.closed:
		if p.kept == nil {
			p.kept = map[keptKey]*batchIn{}
		}
		p.kept[*ps.key] = ps.batchIn
	case ps.key == nil || p.kept[*ps.key] != ps.batchIn:
		ps.free()
	}
	for _, o := range ps.pooled {
		ps.p.pool.put(o)
	}
	ps.pooled = nil
}

func (ps *pass) upload(v []float32) (bmm.Vector, error) {
	o, err := ps.p.Backend.UploadVector(v)
	if err != nil {
		return nil, fmt.Errorf("layers: uploading a batch vector: %w", err)
	}
	ps.owned = append(ps.owned, o)
	return o, nil
}

// uploadOnce uploads v() into *dst unless it is there already (a kept
// batch's shell has no host arrays to make it from).
func (ps *pass) uploadOnce(dst *bmm.Vector, v func() []float32) (bmm.Vector, error) {
	if *dst == nil {
		var err error
		if *dst, err = ps.upload(v()); err != nil {
			return nil, err
		}
	}
	return *dst, nil
}

// uploadGraph uploads g (src source rows), the graph key names, or finds
// it kept by the plan (see Plan.graphs).
func (ps *pass) uploadGraph(g *bmm.Graph, src int, key graphKey) (bmm.GraphOperand, error) {
	p := ps.p
	if o := p.graphs[key]; o != nil {
		return o, nil
	}
	if o := p.shared[key]; o != nil { // a lane: the graphs its plan prepared
		return o, nil
	}
	before := p.Backend.Traffic()
	o, err := p.Backend.UploadGraph(g, src)
	if err != nil {
		return nil, fmt.Errorf("layers: uploading a graph: %w", err)
	}
	if t := p.Backend.Traffic().Sub(before); t.HostToDevice == 0 && t.DeviceToHost == 0 {
		if p.graphs == nil {
			p.graphs = map[graphKey]bmm.GraphOperand{}
		}
		p.graphs[key] = o
	} else {
		ps.owned = append(ps.owned, o)
	}
	return o, nil
}

// forms are the forms of a value its readers take in a pass.
type forms struct{ rows, cols, codes, float bool }

func (f forms) any() bool { return f.rows || f.cols || f.codes || f.float }

// need returns the forms value v's readers take in this pass.
func (ps *pass) need(v int) forms {
	var f forms
	for i := range ps.p.ops {
		op := &ps.p.ops[i]
		for _, u := range op.in {
			if u != v {
				continue
			}
			switch op.kind {
			case qLin:
				f.rows = f.rows || !ps.sparseOp(i)
			case qAgg:
				if ps.aggEdges(v) {
					f.codes = true
				} else {
					f.cols = true
				}
			case qAdd:
				f.float = true
			}
		}
	}
	return f
}

// sparseOp reports whether op i is a linear of the features that sums its
// weight code rows over the feature lists.
func (ps *pass) sparseOp(i int) bool {
	op := &ps.p.ops[i]
	return ps.sparseFirst && op.kind == qLin && op.in[0] == 0 && ps.p.wCodes[i] != nil
}

// aggEdges reports whether an aggregation of value v sums its byte codes
// over the edge list (codes of at most 8 bits).
func (ps *pass) aggEdges(v int) bool { return ps.edges && ps.p.params[v].Bits <= 8 }

// inputForms makes the forms of value 0 other than the packed rows that
// its readers take (an aggregation of the features themselves).
func (ps *pass) inputForms(x *bittensor.Tensor, sx *Input) error {
	f := ps.need(0)
	if !f.cols && !f.codes {
		return nil
	}
	var ints []int32
	n, k := ps.b.N(), ps.p.widths[0]
	switch {
	case x != nil:
		ints = x.Ints()
	case sx == nil:
		return fmt.Errorf("%w: no features", ErrModel)
	default:
		ints = make([]int32, n*k)
		for r, v := range ps.b.Nodes {
			for q := sx.Indptr[v]; q < sx.Indptr[v+1]; q++ {
				ints[r*k+int(sx.Indices[q])] = int32(sx.Codes[q])
			}
		}
	}
	be, bits := ps.p.Backend, ps.p.Model.Input.Bits
	if f.cols {
		t, err := bittensor.Pack(ints, n, k, bits, bittensor.ByCols, bittensor.DefaultPadding)
		if err != nil {
			return err
		}
		if ps.vals[0].cols, err = be.UploadBits(t); err != nil {
			return fmt.Errorf("layers: uploading the features: %w", err)
		}
		ps.owned = append(ps.owned, ps.vals[0].cols)
	}
	if f.codes {
		b := make([]uint8, len(ints))
		for i, c := range ints {
			b[i] = uint8(c)
		}
		c, err := be.UploadCodes(b, n, k, bits)
		if err != nil {
			return fmt.Errorf("layers: uploading the features: %w", err)
		}
		ps.vals[0].codes = c
		ps.owned = append(ps.owned, c)
	}
	return nil
}

// rowScale is op's epilogue RowScale on the backend (see planOp.scale).
func (ps *pass) rowScale(op *planOp) (bmm.Vector, error) {
	b := ps.b
	switch {
	case op.mean:
		return ps.uploadOnce(&ps.mean, func() []float32 { return b.neighbours().Inv })
	case op.selfMean:
		return ps.uploadOnce(&ps.selfMean, b.selfMean)
	case op.rowScale && op.featScale:
		return ps.uploadOnce(&ps.dfs, b.scaleBoth)
	case op.rowScale:
		return ps.uploadOnce(&ps.dinv, func() []float32 { return b.DInv })
	case op.featScale:
		return ps.uploadOnce(&ps.fs, func() []float32 { return b.FeatScale })
	}
	return nil, nil
}

// rowSums returns the row sums of value v's codes (packed by rows).
func (ps *pass) rowSums(v int) (bmm.Vector, error) {
	val := &ps.vals[v]
	if val.sums == nil {
		// A resident plan keeps the features' sums with their uploads:
		// its later passes (and its recording) read them.
		kept := v == 0 && ps.key != nil
		var s bmm.Vector
		var err error
		if kept {
			if s, err = ps.p.Backend.NewVector(ps.b.N()); err == nil {
				ps.owned = append(ps.owned, s)
			}
		} else {
			s, err = ps.vector(ps.b.N())
		}
		if err != nil {
			return nil, err
		}
		if err := ps.p.Backend.RowSums(s, val.rows); err != nil {
			return nil, err
		}
		val.sums = s
		if kept {
			ps.x.sums = s
		}
	}
	return val.sums, nil
}

// adjacency returns the aggregation operands of op's adjacency (0: with
// self-loops, 1: SAGE's neighbours), uploaded on first use: its edge list
// (edges) or packed tensor, and its row sums.
func (ps *pass) adjacency(op *planOp, edges bool) (bmm.GraphOperand, bmm.Bits, bmm.Vector, error) {
	b, k := ps.b, 0
	if op.nbr {
		k = 1
	}
	if d := ps.deg[k]; d != nil && edges && ps.graph[k] != nil { // kept: nothing read from b
		return ps.graph[k], nil, d, nil
	} else if d != nil && !edges && ps.adj[k] != nil {
		return nil, ps.adj[k], d, nil
	}
	g, packed, deg := &b.Edges, b.PackedAdj, b.Deg
	if op.nbr {
		nb := b.neighbours()
		g, packed, deg = &nb.Edges, nb.PackedAdj, nb.Deg
	}
	d, err := ps.uploadOnce(&ps.deg[k], func() []float32 { return deg })
	if err != nil {
		return nil, nil, nil, err
	}
	if edges {
		if ps.graph[k] == nil {
			if ps.graph[k], err = ps.uploadGraph(g, b.N(), graphKey{b: b, nbr: op.nbr}); err != nil {
				return nil, nil, nil, err
			}
		}
		return ps.graph[k], nil, d, nil
	}
	if ps.adj[k] == nil {
		adj, err := packed()
		if err != nil {
			return nil, nil, nil, err
		}
		if ps.adj[k], err = ps.p.Backend.UploadBits(adj); err != nil {
			return nil, nil, nil, fmt.Errorf("layers: uploading the adjacency: %w", err)
		}
		ps.owned = append(ps.owned, ps.adj[k])
	}
	return nil, ps.adj[k], d, nil
}

// operands are an op's inputs on the backend, one of three shapes: a bit
// product A·B, an aggregation G·X over an edge list, or a sum x + y.
type operands struct {
	a, b bmm.Bits
	g    bmm.GraphOperand
	x    bmm.Codes
	sx   bmm.Vector // sum: x
	sy   bmm.Vector // sum: y
	relu bool       // sum: its ReLU (a product's is its epilogue's)
}

func (o *operands) bits(be bmm.Backend, dst bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	switch {
	case o.sx != nil:
		return be.AddBit(dst, o.sx, o.sy, o.relu, rq)
	case o.g != nil:
		return be.AggBit(dst, o.g, o.x, ep, rq)
	}
	return be.MulBit(dst, o.a, o.b, ep, rq)
}

func (o *operands) codes(be bmm.Backend, dst bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	switch {
	case o.sx != nil:
		return be.AddCodes(dst, o.sx, o.sy, o.relu, rq)
	case o.g != nil:
		return be.AggCodes(dst, o.g, o.x, ep, rq)
	}
	return be.MulCodes(dst, o.a, o.b, ep, rq)
}

func (o *operands) float(be bmm.Backend, dst bmm.Vector, ep *bmm.Epi) error {
	switch {
	case o.sx != nil:
		return be.AddFloat(dst, o.sx, o.sy, o.relu)
	case o.g != nil:
		return be.AggFloat(dst, o.g, o.x, ep)
	}
	return be.MulFloat(dst, o.a, o.b, ep)
}

// operands resolves op i's inputs and completes its epilogue ep with the
// batch's vectors.
func (ps *pass) operands(i int, ep *bmm.Epi) (operands, error) {
	p := ps.p
	op := &p.ops[i]
	in := op.in[0]
	var o operands
	if op.kind == qAdd {
		o.sx, o.sy, o.relu = ps.vals[in].float, ps.vals[op.in[1]].float, op.relu
		return o, nil
	}
	var err error
	if ep.RowScale, err = ps.rowScale(op); err != nil {
		return o, err
	}
	switch op.kind {
	case qLin:
		if ps.sparseOp(i) {
			o.g, o.x, ep.RowTerm = ps.feat, p.wCodes[i], ps.featSums
			return o, nil
		}
		o.a, o.b = ps.vals[in].rows, p.w[i]
		ep.RowTerm, err = ps.rowSums(in)
		return o, err
	}
	edges := ps.aggEdges(in)
	o.g, o.a, ep.RowTerm, err = ps.adjacency(op, edges)
	if edges {
		o.x = ps.vals[in].codes
	} else {
		o.b = ps.vals[in].cols
	}
	return o, err
}

// op runs op i into every form its output's readers take.
func (ps *pass) op(i int, trace Trace) error {
	p, b := ps.p, ps.b
	op := &p.ops[i]
	f := ps.need(i + 1)
	last := i == len(p.ops)-1
	if !last && !f.any() {
		return nil // a value no op reads: nothing to run or upload
	}
	n, width := b.N(), p.widths[i+1]
	ep := &p.run[i]
	*ep = p.epi[i]
	o, err := ps.operands(i, ep)
	if err != nil {
		return err
	}
	be := p.Backend
	out := &ps.vals[i+1]
	ps.st.UnfusedBytes += 8 * n * width
	if op.out == nil {
		if out.float, err = ps.vector(n * width); err != nil {
			return err
		}
		if err := o.float(be, out.float, ep); err != nil {
			return err
		}
		if !last {
			ps.st.InterBytes += 4 * n * width
		}
		if trace != nil {
			trace(i, nil)
		}
		return nil
	}
	rq, bits := requantOf(*op.out), op.out.Bits
	traced := trace == nil
	for _, fm := range []struct {
		want    bool
		dst     *bmm.Bits
		packing bittensor.Packing
	}{{f.rows, &out.rows, bittensor.ByRows}, {f.cols, &out.cols, bittensor.ByCols}} {
		if !fm.want {
			continue
		}
		if *fm.dst, err = ps.bits(n, width, bits, fm.packing); err != nil {
			return err
		}
		if err := o.bits(be, *fm.dst, ep, rq); err != nil {
			return err
		}
		ps.st.InterBytes += packedBytes(n, width, bits, fm.packing)
		if !traced {
			t, err := be.ReadBits(*fm.dst)
			if err != nil {
				return err
			}
			trace(i, t)
			traced = true
		}
	}
	if f.codes {
		if out.codes, err = ps.codes(n, width, bits); err != nil {
			return err
		}
		if err := o.codes(be, out.codes, ep, rq); err != nil {
			return err
		}
		ps.st.InterBytes += n * width
		if !traced {
			c := make([]uint8, n*width)
			if err := be.ReadCodes(c, out.codes); err != nil {
				return err
			}
			ints := make([]int32, len(c))
			for j, v := range c {
				ints[j] = int32(v)
			}
			t, err := bittensor.PackRows(ints, n, width, bits)
			if err != nil {
				return err
			}
			trace(i, t)
		}
	}
	return nil
}

// packedBytes is the storage of a rows×cols tensor of bits planes with
// the default padding.
func packedBytes(rows, cols, bits int, packing bittensor.Packing) int {
	lines, k := rows, cols
	if packing == bittensor.ByCols {
		lines, k = cols, rows
	}
	pad := bittensor.DefaultPadding
	up := func(x, m int) int { return (x + m - 1) / m * m }
	return bits * up(lines, pad.Lines) * up(k, pad.Bits) / 8
}
