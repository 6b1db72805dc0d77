package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"

	"github.com/qgtc/qgtc/bmm"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/internal/par"
)

// The float simulation of a Model. With quant set it computes every
// product from the integer codes (exactly: float64 sums of integers below
// 2^53), then applies the very epilogues and quantizer the bit kernels use,
// so its codes and logits equal Infer's bit for bit; this is the forward
// pass of quantization-aware training (where GIN's batch norm is frozen:
// its running statistics folded into the epilogue, as inference does), and
// its backward pass is the straight-through estimator. Full-precision
// training normalizes with the batch's statistics (rng set). Without quant it is the full-precision model
// (same batches, same order of operations), which trains the fp32 weights.

// simWeights holds one linear's weights as the product's B operand (K×N).
type simWeights struct {
	params []Params  // per output channel (quant only)
	codes  []float64 // K×N codes (quant only)
	colSum []float64 // Σ_k codes[k][n] (quant only)
	deq    []float64 // K×N values the product sees: dequantized or W itself
}

// weightCache keeps each linear's prepared weights over the batches of a
// pass in which they do not change (evaluation, calibration), where
// prepareWeights would otherwise pick the same per-channel ranges again for
// every batch. A nil cache prepares them every time (training: every step
// moves the weights).
type weightCache map[weightKey]*simWeights

type weightKey struct {
	l     *Linear
	quant bool
}

// get returns l's weights prepared for bits (quant) or full precision.
func (c weightCache) get(l *Linear, bits int, quant bool) *simWeights {
	if c == nil {
		return prepareWeights(l, bits, quant)
	}
	k := weightKey{l, quant}
	w, ok := c[k]
	if !ok {
		w = prepareWeights(l, bits, quant)
		c[k] = w
	}
	return w
}

func prepareWeights(l *Linear, bits int, quant bool) *simWeights {
	w := &simWeights{deq: make([]float64, l.In*l.Out)}
	if !quant {
		for j := 0; j < l.Out; j++ {
			for k := 0; k < l.In; k++ {
				w.deq[k*l.Out+j] = float64(l.W[j*l.In+k])
			}
		}
		return w
	}
	w.params, w.codes = weightParams(l, bits)
	w.colSum = make([]float64, l.Out)
	for k := 0; k < l.In; k++ {
		for j := 0; j < l.Out; j++ {
			q := w.codes[k*l.Out+j]
			w.colSum[j] += q
			w.deq[k*l.Out+j] = dequant(q, w.params[j])
		}
	}
	return w
}

// linEpilogue is the epilogue of H·Wᵀ on codes: per-channel scales and the
// zero-point corrections that make it the product of the dequantized
// values, then D^-1/2, bias and ReLU as op says.
//
//	Σ_k s_h(q_h+z_h)·s_j(q_w+z_j) = s_h s_j·[C + z_j·R_h + z_h·(Σ_k q_w + K·z_j)]
func linEpilogue(op *planOp, ph Params, w *simWeights, k int, rowSums []float32, b *Batch, quant bool) *bmm.Epilogue {
	ep := &bmm.Epilogue{ColBias: op.colBias(), ReLU: op.relu}
	ep.RowScale = op.scale(b)
	if !quant {
		return ep
	}
	n := len(w.params)
	ep.ColScale = make([]float32, n)
	ep.ColTerm = make([]float32, n)
	ep.RowTerm = rowSums
	zh := float64(ph.Zero())
	if zh != 0 {
		ep.ColConst = make([]float32, n)
	}
	for j, pw := range w.params {
		s := float32(ph.Scale * pw.Scale)
		ep.ColScale[j] = s
		ep.ColTerm[j] = float32(s * pw.Zero())
		if zh != 0 {
			ep.ColConst[j] = float32(float64(s) * zh * (w.colSum[j] + float64(k)*float64(pw.Zero())))
		}
	}
	if e := op.outEq; e != nil {
		// (t − shift)/scale per column: every term before the row scale
		// divided, the shift taken from the bias.
		bias := make([]float32, n)
		for j := range bias {
			inv := 1 / e.scale[j]
			ep.ColScale[j] *= inv
			ep.ColTerm[j] *= inv
			if ep.ColConst != nil {
				ep.ColConst[j] *= inv
			}
			b := float32(0)
			if ep.ColBias != nil {
				b = ep.ColBias[j]
			}
			bias[j] = (b - e.shift[j]) * inv
		}
		ep.ColBias = bias
	}
	return ep
}

// aggEpilogue is the epilogue of A·Z with a 1-bit adjacency A and Z's
// per-tensor params: Σ_u A[v][u]·s_z(q+z_z) = s_z·C + s_z z_z·deg(v).
func aggEpilogue(op *planOp, pz Params, n int, b *Batch, quant bool) *bmm.Epilogue {
	ep := &bmm.Epilogue{ColBias: op.colBias(), ReLU: op.relu}
	ep.RowScale = op.scale(b)
	if quant {
		ep.ColScale = make([]float32, n)
		ep.ColTerm = make([]float32, n)
		ep.RowTerm = op.deg(b)
		for j := range ep.ColScale {
			ep.ColScale[j] = pz.Scale
			ep.ColTerm[j] = float32(pz.Scale * pz.Zero())
			if e := op.inEq; e != nil {
				// Σ_u (scale·v + shift) = scale·Σ_u v + shift·deg.
				ep.ColScale[j] *= e.scale[j]
				ep.ColTerm[j] = ep.ColTerm[j]*e.scale[j] + e.shift[j]
			}
		}
	}
	if op.bn != nil {
		bnFold(ep, op.bn, n)
	}
	return ep
}

// bnFold folds bn's running statistics into ep, whose output t (before
// ReLU) becomes scale·t + shift: the scale multiplies ColScale, ColTerm and
// ColConst (RowScale commutes with it), the bias becomes scale·bias + shift.
func bnFold(ep *bmm.Epilogue, bn *BatchNorm, n int) {
	scale, shift := bn.fold()
	mul := func(v []float32) []float32 {
		if v == nil {
			return nil
		}
		out := make([]float32, n)
		for j := range out {
			out[j] = v[j] * scale[j]
		}
		return out
	}
	if ep.ColScale == nil {
		ep.ColScale = scale
	} else {
		ep.ColScale = mul(ep.ColScale)
	}
	ep.ColTerm = mul(ep.ColTerm)
	ep.ColConst = mul(ep.ColConst)
	bias := shift
	if ep.ColBias != nil {
		bias = mul(ep.ColBias)
		for j := range bias {
			bias[j] += shift[j]
		}
	}
	ep.ColBias = bias
}

// simInput is the batch's input: the gathered sparse rows of the features.
type simInput struct {
	indptr, indices []int32
	vals            []float64 // codes (quant) or values
}

func gatherInput(in *Input, nodes []int32, quant bool) *simInput {
	s := &simInput{indptr: make([]int32, len(nodes)+1)}
	for i, v := range nodes {
		for p := in.Indptr[v]; p < in.Indptr[v+1]; p++ {
			s.indices = append(s.indices, in.Indices[p])
			if quant {
				s.vals = append(s.vals, float64(in.Codes[p]))
			} else {
				s.vals = append(s.vals, float64(in.Vals[p]))
			}
		}
		s.indptr[i+1] = int32(len(s.indices))
	}
	return s
}

// simVal is one value of the DAG in a simulated pass (value 0 the batch's
// features, which live in simState.input; value i+1 op i's output).
type simVal struct {
	data  []float64 // n×width, row-major: codes of p when quant, else values
	width int
	quant bool
	p     Params
	deq   []float64 // data dequantized, made when a full-precision op reads codes
	// drop is the dropout mask every linear reading the value shares,
	// drawn (in place) by the first of them: a layer's input is dropped
	// once, whatever reads it.
	drop []bool
	eq   *chanEq // per-channel map of the codes' values (Layer.ZScale)
}

// read returns v as an op reads it: the codes for a quantized op, the
// values (the codes dequantized) for a full-precision one.
func (v *simVal) read(quant bool) []float64 {
	if quant || !v.quant {
		return v.data
	}
	if v.deq == nil {
		v.deq = make([]float64, len(v.data))
		for k, q := range v.data {
			v.deq[k] = dequant(q, v.p)
			if v.eq != nil {
				j := k % v.width
				v.deq[k] = v.deq[k]*float64(v.eq.scale[j]) + float64(v.eq.shift[j])
			}
		}
	}
	return v.deq
}

// simState is what one forward pass keeps for the backward pass. The
// per-op slices are indexed by op; a resumed pass leaves the ops it
// skipped empty.
type simState struct {
	quant   bool // every op quantized (a mixed pass serves no backward pass)
	ops     []planOp
	weights []*simWeights // per op (qLin only)
	input   *simInput     // the features: codes when inCodes, else values
	inCodes bool
	inDeq   *simInput   // the codes dequantized, for a full-precision op of a mixed pass
	dropIn  []bool      // dropped input entries (training, fp32 only; tests: the backward reads the zeroed values)
	vals    []simVal    // the DAG's values
	acts    [][]float64 // dense input of each qLin/qAgg as it read it: codes (quant) or values; nil for the features
	drops   [][]bool    // dropout masks of dense inputs
	outs    [][]float32 // each op's output before quantization (the epilogue's, or the sum's)
	widths  []int       // output width of each op
	inP     []Params    // params of each op's (first) input
	n       int
	batch   *Batch
	codes   [][]int32 // output codes of each quantized op (LSQ's step gradient, tests)
	dropout float32
	// bnXhat and bnInvStd (per op; nil unless the op normalized with its
	// batch's statistics): the normalized values and 1/√(σ² + ε).
	bnXhat   [][]float64
	bnInvStd [][]float64
	// extra holds gradients at values from readers outside the DAG (the
	// graph readout's per-layer heads), added to what the ops give them.
	extra map[int][]float64
	// bnMean and bnVar are those batch statistics (preciseBN).
	bnMean, bnVar [][]float64
}

// features returns the batch's features as op reads them: as gathered, or
// dequantized with p for a full-precision op of a pass that gathered codes
// (calibration's mixed passes, where a later op reads the input).
func (st *simState) features(quant bool, p Params) *simInput {
	if quant || !st.inCodes {
		return st.input
	}
	if st.inDeq == nil {
		s := *st.input
		s.vals = make([]float64, len(st.input.vals))
		for k, q := range st.input.vals {
			s.vals[k] = dequant(q, p)
		}
		st.inDeq = &s
	}
	return st.inDeq
}

// parFor runs f over [0, n) split in chunks across the CPUs.
func parFor(n int, f func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if n < 64 || w == 1 {
		f(0, n)
		return
	}
	chunk := (n + w - 1) / w
	par.Run((n+chunk-1)/chunk, func(i int) { f(i*chunk, min(n, (i+1)*chunk)) })
}

// simForward runs the model on batch b. stopAt ≥ 0 stops after that op and
// returns its epilogue output instead of the logits (calibration). With
// rng non-nil and dropout > 0 (full precision only), the inputs of the
// linears are dropped out, except GIN's MLP hidden units when the MLP has a
// batch norm: dropout next to batch norm shifts the variance between
// training and inference (Li et al., 2019; the measurements are in
// bench/accuracy/RESULTS.md).
func (m *Model) simForward(b *Batch, in *Input, quant bool, stopAt int, dropout float32, rng *rand.Rand) (*simState, []float32, error) {
	return m.simRun(b, in, qUpTo(quant), stopAt, dropout, true, rng, nil, nil)
}

// qUpTo is the upTo of simRun that quantizes every op (quant) or none.
func qUpTo(quant bool) int {
	if quant {
		return math.MaxInt
	}
	return 0
}

// simForwardUpTo is simForward with the ops before upTo quantized (their
// weights and outputs) and the rest in full precision, fed the dequantized
// values at the boundary: calibration measures one quantizer's effect on
// the logits this way. upTo 0 is the full-precision model, len(ops) or more
// the quantized one.
func (m *Model) simForwardUpTo(b *Batch, in *Input, upTo, stopAt int, dropout float32, rng *rand.Rand) (*simState, []float32, error) {
	return m.simRun(b, in, upTo, stopAt, dropout, true, rng, nil, nil)
}

// resume starts a pass at op from, with vals holding the values made
// before it (value 0 aside, which the pass gathers itself).
type resume struct {
	from int
	vals []simVal
}

// simRun is simForwardUpTo, started at res when res is non-nil
// (calibration then skips the ops before res.from, which do not change
// while it weighs one tensor's candidate ranges); the state it returns
// then covers only the ops it ran and serves no backward pass. The
// weights come from wc (nil: prepared now). Without dropInput, dropout
// spares the input features (TrainConfig.KeepInput).
func (m *Model) simRun(b *Batch, in *Input, upTo, stopAt int, dropout float32, dropInput bool, rng *rand.Rand, res *resume, wc weightCache) (*simState, []float32, error) {
	quant := upTo > 0
	if in.Cols != m.Layers[0].Lin1.In {
		return nil, nil, fmt.Errorf("%w: features have %d columns, the model takes %d", ErrModel, in.Cols, m.Layers[0].Lin1.In)
	}
	if quant && in.Params != m.Input {
		return nil, nil, fmt.Errorf("%w: features quantized with %+v, the model expects %+v", ErrModel, in.Params, m.Input)
	}
	ops := m.ops()
	no := len(ops)
	st := &simState{quant: quant, ops: ops, n: b.N(), batch: b, dropout: dropout, inCodes: quant,
		weights: make([]*simWeights, no), vals: make([]simVal, no+1), acts: make([][]float64, no),
		drops: make([][]bool, no), outs: make([][]float32, no), widths: make([]int, no), inP: make([]Params, no),
		codes: make([][]int32, no), bnXhat: make([][]float64, no), bnInvStd: make([][]float64, no),
		bnMean: make([][]float64, no), bnVar: make([][]float64, no)}
	if upTo < no && upTo > 0 {
		st.quant = false // mixed: no backward pass
	}
	if m.NormRows && b.FeatScale == nil {
		return nil, nil, fmt.Errorf("%w: the model normalizes feature rows but the batch has no FeatScale", ErrModel)
	}
	if rng == nil || quant {
		st.dropout = 0
	}
	from := 0
	if res != nil {
		from, st.dropout = res.from, 0
		copy(st.vals, res.vals)
	}
	st.input = gatherInput(in, b.Nodes, quant)
	if st.dropout > 0 && dropInput {
		st.dropIn = dropOut(st.input.vals, st.dropout, rng)
	}
	st.vals[0] = simVal{width: in.Cols, quant: quant, p: m.Input}
	n := b.N()
	for i := from; i < no; i++ {
		op := &ops[i]
		q := i < upTo
		src := &st.vals[op.in[0]]
		st.inP[i] = src.p
		var y []float32
		width := src.width
		switch op.kind {
		case qLin, qAgg:
			var c []float64
			var ep *bmm.Epilogue
			if op.kind == qLin {
				w := wc.get(op.lin, m.linBits(op.lin), q)
				st.weights[i] = w
				width = op.lin.Out
				wsrc := w.deq
				if q {
					wsrc = w.codes
				}
				var rowSums []float32
				if op.in[0] == 0 {
					s := st.features(q, m.Input)
					c = spmmDense(s, wsrc, n, width)
					if q {
						rowSums = sparseRowSums(s)
					}
				} else {
					h := src.read(q)
					if st.dropout > 0 && !op.keep {
						if src.drop == nil {
							src.drop = dropOut(h, st.dropout, rng)
						}
						st.drops[i] = src.drop
					}
					st.acts[i] = h
					c = matMul(h, wsrc, n, src.width, width)
					if q {
						rowSums = denseRowSums(h, n, src.width)
					}
				}
				ep = linEpilogue(op, src.p, w, src.width, rowSums, b, q)
			} else {
				h := src.read(q)
				st.acts[i] = h
				indptr, indices := op.graph(b)
				c = aggregate(indptr, indices, h, width)
				if op.bn != nil && rng != nil {
					// Training: the epilogue up to the bias; the batch norm
					// with the batch's statistics and the ReLU follow.
					raw := *op
					raw.bn, raw.relu = nil, false
					ep = aggEpilogue(&raw, src.p, width, b, q)
				} else {
					ep = aggEpilogue(op, src.p, width, b, q)
				}
			}
			y = make([]float32, n*width)
			parFor(n, func(lo, hi int) {
				for r := lo; r < hi; r++ {
					for j := 0; j < width; j++ {
						y[r*width+j] = ep.ApplyFloat(float32(c[r*width+j]), r, j)
					}
				}
			})
			if op.kind == qAgg && op.bn != nil && rng != nil {
				st.bnXhat[i], st.bnInvStd[i], st.bnMean[i], st.bnVar[i] = bnTrain(op.bn, y, n, width, op.relu)
			}
		case qAdd:
			x, z := src.data, st.vals[op.in[1]].data
			y = make([]float32, n*width)
			for k := range y {
				y[k] = bmm.AddValue(float32(x[k]), float32(z[k]), op.relu)
			}
		}
		st.widths[i] = width
		st.outs[i] = y
		if i == stopAt || i == no-1 {
			return st, y, nil
		}
		v := simVal{data: make([]float64, n*width), width: width}
		if q && op.out != nil {
			p := *op.out
			inv, off := p.Requant()
			codes := make([]int32, n*width)
			for j, x := range y {
				c := qQuant(x, inv, off, p.Bits)
				codes[j] = int32(c)
				v.data[j] = float64(c)
			}
			st.codes[i] = codes
			v.quant, v.p, v.eq = true, p, op.outEq
		} else {
			for j, x := range y {
				v.data[j] = float64(x)
			}
		}
		st.vals[i+1] = v
	}
	return st, st.outs[no-1], nil
}

// dropOut zeroes each of vals with probability p (one rng draw each, in
// order) and scales the others by 1/(1−p); it returns which it dropped.
func dropOut(vals []float64, p float32, rng *rand.Rand) []bool {
	drop := make([]bool, len(vals))
	keep := 1 / (1 - float64(p))
	for i := range vals {
		if rng.Float32() < p {
			drop[i] = true
			vals[i] = 0
		} else {
			vals[i] *= keep
		}
	}
	return drop
}

// bnTrain normalizes y (n×w, the values before the batch norm) in place
// with the batch's statistics, applies bn's affine map and the ReLU when
// relu, and updates bn's running statistics (unbiased variance, momentum
// learn.BNMomentum, as PyTorch). It returns the normalized values and
// 1/√(σ² + ε) per channel for the backward pass, and the batch's mean and
// variance (the biased one it normalized with) per channel.
func bnTrain(bn *BatchNorm, y []float32, n, w int, relu bool) (xhat, invStd, means, vars []float64) {
	xhat, invStd = make([]float64, n*w), make([]float64, w)
	means, vars = make([]float64, w), make([]float64, w)
	for j := 0; j < w; j++ {
		var mean, v float64
		for r := 0; r < n; r++ {
			mean += float64(y[r*w+j])
		}
		mean /= float64(n)
		for r := 0; r < n; r++ {
			d := float64(y[r*w+j]) - mean
			v += d * d
		}
		v /= float64(n)
		is := 1 / math.Sqrt(v+learn.BNEps)
		invStd[j] = is
		g, be := float64(bn.Gamma[j]), float64(bn.Beta[j])
		for r := 0; r < n; r++ {
			k := r*w + j
			xh := (float64(y[k]) - mean) * is
			xhat[k] = xh
			o := float32(g*xh + be)
			if relu && !(o > 0) {
				o = 0
			}
			y[k] = o
		}
		unbiased := v
		if n > 1 {
			unbiased = v * float64(n) / float64(n-1)
		}
		bn.Mean[j] = float32((1-learn.BNMomentum)*float64(bn.Mean[j]) + learn.BNMomentum*mean)
		bn.Var[j] = float32((1-learn.BNMomentum)*float64(bn.Var[j]) + learn.BNMomentum*unbiased)
		means[j], vars[j] = mean, v
	}
	return xhat, invStd, means, vars
}

// spmmDense returns S·B for sparse S (n rows) and dense B (K×w).
func spmmDense(s *simInput, bm []float64, n, w int) []float64 {
	out := make([]float64, n*w)
	parFor(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := out[r*w : (r+1)*w]
			for p := s.indptr[r]; p < s.indptr[r+1]; p++ {
				v := s.vals[p]
				if v == 0 {
					continue
				}
				row := bm[int(s.indices[p])*w : int(s.indices[p]+1)*w]
				for j, x := range row {
					o[j] += v * x
				}
			}
		}
	})
	return out
}

// matMul returns A·B for dense A (n×k) and B (k×w).
func matMul(a, bm []float64, n, k, w int) []float64 {
	out := make([]float64, n*w)
	parFor(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := out[r*w : (r+1)*w]
			for kk, v := range a[r*k : (r+1)*k] {
				if v == 0 {
					continue
				}
				row := bm[kk*w : (kk+1)*w]
				for j, x := range row {
					o[j] += v * x
				}
			}
		}
	})
	return out
}

// aggregate returns A·Z for the CSR adjacency A (indptr, indices).
func aggregate(indptr, indices []int32, z []float64, w int) []float64 {
	n := len(indptr) - 1
	out := make([]float64, n*w)
	parFor(n, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			o := out[v*w : (v+1)*w]
			for _, u := range indices[indptr[v]:indptr[v+1]] {
				for j, x := range z[int(u)*w : int(u+1)*w] {
					o[j] += x
				}
			}
		}
	})
	return out
}

func sparseRowSums(s *simInput) []float32 {
	out := make([]float32, len(s.indptr)-1)
	for r := range out {
		var t float64
		for _, v := range s.vals[s.indptr[r]:s.indptr[r+1]] {
			t += v
		}
		out[r] = float32(t)
	}
	return out
}

func denseRowSums(a []float64, n, k int) []float32 {
	out := make([]float32, n)
	for r := range out {
		var t float64
		for _, v := range a[r*k : (r+1)*k] {
			t += v
		}
		out[r] = float32(t)
	}
	return out
}

// simGrads are the gradients of every linear's weights and biases, in the
// Linear layout, of the batch norms' Gamma and Beta, and of the
// activation quantizers' step sizes.
type simGrads struct {
	w, b        map[*Linear][]float32
	gamma, beta map[*BatchNorm][]float32 // nil maps: not accumulated
	scale       map[*Params][]float32    // LSQ (one value each); nil: not learned
}

// scaleGrad is the LSQ gradient (Esser et al., 2020) of the step size of
// p, the quantizer of y with codes q, given dOut, the gradient at the
// dequantized values x̂ = s·(q + Lower/s + 1/2): with Lower/s held fixed
// (the zero point stays put in units of the step), ∂x̂/∂s is
// (q + Lower/s + 1/2) − y/s where y is inside the range and the clamped
// code's (q + Lower/s + 1/2) where it is clipped; the sum is scaled by
// 1/√(N·Qmax), LSQ's gradient scale.
func scaleGrad(p Params, y []float32, q []int32, dOut []float64) float64 {
	s := float64(p.Scale)
	c := float64(p.Lower)/s + 0.5
	inv, off := p.Requant()
	top := float64(p.MaxCode())
	var g float64
	for k, v := range y {
		if dOut[k] == 0 {
			continue
		}
		u := float64(v)*float64(inv) + float64(off) // the code before floor and clamp
		d := float64(q[k]) + c
		if u >= 0 && u < top+1 {
			d -= float64(v) / s
		}
		g += dOut[k] * d
	}
	return g / math.Sqrt(float64(len(y))*top)
}

// simBackward propagates dLogits (n×classes) through st with the
// straight-through estimator: a quantizer passes the gradient where its
// input lies inside its range and stops it where it clipped; weights pass
// it unchanged. The ops run in reverse, each value's gradient the sum over
// the ops that read it. Gradients accumulate into g.
func (m *Model) simBackward(st *simState, dLogits []float64, g *simGrads) {
	n := st.n
	dv := make([][]float64, len(st.ops)+1) // the gradient at each value
	dv[len(st.ops)] = dLogits
	for v, d := range st.extra {
		dv[v] = d
	}
	// flow adds d into the gradient of value v; d is not used after.
	flow := func(v int, d []float64) {
		if dv[v] == nil {
			dv[v] = d
			return
		}
		for k, x := range d {
			dv[v][k] += x
		}
	}
	for i := len(st.ops) - 1; i >= 0; i-- {
		op := &st.ops[i]
		dt := dv[i+1] // the gradient at the op's output, then at its pre-activation, times RowScale
		if dt == nil {
			continue // a value nothing read
		}
		width := st.widths[i]
		y := st.outs[i]
		// The straight-through mask is package quantize's: where the
		// quantizer did not clamp.
		var inRange []bool
		if st.quant && op.out != nil {
			inRange = make([]bool, len(y))
			if err := op.out.FakeQuantTo(make([]float32, len(y)), inRange, y); err != nil {
				clear(inRange) // NaN activations: stop the gradient
			}
		}
		if gs := g.scale[op.out]; gs != nil && st.quant && st.codes[i] != nil {
			d := dt // the gradient at the real values; the codes' values are (real − shift)/scale
			if e := op.outEq; e != nil {
				d = make([]float64, len(dt))
				for k, x := range dt {
					d[k] = x * float64(e.scale[k%width])
				}
			}
			gs[0] += float32(scaleGrad(*op.out, y, st.codes[i], d))
		}
		rs := op.scale(st.batch)
		var bias []float32
		if op.colBias() != nil {
			bias = make([]float32, width)
		}
		for k, v := range y {
			if (op.relu && !(v > 0)) || (inRange != nil && !inRange[k]) {
				dt[k] = 0
			}
		}
		if op.bn != nil {
			bnBackward(op.bn, dt, st.bnXhat[i], st.bnInvStd[i], n, width, g)
		}
		for r := 0; r < n; r++ {
			for j := 0; j < width; j++ {
				k := r*width + j
				if bias != nil {
					bias[j] += float32(dt[k])
				}
				if rs != nil {
					dt[k] *= float64(rs[r])
				}
			}
		}
		if bias != nil {
			gb := g.b[op.biasOf]
			for j, v := range bias {
				gb[j] += v
			}
		}
		switch op.kind {
		case qAdd:
			flow(op.in[0], slices.Clone(dt))
			flow(op.in[1], dt)
		case qAgg:
			// A is symmetric: Aᵀ·dT = A·dT.
			indptr, indices := op.graph(st.batch)
			flow(op.in[0], aggregate(indptr, indices, dt, width))
		case qLin:
			w := st.weights[i]
			l := op.lin
			// Ĥ: the op's input, dense or the sparse features' values,
			// dequantized.
			h := st.acts[i]
			sparse := h == nil
			if sparse {
				h = st.input.vals
			}
			if st.quant {
				h = dequantAll(h, st.inP[i])
			}
			weightGrad(g.w[l], dt, n, width, l, h, sparse, st.input)
			if op.in[0] == 0 {
				continue // the features take no gradient
			}
			flow(op.in[0], inputGrad(dt, w, n, l, st.drops[i], st.dropout))
		}
	}
}

// dequantAll returns the values of codes h of p.
func dequantAll(h []float64, p Params) []float64 {
	deq := make([]float64, len(h))
	for k, q := range h {
		deq[k] = dequant(q, p)
	}
	return deq
}

// inputGrad is the gradient at linear l's input (n rows) from dt, the
// gradient at its output: dĤ = dT·Ŵᵀ, then through the dropout mask drop
// (nil: none) of rate dropout.
func inputGrad(dt []float64, w *simWeights, n int, l *Linear, drop []bool, dropout float32) []float64 {
	dh := make([]float64, n*l.In)
	parFor(n, func(rlo, rhi int) {
		for r := rlo; r < rhi; r++ {
			drow := dt[r*l.Out : (r+1)*l.Out]
			o := dh[r*l.In : (r+1)*l.In]
			for kk := range o {
				var s float64
				wr := w.deq[kk*l.Out : (kk+1)*l.Out]
				for j, d := range drow {
					s += d * wr[j]
				}
				o[kk] = s
			}
		}
	})
	if drop != nil {
		keep := 1 / (1 - float64(dropout))
		for k := range dh {
			if drop[k] {
				dh[k] = 0
			} else {
				dh[k] *= keep
			}
		}
	}
	return dh
}

// bnBackward turns dt, the gradient at bn's output, into the gradient at
// its input, and accumulates Gamma's and Beta's gradients into g. With
// xhat nil the pass was an evaluation one: bn was the folded affine map.
func bnBackward(bn *BatchNorm, dt, xhat, invStd []float64, n, w int, g *simGrads) {
	if xhat == nil {
		scale, _ := bn.fold()
		for k := range dt {
			dt[k] *= float64(scale[k%w])
		}
		return
	}
	gg, gb := g.gamma[bn], g.beta[bn]
	for j := 0; j < w; j++ {
		var sd, sdx float64
		for r := 0; r < n; r++ {
			k := r*w + j
			sd += dt[k]
			sdx += dt[k] * xhat[k]
		}
		if gg != nil {
			gg[j] += float32(sdx)
			gb[j] += float32(sd)
		}
		c := float64(bn.Gamma[j]) * invStd[j] / float64(n)
		for r := 0; r < n; r++ {
			k := r*w + j
			dt[k] = c * (float64(n)*dt[k] - sd - xhat[k]*sdx)
		}
	}
}

// weightGrad accumulates dW[j][k] += Σ_r dT[r][j]·Ĥ[r][k] into gw (l's
// Out×In layout) for dT (n×width) and the op's input Ĥ: dense h (n×In) or,
// when sparse, the values h of the features s.
func weightGrad(gw []float32, dt []float64, n, width int, l *Linear, h []float64, sparse bool, s *simInput) {
	parFor(l.Out, func(jlo, jhi int) {
		for r := 0; r < n; r++ {
			drow := dt[r*width : (r+1)*width]
			if sparse {
				for p := s.indptr[r]; p < s.indptr[r+1]; p++ {
					hv := h[p]
					if hv == 0 {
						continue
					}
					kk := int(s.indices[p])
					for j := jlo; j < jhi; j++ {
						gw[j*l.In+kk] += float32(drow[j] * hv)
					}
				}
				continue
			}
			hrow := h[r*l.In : (r+1)*l.In]
			for j := jlo; j < jhi; j++ {
				d := drow[j]
				if d == 0 {
					continue
				}
				gr := gw[j*l.In : (j+1)*l.In]
				for kk, hv := range hrow {
					gr[kk] += float32(d * hv)
				}
			}
		}
	})
}
