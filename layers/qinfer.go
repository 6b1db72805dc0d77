package layers

import (
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
	// WeightBytes is the packed size of every weight tensor.
	WeightBytes int
	// Upload is what Compile moved to the backend, once: the weights and
	// the static epilogue vectors.
	Upload bmm.Traffic

	ops     []planOp
	weights []*simWeights // per op; nil for aggregations
	w       []bmm.Bits    // per op: weight codes, K×N packed by columns
	// wCodes holds op 0's weight codes one byte each (weights of at most 8
	// bits, else nil): the sparse first product is then the sum of W's code
	// rows at each node's features, times their codes (an aggregation over
	// the feature lists).
	wCodes bmm.Codes
	epi    []bmm.Epi // per op: the static vectors; the pass adds the batch's
	run    []bmm.Epi // per op: the epilogue a pass hands the backend, reused
	widths []int     // per value (0: the input, i+1: op i's output)
	params []Params  // per value: its quantizer
	pool   opPool
	// graphs keeps the graphs whose upload moved no bytes (a backend on
	// host memory): checking a graph again every pass costs, on one core,
	// about what aggregating over it costs on all of them.
	graphs map[graphKey]bmm.GraphOperand
	pred   []int32 // one batch's predictions, reused
	closed bool
	par    *planLanes // Run's batch-parallel lanes (run.go)
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
		for _, v := range op.in {
			if v < 0 || v > i {
				return fmt.Errorf("%w: op %d reads value %d, not made before it", ErrModel, i, v)
			}
		}
		if (op.out == nil) != (i == n-1) {
			return fmt.Errorf("%w: op %d of %d gives the logits", ErrModel, i, n)
		}
		in := op.in[0]
		var ep *bmm.Epilogue
		switch op.kind {
		case qLin:
			w := prepareWeights(op.lin, m.WBits, true)
			codes := make([]int32, len(w.codes))
			for j, c := range w.codes {
				codes[j] = int32(uint32(c)) // 32-bit codes wrap; Pack stores the bit pattern
			}
			t, err := bittensor.Pack(codes, op.lin.In, op.lin.Out, m.WBits, bittensor.ByCols, bittensor.DefaultPadding)
			if err != nil {
				return err
			}
			p.weights[i] = w
			if p.w[i], err = be.UploadBits(t); err != nil {
				return fmt.Errorf("layers: uploading op %d's weights: %w", i, err)
			}
			p.WeightBytes += 8 * len(t.Words())
			if i == 0 && m.WBits <= 8 {
				b := make([]uint8, len(codes))
				for j, c := range codes {
					b[j] = uint8(c)
				}
				if p.wCodes, err = be.UploadCodes(b, op.lin.In, op.lin.Out, m.WBits); err != nil {
					return fmt.Errorf("layers: uploading op 0's weight codes: %w", err)
				}
			}
			ep = linEpilogue(op, p.params[in], w, op.lin.In, nil, empty, true)
			p.widths[i+1] = op.lin.Out
		case qAgg:
			ep = aggEpilogue(op, p.params[in], p.widths[in], empty, true)
			p.widths[i+1] = p.widths[in]
		default:
			return fmt.Errorf("%w: op %d has a kind (%d) the plan cannot run", ErrModel, i, op.kind)
		}
		if op.out != nil {
			p.params[i+1] = *op.out
		}
		e := &p.epi[i]
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
				return fmt.Errorf("layers: uploading op %d's epilogue: %w", i, err)
			}
		}
	}
	p.Upload = be.Traffic().Sub(before)
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
	if p.wCodes != nil {
		p.wCodes.Free()
	}
	for i := range p.epi {
		e := &p.epi[i]
		for _, v := range []bmm.Vector{e.ColScale, e.ColTerm, e.ColConst, e.ColBias} {
			if v != nil {
				free(v)
			}
		}
	}
	p.pool.close()
	for _, g := range p.graphs {
		g.Free()
	}
	p.graphs = nil
	p.closeLanes()
	return nil
}

// graphKey names a batch's graph: its edge list (in nil) or its feature
// lists in in.
type graphKey struct {
	b  *Batch
	in *Input
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
	ps, err := p.pass(b, x, sx, trace)
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
	// (sparse) into the feature lists and code sums of its first product,
	// made on a batch's first run and kept.
	Pack    time.Duration
	Compute time.Duration // uploads, ops and the predictions' download
	Stats   Stats         // summed over batches
	Batches int
	Nodes   int
	// EdgeListBatches counts the batches whose aggregations summed codes
	// over the edge list instead of the packed adjacency (see Plan.Agg).
	EdgeListBatches int
	// Traffic is what the pass moved between host and backend and the ops
	// it ran (the weights' upload is Plan.Upload).
	Traffic bmm.Traffic
}

// Run runs p over d's Eval batches with features in (quantized with the
// plan's input params). With sparse, the first product reads the sparse
// codes (ForwardSparse) instead of packing bit planes. progress, when set,
// is called after each batch, from one goroutine at a time.
//
// On a backend that forks (bmm.Forker) with batches enough for the cores,
// whole batches run side by side, one per core (run.go); Pack and Compute
// then split the wall time between them. The predictions are the same bit
// for bit either way.
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
	for i := range r.Pred {
		r.Pred[i] = -1
	}
	before := p.Backend.Traffic()
	if l := p.laneCount(len(d.Eval)); l > 1 && !p.closed && p.disjointOK(d) {
		if err := p.runLanes(l, r, d, in, sparse, progress); err != nil {
			return nil, err
		}
		r.Traffic = p.Backend.Traffic().Sub(before)
		return r, nil
	}
	for i, b := range d.Eval {
		t0 := time.Now()
		var x *bittensor.Tensor
		var sx *Input
		if sparse {
			sx = in
			p.packLists(b, in)
		} else {
			var err error
			if x, err = in.Pack(b.Nodes); err != nil {
				return nil, err
			}
		}
		t1 := time.Now()
		if err := p.predict(r, b, x, sx); err != nil {
			return nil, err
		}
		r.Pack += t1.Sub(t0)
		r.Compute += time.Since(t1)
		if progress != nil {
			progress(i+1, len(d.Eval))
		}
	}
	r.Traffic = p.Backend.Traffic().Sub(before)
	return r, nil
}

// predict runs one batch of Run and scatters its predictions into r.
func (p *Plan) predict(r *Result, b *Batch, x *bittensor.Tensor, sx *Input) error {
	ps, err := p.pass(b, x, sx, nil)
	defer ps.release()
	if err != nil {
		return err
	}
	n := b.N()
	if cap(p.pred) < n {
		p.pred = make([]int32, n)
	}
	pred := p.pred[:n]
	if err := p.Backend.Argmax(pred, ps.logits(), p.Model.Classes); err != nil {
		return err
	}
	for i, v := range b.Nodes {
		r.Pred[v] = pred[i]
	}
	r.Stats.InterBytes += ps.st.InterBytes
	r.Stats.UnfusedBytes += ps.st.UnfusedBytes
	r.Nodes += n
	if ps.edges {
		r.EdgeListBatches++
	}
	return nil
}

// edges reports whether b's aggregations run from its edge list.
func (p *Plan) edges(b *Batch) bool {
	switch p.Agg {
	case AggDense:
		return false
	case AggSparse:
		return true
	}
	return p.Backend.PreferEdges(bmm.AggCost{Rows: b.N(), Cols: p.widths[1], Edges: len(b.Indices),
		DenseTiles: b.tiles, Bits: p.Model.ABits})
}

// byteFirst reports whether op 0 can run as a code aggregation over in's
// feature lists: weights and feature codes of at most 8 bits.
func (p *Plan) byteFirst(in *Input) bool { return p.wCodes != nil && in.Params.Bits <= 8 }

// SparseCheaper reports whether ForwardSparse's first product is expected
// to cost less on the plan's backend than packing the features and
// multiplying their bit planes: the backend's cost model with the feature
// lists as the edge list and the padded feature matrix as the dense
// operand, whose a·w plane products stand for the aggregated width.
func (p *Plan) SparseCheaper(in *Input) bool {
	if !p.byteFirst(in) {
		return false
	}
	pad := bittensor.DefaultPadding.Bits
	tiles := (in.Rows + 63) / 64 * ((in.Cols + pad - 1) / pad)
	return p.Backend.PreferEdges(bmm.AggCost{Rows: in.Rows, Cols: p.widths[1], Edges: len(in.Codes),
		DenseTiles: tiles, Bits: in.Params.Bits * p.Model.WBits})
}

// requantOf is p's quantizer as a fused-epilogue re-quantization.
func requantOf(p Params) bmm.Requant {
	inv, off := p.Requant()
	return bmm.Requant{Scale: inv, Offset: off}
}

// value is one value of the DAG (0: the batch's features, i+1: op i's
// output) in the forms its readers take, on the backend.
type value struct {
	rows   bmm.Bits   // packed by rows: a product's left operand
	cols   bmm.Bits   // packed by columns: a dense aggregation's right operand
	codes  bmm.Codes  // a byte per code: an edge-list aggregation's operand
	sums   bmm.Vector // the row sums of its codes: a product's RowTerm
	logits bmm.Vector
}

// pass is one batch on the backend: its uploads (made on first use), the
// values of the DAG, and everything to give back when it ends.
type pass struct {
	p      *Plan
	b      *Batch
	edges  bool // aggregations over the edge list
	vals   []value
	st     Stats
	owned  []bmm.Operand // uploads of this batch, freed at the end
	pooled []pooled      // outputs, back to the pool at the end
	// The batch's uploads.
	adj                bmm.Bits
	graph, feat        bmm.GraphOperand
	dinv, deg, fs, dfs bmm.Vector
	featSums           bmm.Vector
	// sparseFirst: op 0 sums W's code rows over the feature lists (feat).
	sparseFirst bool
}

// pass uploads batch b's inputs and runs every op of the DAG on the
// backend. The caller releases the pass once it has read the logits.
func (p *Plan) pass(b *Batch, x *bittensor.Tensor, sx *Input, trace Trace) (*pass, error) {
	m := p.Model
	ps := &pass{p: p, b: b, vals: make([]value, len(p.ops)+1)}
	if p.closed {
		return ps, fmt.Errorf("%w: plan is closed", ErrModel)
	}
	ps.edges = p.edges(b)
	if !ps.edges && b.Adj == nil {
		return ps, fmt.Errorf("%w: batch has no packed adjacency (built without bits)", ErrModel)
	}
	if m.NormRows && b.FeatScale == nil {
		return ps, fmt.Errorf("%w: the model normalizes feature rows but the batch has no FeatScale", ErrModel)
	}
	if sx != nil {
		// Codes or weights past 8 bits, or feature lists whose sums could
		// pass int32, take the dense first product.
		var err error
		g, bound := b.featRows(sx, p.byteFirst(sx))
		if g != nil && float64(bound)*(math.Exp2(float64(m.WBits))-1) <= math.MaxInt32 {
			ps.sparseFirst = true
			if ps.feat, err = ps.uploadGraph(g, sx.Cols, graphKey{b, sx}); err != nil {
				return ps, err
			}
			if ps.featSums, err = ps.upload(b.featSums(sx)); err != nil {
				return ps, err
			}
		}
	}
	// The packed features, where a product reads them (always but for a
	// sparse first product that is their only reader).
	if rows, _, _ := ps.need(0); rows {
		if x == nil && sx != nil {
			var err error
			if x, err = sx.Pack(b.Nodes); err != nil {
				return ps, err
			}
		}
		if x == nil {
			return ps, fmt.Errorf("%w: no features", ErrModel)
		}
		if x.Rows() != b.N() || x.Cols() != m.Layers[0].Lin1.In || x.Packing() != bittensor.ByRows {
			return ps, fmt.Errorf("%w: features are %d×%d (%v), batch has %d nodes and the model takes %d",
				ErrModel, x.Rows(), x.Cols(), x.Packing(), b.N(), m.Layers[0].Lin1.In)
		}
		if x.Bits() != m.Input.Bits {
			return ps, fmt.Errorf("%w: features are %d-bit, the model expects %d", ErrModel, x.Bits(), m.Input.Bits)
		}
		xb, err := p.Backend.UploadBits(x)
		if err != nil {
			return ps, fmt.Errorf("layers: uploading the features: %w", err)
		}
		ps.owned = append(ps.owned, xb)
		ps.vals[0].rows = xb
	}
	if err := ps.inputForms(x, sx); err != nil {
		return ps, err
	}
	for i := range p.ops {
		if err := ps.op(i, trace); err != nil {
			return ps, fmt.Errorf("layers: op %d: %w", i, err)
		}
	}
	return ps, nil
}

// logits is the last op's output.
func (ps *pass) logits() bmm.Vector { return ps.vals[len(ps.vals)-1].logits }

// release gives the batch's operands back: its uploads freed, its outputs
// to the plan's pool for the next batch. Every op before has finished (the
// caller read the logits or the predictions), so reusing them is safe.
func (ps *pass) release() {
	for _, o := range ps.owned {
		o.Free()
	}
	for _, o := range ps.pooled {
		ps.p.pool.put(o)
	}
	ps.owned, ps.pooled = nil, nil
}

func (ps *pass) upload(v []float32) (bmm.Vector, error) {
	o, err := ps.p.Backend.UploadVector(v)
	if err != nil {
		return nil, fmt.Errorf("layers: uploading a batch vector: %w", err)
	}
	ps.owned = append(ps.owned, o)
	return o, nil
}

// uploadGraph uploads g (src source rows), the graph key names, or finds
// it kept by the plan (see Plan.graphs).
func (ps *pass) uploadGraph(g *bmm.Graph, src int, key graphKey) (bmm.GraphOperand, error) {
	p := ps.p
	if o := p.graphs[key]; o != nil {
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

// need returns the forms value v's readers take in this pass.
func (ps *pass) need(v int) (rows, cols, codes bool) {
	for i := range ps.p.ops {
		op := &ps.p.ops[i]
		for _, u := range op.in {
			if u != v {
				continue
			}
			switch op.kind {
			case qLin:
				rows = rows || !(v == 0 && i == 0 && ps.sparseFirst)
			case qAgg:
				if ps.aggEdges(v) {
					codes = true
				} else {
					cols = true
				}
			}
		}
	}
	return
}

// aggEdges reports whether an aggregation of value v sums its byte codes
// over the edge list (codes of at most 8 bits).
func (ps *pass) aggEdges(v int) bool { return ps.edges && ps.p.params[v].Bits <= 8 }

// inputForms makes the forms of value 0 other than the packed rows that
// its readers take (an aggregation of the features themselves).
func (ps *pass) inputForms(x *bittensor.Tensor, sx *Input) error {
	_, cols, codes := ps.need(0)
	if !cols && !codes {
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
	if cols {
		t, err := bittensor.Pack(ints, n, k, bits, bittensor.ByCols, bittensor.DefaultPadding)
		if err != nil {
			return err
		}
		if ps.vals[0].cols, err = be.UploadBits(t); err != nil {
			return fmt.Errorf("layers: uploading the features: %w", err)
		}
		ps.owned = append(ps.owned, ps.vals[0].cols)
	}
	if codes {
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
	var err error
	switch {
	case op.rowScale && op.featScale:
		if ps.dfs == nil {
			ps.dfs, err = ps.upload(b.scaleBoth())
		}
		return ps.dfs, err
	case op.rowScale:
		if ps.dinv == nil {
			ps.dinv, err = ps.upload(b.DInv)
		}
		return ps.dinv, err
	case op.featScale:
		if ps.fs == nil {
			ps.fs, err = ps.upload(b.FeatScale)
		}
		return ps.fs, err
	}
	return nil, nil
}

// rowSums returns the row sums of value v's codes (packed by rows).
func (ps *pass) rowSums(v int) (bmm.Vector, error) {
	val := &ps.vals[v]
	if val.sums == nil {
		s, err := ps.vector(ps.b.N())
		if err != nil {
			return nil, err
		}
		if err := ps.p.Backend.RowSums(s, val.rows); err != nil {
			return nil, err
		}
		val.sums = s
	}
	return val.sums, nil
}

// op runs op i into every form its output's readers take.
func (ps *pass) op(i int, trace Trace) error {
	p, b := ps.p, ps.b
	op := &p.ops[i]
	if rows, cols, codes := ps.need(i + 1); op.out != nil && !rows && !cols && !codes {
		return nil // a value no op reads: nothing to run or upload
	}
	in := op.in[0]
	n, width := b.N(), p.widths[i+1]
	ep := &p.run[i]
	*ep = p.epi[i]
	var err error
	if ep.RowScale, err = ps.rowScale(op); err != nil {
		return err
	}
	// The left operand: a product's A (or the feature lists), or the
	// adjacency (or its edge list); right: the weights or the value.
	var (
		a, right bmm.Bits
		g        bmm.GraphOperand
		x        bmm.Codes
	)
	switch op.kind {
	case qLin:
		if i == 0 && in == 0 && ps.sparseFirst {
			g, x, ep.RowTerm = ps.feat, p.wCodes, ps.featSums
		} else {
			a, right = ps.vals[in].rows, p.w[i]
			if ep.RowTerm, err = ps.rowSums(in); err != nil {
				return err
			}
		}
	case qAgg:
		if ps.deg == nil {
			if ps.deg, err = ps.upload(b.Deg); err != nil {
				return err
			}
		}
		ep.RowTerm = ps.deg
		if ps.aggEdges(in) {
			if ps.graph == nil {
				if ps.graph, err = ps.uploadGraph(&b.Edges, n, graphKey{b, nil}); err != nil {
					return err
				}
			}
			g, x = ps.graph, ps.vals[in].codes
		} else {
			if ps.adj == nil {
				if ps.adj, err = p.Backend.UploadBits(b.Adj); err != nil {
					return fmt.Errorf("layers: uploading the adjacency: %w", err)
				}
				ps.owned = append(ps.owned, ps.adj)
			}
			a, right = ps.adj, ps.vals[in].cols
		}
	}
	be := p.Backend
	out := &ps.vals[i+1]
	ps.st.UnfusedBytes += 8 * n * width
	if op.out == nil {
		if out.logits, err = ps.vector(n * width); err != nil {
			return err
		}
		if g != nil {
			err = be.AggFloat(out.logits, g, x, ep)
		} else {
			err = be.MulFloat(out.logits, a, right, ep)
		}
		if err == nil && trace != nil {
			trace(i, nil)
		}
		return err
	}
	rq, bits := requantOf(*op.out), op.out.Bits
	rows, cols, codes := ps.need(i + 1)
	traced := trace == nil
	for _, f := range []struct {
		want    bool
		dst     *bmm.Bits
		packing bittensor.Packing
	}{{rows, &out.rows, bittensor.ByRows}, {cols, &out.cols, bittensor.ByCols}} {
		if !f.want {
			continue
		}
		if *f.dst, err = ps.bits(n, width, bits, f.packing); err != nil {
			return err
		}
		if g != nil {
			err = be.AggBit(*f.dst, g, x, ep, rq)
		} else {
			err = be.MulBit(*f.dst, a, right, ep, rq)
		}
		if err != nil {
			return err
		}
		ps.st.InterBytes += packedBytes(n, width, bits, f.packing)
		if !traced {
			t, err := be.ReadBits(*f.dst)
			if err != nil {
				return err
			}
			trace(i, t)
			traced = true
		}
	}
	if codes {
		if out.codes, err = ps.codes(n, width, bits); err != nil {
			return err
		}
		if g != nil {
			err = be.AggCodes(out.codes, g, x, ep, rq)
		} else {
			err = be.MulCodes(out.codes, a, right, ep, rq)
		}
		if err != nil {
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
