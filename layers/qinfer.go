package layers

import (
	"fmt"
	"strings"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// Plan is a calibrated Model compiled for the bit kernels: each linear's
// weights quantized per output channel and packed by columns once, with
// their column sums for the zero-point corrections.
type Plan struct {
	Model   *Model
	Kernel  bmm.Kernel
	ops     []planOp
	weights []*simWeights       // per op; nil for aggregations
	packed  []*bittensor.Tensor // per op: weight codes, K×N packed by columns
	// WeightBytes is the packed size of every weight tensor.
	WeightBytes int
	// Tiles fuses each re-quantization by row tiles around the kernel's
	// MulInt instead of calling its MulBit (same codes; see mulBitTiles).
	Tiles bool
	wInt  []int64 // op 0's weight codes, K×N, for ForwardSparse past 8 bits
	// wCodes holds the same codes one byte each (weights of at most 8
	// bits): the first product is then the sum of W's code rows at each
	// node's features, times their codes (cpu.Agg* on the feature lists).
	wCodes cpu.Codes
	// Agg picks how aggregations run: dense bit products on the packed
	// adjacency, or sums over its edge list (cpu.Agg*), with the same
	// results bit for bit.
	Agg AggMode
}

// AggMode is how a plan runs its aggregations.
type AggMode int

const (
	// AggAuto runs a batch's aggregations from its edge list when the plan
	// runs on the CPU and the cost model says the edge list is cheaper.
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

// aggBitMACsPerEdgeCol and denseBitMACs are the cost model of AggAuto,
// in CPU cycles: an edge list costs about 1/16 cycle per edge and column
// with the vector kernel (1 cycle without), a dense bit product about
// 1/200 cycle per bit-MAC (bench/cpu: 190-280 bit-MACs/cycle/core on
// AVX-512, 75-107 on AVX2) over every non-zero 64×256 chunk of the
// adjacency.
const (
	sparseColsPerCycle = 16
	denseMACsPerCycle  = 200
)

// sparseAgg reports whether b's aggregations run from its edge list.
func (p *Plan) sparseAgg(b *Batch) bool {
	switch p.Agg {
	case AggDense:
		return false
	case AggSparse:
		return true
	}
	if !strings.HasPrefix(p.Kernel.Name(), "cpu/") && p.Kernel.Name() != (bmm.Generic{}).Name() {
		return false // a GPU plan keeps its products on the device
	}
	perEdge := 1.0
	if cpu.AggVectorized() {
		perEdge = 1.0 / sparseColsPerCycle
	}
	sparse := float64(len(b.Indices)) * perEdge
	dense := float64(b.chunks) * 64 * 256 * float64(p.Model.ABits) / denseMACsPerCycle
	return sparse < dense
}

// Compile quantizes and packs m's weights for kernel k (bmm.Default() when
// nil). m must be calibrated.
func (m *Model) Compile(k bmm.Kernel) (*Plan, error) {
	if !m.Calibrated {
		return nil, fmt.Errorf("%w: model is not calibrated (run Calibrate or QAT first)", ErrModel)
	}
	if k == nil {
		k = bmm.Default()
	}
	p := &Plan{Model: m, Kernel: k, ops: m.ops()}
	for i := range p.ops {
		op := &p.ops[i]
		if op.kind != qLin {
			p.weights = append(p.weights, nil)
			p.packed = append(p.packed, nil)
			continue
		}
		w := prepareWeights(op.lin, m.WBits, true)
		codes := make([]int32, len(w.codes))
		for j, c := range w.codes {
			codes[j] = int32(uint32(c)) // 32-bit codes wrap; Pack stores the bit pattern
		}
		t, err := bittensor.Pack(codes, op.lin.In, op.lin.Out, m.WBits, bittensor.ByCols, bittensor.DefaultPadding)
		if err != nil {
			return nil, err
		}
		p.weights = append(p.weights, w)
		p.packed = append(p.packed, t)
		if i == 0 {
			p.wInt = make([]int64, len(w.codes))
			for j, c := range w.codes {
				p.wInt[j] = int64(c)
			}
			if m.WBits <= 8 {
				if p.wCodes, err = cpu.CodesFromInts(codes, op.lin.In, op.lin.Out, m.WBits); err != nil {
					return nil, err
				}
			}
		}
		p.WeightBytes += 8 * len(t.Words())
	}
	return p, nil
}

// Trace receives, for tests and the fusion benchmark, each op's output
// before the next op consumes it: the packed codes (nil for the logits).
type Trace func(op int, codes *bittensor.Tensor)

// Stats counts what a forward pass moved between layers.
type Stats struct {
	// InterBytes is the size of every inter-layer tensor as it is stored:
	// packed bit planes here.
	InterBytes int
	// UnfusedBytes is what the same pass would store without fusion: an
	// int32 product and a float32 epilogue output per op.
	UnfusedBytes int
}

// Forward runs the plan on batch b whose features x are packed by rows
// (Input.Pack of b.Nodes) and returns the float32 logits, b.N()×Classes.
// Every product is a bit product; between ops only packed codes exist.
func (p *Plan) Forward(b *Batch, x *bittensor.Tensor, trace Trace) ([]float32, Stats, error) {
	return p.forward(b, x, nil, trace, nil)
}

// ForwardSparse is Forward with the first product (features × weights)
// computed from the sparse feature codes of in instead of their bit planes:
// the same integer product (exact, int64), so the same codes and logits,
// at a cost in stored codes rather than in K·bits². The rest of the pass
// is bit products as in Forward.
func (p *Plan) ForwardSparse(b *Batch, in *Input, trace Trace) ([]float32, Stats, error) {
	if in.Params != p.Model.Input || in.Cols != p.Model.Layers[0].Lin1.In {
		return nil, Stats{}, fmt.Errorf("%w: features quantized with %+v (%d columns), the model expects %+v (%d)",
			ErrModel, in.Params, in.Cols, p.Model.Input, p.Model.Layers[0].Lin1.In)
	}
	return p.forward(b, nil, in, trace, nil)
}

// sparseFirst computes op 0 from the sparse codes of b's rows: C = X·W in
// int64, then the epilogue and the quantizer exactly as a kernel applies
// them, packed for the next op (or as byte codes with toCodes, or as the
// logits when op 0 is the last), in ob's storage.
func (p *Plan) sparseFirst(b *Batch, in *Input, ep *bmm.Epilogue, op *planOp, packing bittensor.Packing, toCodes bool, ob *opBufs) (*bittensor.Tensor, cpu.Codes, []float32, error) {
	nOut := op.lin.Out
	n := b.N()
	var logits []float32
	var codes []uint32
	var outC cpu.Codes
	var rq bmm.Requant
	switch {
	case op.out == nil:
		logits = ob.floats(n * nOut)
	case toCodes:
		var err error
		if outC, err = ob.newCodes(n, nOut, op.out.Bits); err != nil {
			return nil, outC, nil, err
		}
		rq = requantOf(*op.out)
	default:
		codes = make([]uint32, n*nOut)
		rq = requantOf(*op.out)
	}
	// emitRow takes row r's epilogue output y (len nOut) to its place.
	emitRow := func(r int, y []float32) {
		switch {
		case logits != nil:
			copy(logits[r*nOut:], y)
		case toCodes:
			outC.QuantizeRow(r, y, rq)
		default:
			cpu.QuantizeRow(codes[r*nOut:(r+1)*nOut], y, rq, op.out.Bits)
		}
	}
	in.prepare()
	if p.byteFirst(in) {
		// Row r of X·W is the sum of W's code rows at r's stored features,
		// each times its feature code: an aggregation over the feature
		// lists, weighted unless every code is 1 (binary features).
		g, err := b.featRows(in)
		if err != nil {
			return nil, outC, nil, fmt.Errorf("%w: feature codes: %w", ErrModel, err)
		}
		switch {
		case logits != nil:
			err = cpu.AggFloat(logits, g, p.wCodes, ep)
		case toCodes:
			err = cpu.AggCodes(outC, g, p.wCodes, ep, rq)
		default:
			var t *bittensor.Tensor
			if t, err = ob.newTensor(n, nOut, op.out.Bits, packing); err == nil {
				if err = cpu.AggBit(t, g, p.wCodes, ep, rq); err == nil {
					return t, outC, nil, nil
				}
			}
		}
		return nil, outC, logits, err
	}
	// Codes or weights of more than 8 bits: int64 sums over the feature
	// lists (the codes' products can pass what float32 or int32 hold).
	wc := p.wInt
	parFor(n, func(lo, hi int) {
		acc := make([]int64, nOut)
		y := make([]float32, nOut)
		for r := lo; r < hi; r++ {
			clear(acc)
			v := b.Nodes[r]
			for q := in.Indptr[v]; q < in.Indptr[v+1]; q++ {
				x := int64(in.Codes[q])
				row := wc[int(in.Indices[q])*nOut : int(in.Indices[q]+1)*nOut]
				for j, c := range row {
					acc[j] += x * c
				}
			}
			for j, c := range acc {
				y[j] = ep.ApplyFloat(float32(c), r, j)
			}
			emitRow(r, y)
		}
	})
	if logits != nil || toCodes {
		return nil, outC, logits, nil
	}
	t, err := ob.newTensor(n, nOut, op.out.Bits, packing)
	if err != nil {
		return nil, outC, nil, err
	}
	packTile(t, codes, 0, n, nOut)
	return t, outC, nil, nil
}

// With bufs (one per op, only where no trace keeps the outputs), each op's
// output is made in its opBufs' storage.
func (p *Plan) forward(b *Batch, x *bittensor.Tensor, sx *Input, trace Trace, bufs []opBufs) ([]float32, Stats, error) {
	var st Stats
	m := p.Model
	sparseAgg := p.sparseAgg(b)
	if b.Adj == nil {
		return nil, st, fmt.Errorf("%w: batch has no packed adjacency (built without bits)", ErrModel)
	}
	if m.NormRows && b.FeatScale == nil {
		return nil, st, fmt.Errorf("%w: the model normalizes feature rows but the batch has no FeatScale", ErrModel)
	}
	if sx == nil { // packed features; the sparse path reads in's codes
		if x.Rows() != b.N() || x.Cols() != m.Layers[0].Lin1.In || x.Packing() != bittensor.ByRows {
			return nil, st, fmt.Errorf("%w: features are %d×%d (%v), batch has %d nodes and the model takes %d",
				ErrModel, x.Rows(), x.Cols(), x.Packing(), b.N(), m.Layers[0].Lin1.In)
		}
		if x.Bits() != m.Input.Bits {
			return nil, st, fmt.Errorf("%w: features are %d-bit, the model expects %d", ErrModel, x.Bits(), m.Input.Bits)
		}
	}
	// The value between ops is either packed bit planes (cur) or, before a
	// sparse aggregation, one byte per code (curCodes, when codes is set).
	cur := x
	var curCodes cpu.Codes
	codes := false
	ph := m.Input
	n := b.N()
	for i := range p.ops {
		op := &p.ops[i]
		last := op.out == nil
		var ob *opBufs
		if bufs != nil {
			ob = &bufs[i]
		}
		// Where the next op is an aggregation run from the edge list, this
		// op hands it byte codes; where it is a bit product, packed planes.
		toCodes := !last && sparseAgg && i+1 < len(p.ops) && p.ops[i+1].kind == qAgg && op.out.Bits <= 8
		packing := bittensor.ByRows
		if i+1 < len(p.ops) && p.ops[i+1].kind == qAgg {
			packing = bittensor.ByCols // the aggregation's right operand
		}
		var ep *bmm.Epilogue
		width := 0
		switch op.kind {
		case qLin:
			width = op.lin.Out
			switch {
			case i == 0 && sx != nil:
				ep = linEpilogue(op, ph, p.weights[i], op.lin.In, b.featSums(sx), b, true)
			default:
				ep = linEpilogue(op, ph, p.weights[i], op.lin.In, bitRowSums(cur), b, true)
			}
		case qAgg:
			if codes {
				width = curCodes.Cols
			} else {
				width = cur.Cols()
			}
			ep = aggEpilogue(op, ph, width, b, true)
		}
		st.UnfusedBytes += 8 * n * width
		var (
			out    *bittensor.Tensor
			outC   cpu.Codes
			logits []float32
			err    error
		)
		switch {
		case op.kind == qLin && i == 0 && sx != nil:
			out, outC, logits, err = p.sparseFirst(b, sx, ep, op, packing, toCodes, ob)
		case op.kind == qAgg && codes:
			switch {
			case last:
				logits = ob.floats(n * width)
				err = cpu.AggFloat(logits, b.Edges, curCodes, ep)
			case toCodes:
				if outC, err = ob.newCodes(n, width, op.out.Bits); err == nil {
					err = cpu.AggCodes(outC, b.Edges, curCodes, ep, requantOf(*op.out))
				}
			default:
				if out, err = ob.newTensor(n, width, op.out.Bits, packing); err == nil {
					err = cpu.AggBit(out, b.Edges, curCodes, ep, requantOf(*op.out))
				}
			}
		default:
			a, bt := cur, p.packed[i]
			if op.kind == qAgg {
				a, bt = b.Adj, cur
			}
			switch {
			case last:
				logits, err = mulFloat(p.Kernel, a, bt, ep, ob)
			case toCodes:
				outC, err = mulCodes(p.Kernel, a, bt, ep, requantOf(*op.out), op.out.Bits, ob)
			default:
				out, err = mulBit(p.Kernel, a, bt, ep, requantOf(*op.out), op.out.Bits, packing, p.Tiles, ob)
			}
		}
		if err != nil {
			return nil, st, fmt.Errorf("layers: op %d: %w", i, err)
		}
		if logits != nil {
			if trace != nil {
				trace(i, nil)
			}
			return logits, st, nil
		}
		if toCodes {
			st.InterBytes += outC.Bytes()
			if trace != nil {
				trace(i, codesTensor(outC))
			}
			curCodes, codes, cur = outC, true, nil
		} else {
			st.InterBytes += 8 * len(out.Words())
			if trace != nil {
				trace(i, out)
			}
			cur, codes = out, false
		}
		ph = *op.out
	}
	return nil, st, fmt.Errorf("%w: model ends without logits", ErrModel)
}

// codesTensor packs codes by rows, for a trace.
func codesTensor(c cpu.Codes) *bittensor.Tensor {
	t, err := bittensor.PackRows(c.Ints(), c.Rows, c.Cols, c.Bits)
	if err != nil {
		panic(err) // Codes hold codes below 2^Bits by construction: they always pack
	}
	return t
}

// requantOf is p's quantizer as a fused-epilogue re-quantization.
func requantOf(p Params) bmm.Requant {
	inv, off := p.Requant()
	return bmm.Requant{Scale: inv, Offset: off}
}

// Result is the outcome of running a plan over every batch of a task.
type Result struct {
	Pred    []int32       // predicted class per node (−1: in no batch)
	Pack    time.Duration // packing each batch's feature codes into bit planes
	Compute time.Duration // the bit products with their fused epilogues
	Stats   Stats         // summed over batches
	Batches int
	Nodes   int
	// EdgeListBatches counts the batches whose aggregations summed codes
	// over the edge list instead of the packed adjacency (see Plan.Agg).
	EdgeListBatches int
}

// Run runs p over d's Eval batches with features in (quantized with the
// plan's input params). With sparse, the first product reads the sparse
// codes (ForwardSparse) instead of packing bit planes. progress, when set,
// is called after each batch.
func (p *Plan) Run(d *Data, in *Input, sparse bool, progress func(done, total int)) (*Result, error) {
	if in.Params != p.Model.Input {
		return nil, fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, in.Params, p.Model.Input)
	}
	r := &Result{Pred: make([]int32, d.Graph.N()), Batches: len(d.Eval)}
	bufs := make([]opBufs, len(p.ops)) // each op's output storage, reused batch after batch
	for i := range r.Pred {
		r.Pred[i] = -1
	}
	for i, b := range d.Eval {
		t0 := time.Now()
		var x *bittensor.Tensor
		if !sparse {
			var err error
			if x, err = in.Pack(b.Nodes); err != nil {
				return nil, err
			}
		}
		t1 := time.Now()
		var sx *Input
		if sparse {
			sx = in
		}
		logits, st, err := p.forward(b, x, sx, nil, bufs)
		if err != nil {
			return nil, err
		}
		t2 := time.Now()
		r.Pack += t1.Sub(t0)
		r.Compute += t2.Sub(t1)
		r.Stats.InterBytes += st.InterBytes
		r.Stats.UnfusedBytes += st.UnfusedBytes
		r.Nodes += b.N()
		if p.sparseAgg(b) {
			r.EdgeListBatches++
		}
		Argmax(r.Pred, logits, p.Model.Classes, b.Nodes)
		if progress != nil {
			progress(i+1, len(d.Eval))
		}
	}
	return r, nil
}

// byteFirst reports whether op 0 runs as a code aggregation over in's
// feature lists: weights and feature codes of at most 8 bits (wCodes is
// made only then; its zero value has no bits).
func (p *Plan) byteFirst(in *Input) bool { return p.wCodes.Bits > 0 && in.Params.Bits <= 8 }

// SparseCheaper reports whether ForwardSparse's first product is expected
// to cost less than packing the features and multiplying their bit planes,
// with the cost model of AggAuto (CPU cycles): the stored codes times the
// output columns, a vector add (and multiply, unless every code is 1) per
// 16 columns, against the padded bit-MACs of the dense product plus about
// a cycle per packed byte.
func (p *Plan) SparseCheaper(in *Input) bool {
	in.prepare()
	nOut := float64(p.Model.Layers[0].Lin1.Out)
	perCol := 1.0
	if p.byteFirst(in) {
		perCol = 1.0 / sparseColsPerCycle
		if !in.allOnes {
			perCol *= 1.5
		}
	}
	sparse := float64(len(in.Codes)) * nOut * perCol
	pad := bittensor.DefaultPadding.Bits
	k := float64((in.Cols + pad - 1) / pad * pad)
	a, w := float64(in.Params.Bits), float64(p.Model.WBits)
	dense := float64(in.Rows) * k * (nOut*a*w/denseMACsPerCycle + a/8)
	return sparse < dense
}

// opBufs is the storage of one op's output kept from one batch to the
// next by Plan.Run: batches run one after another and an op's output is
// dead once the next op (or the argmax) has read it, so each batch reuses
// the last one's memory, still warm in cache, instead of allocating and
// zeroing fresh memory (on the 1M-node graph that zeroing was about a fifth
// of the pass). A nil *opBufs allocates, as a single forward call does.
type opBufs struct {
	f32   []float32
	codes cpu.Codes
	words []uint64
}

// floats returns n zeroed float32s.
func (o *opBufs) floats(n int) []float32 {
	if o == nil {
		return make([]float32, n)
	}
	if cap(o.f32) < n {
		o.f32 = make([]float32, n)
	}
	o.f32 = o.f32[:n]
	clear(o.f32)
	return o.f32
}

// newCodes returns zeroed rows×cols codes of the given width.
func (o *opBufs) newCodes(rows, cols, bits int) (cpu.Codes, error) {
	if o == nil {
		return cpu.NewCodes(rows, cols, bits)
	}
	c, err := cpu.NewCodesIn(o.codes, rows, cols, bits)
	if err == nil {
		o.codes = c
	}
	return c, err
}

// newTensor returns a zeroed tensor (bittensor.New's arguments, default
// padding).
func (o *opBufs) newTensor(rows, cols, bits int, packing bittensor.Packing) (*bittensor.Tensor, error) {
	if o == nil {
		return bittensor.New(rows, cols, bits, packing, bittensor.DefaultPadding)
	}
	t, err := bittensor.NewIn(o.words, rows, cols, bits, packing, bittensor.DefaultPadding)
	if err == nil {
		o.words = t.Words()
	}
	return t, err
}
