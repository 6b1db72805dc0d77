package layers

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/quantize"
)

// Errors of the quantized models; wrapped with the value at fault.
var (
	// ErrModel: a quantized model is malformed or does not fit its input.
	ErrModel = errors.New("layers: bad quantized model")
	// ErrBits: a bit width outside 1..32.
	ErrBits = errors.New("layers: bit width out of range 1..32")
)

// Model kinds of Model.
const (
	GCN = "gcn" // Cluster-GCN order: Â·(H·W) + b
	GIN = "gin" // GIN-0: MLP(h + Σ neighbours), first linear applied before the sum (Model.Aggr)
	// SAGE is GraphSAGE with the mean aggregator and a root weight
	// (torch_geometric's SAGEConv): lin_l(mean of the neighbours) +
	// lin_r(h), the mean taken after lin_l (it is linear), over the
	// neighbours without the node itself.
	SAGE = "sage"
)

// kinds lists the model kinds, for messages.
const kinds = "gcn, gin or sage"

func knownKind(k string) bool { return k == GCN || k == GIN || k == SAGE }

// Normalizations of the quantized GIN's MLP (Model.SetNorm).
const (
	NormNone  = "none"  // Linear, ReLU, Linear
	NormBatch = "batch" // Linear, BatchNorm, ReLU, Linear
)

// Aggregations of the quantized GIN (Model.Aggr).
const (
	AggrSum = "sum" // GIN-0: h + Σ neighbours (Xu et al.)
	// AggrMean is the mean of h and its neighbours, Xu et al.'s MEAN–MLP:
	// no longer injective on multisets, but on graphs of high mean degree
	// the sum's scale follows the degree and GIN trains points below GCN
	// (bench/accuracy/RESULTS.md).
	AggrMean = "mean"
)

// Linear is a dense layer y = x·Wᵀ + b with W stored Out×In row-major (the
// PyTorch layout, so state dicts map one to one).
type Linear struct {
	In, Out int
	W       []float32 // Out×In
	B       []float32 // Out, or nil
	// Sign makes its 1-bit weights ±mean|w| per output channel
	// (signParams) instead of the two levels of least squared error, the
	// rule of the model files before format 4 (Model.SetSignWeights).
	Sign bool
}

// Model is a GCN, GIN or GraphSAGE whose every product runs on bit tensors: the float
// master weights plus the quantization parameters of each tensor that is
// quantized on the way (see the package comment). The same model runs three
// ways that agree: Infer (bit kernels), the integer simulation used by
// quantization-aware training, and, with Quantized false, full precision.
type Model struct {
	Kind    string // GCN, GIN or SAGE
	Classes int
	Layers  []Layer

	// ABits is the width of every activation (features, hidden layers and
	// the re-quantized update products), WBits of the weights.
	ABits, WBits int
	// Input quantizes the node features (1 bit, exact, for binary features).
	Input Params
	// Calibrated says the activation parameters are set (PTQ or QAT).
	Calibrated bool
	// NormRows normalizes each node's feature row to sum 1 (as GCN's and
	// gnn-benchmark's preprocessing do) by a row scale in the first
	// product's epilogue: the features keep their exact codes (1 bit when
	// binary) and the scale is applied in float32 after the integer sum.
	NormRows bool
	// ChannelZ makes Calibrate set each layer's ZScale and ZShift (from the
	// channels' mean and mean absolute deviation); without it Calibrate
	// clears them.
	ChannelZ bool
	// LastBits, when above ABits or WBits, widens the last layer: its
	// weights and the activations it quantizes (Z, and GIN's U) take
	// LastBits. A 1-bit output layer's ±α weights make every hidden unit
	// vote for or against every class alike (bench/accuracy/RESULTS.md).
	LastBits int
	// Aggr is a GIN's aggregation, AggrSum ("" reads as it) or AggrMean:
	// the same bit product over the adjacency with its self-loops, with
	// 1/(degree + 1) as the epilogue's row scale where GCN has D^-1/2.
	Aggr string
}

// GINMean reports whether m is a GIN that averages (Aggr AggrMean).
func (m *Model) GINMean() bool { return m.Kind == GIN && m.Aggr == AggrMean }

// AggrOf is m's aggregation as a flag names it: AggrSum or AggrMean for a
// GIN, "" for the other kinds, whose aggregation their kind fixes.
func (m *Model) AggrOf() string {
	switch {
	case m.Kind != GIN:
		return ""
	case m.Aggr == "":
		return AggrSum
	}
	return m.Aggr
}

// lastLayer reports whether l is a linear of m's last layer.
func (m *Model) lastLayer(l *Linear) bool {
	ly := &m.Layers[len(m.Layers)-1]
	return l == &ly.Lin1 || (l != nil && l == ly.Lin2)
}

// linBits is the width of l's weights: WBits, or LastBits on the last
// layer where that is wider.
func (m *Model) linBits(l *Linear) int {
	if m.lastLayer(l) {
		return max(m.WBits, m.LastBits)
	}
	return m.WBits
}

// actBits is the width Calibrate gives the activation quantizer p: ABits,
// or LastBits for the last layer's where that is wider.
func (m *Model) actBits(p *Params) int {
	ly := &m.Layers[len(m.Layers)-1]
	if p == &ly.Z || p == &ly.U {
		return max(m.ABits, m.LastBits)
	}
	return m.ABits
}

// BatchNorm is the batch normalization of a GIN MLP's hidden layer (after
// the first linear, before the ReLU, as torch_geometric's GIN MLP): y =
// Gamma·(x − μ)/√(σ² + ε) + Beta, with the batch's statistics in fp32
// training and the running ones (Mean, Var) in QAT and at evaluation, where
// it is folded into the aggregation's epilogue (bnFold).
type BatchNorm struct {
	Gamma, Beta []float32
	Mean, Var   []float32 // running statistics
}

func newBatchNorm(n int) *BatchNorm {
	bn := &BatchNorm{Gamma: make([]float32, n), Beta: make([]float32, n), Mean: make([]float32, n), Var: make([]float32, n)}
	for i := range bn.Gamma {
		bn.Gamma[i], bn.Var[i] = 1, 1
	}
	return bn
}

func (bn *BatchNorm) clone() *BatchNorm {
	return &BatchNorm{Gamma: slices.Clone(bn.Gamma), Beta: slices.Clone(bn.Beta), Mean: slices.Clone(bn.Mean), Var: slices.Clone(bn.Var)}
}

// fold returns evaluation's affine map of bn (learn.FoldBN): the one
// definition both the simulation and the bit kernels use.
func (bn *BatchNorm) fold() (scale, shift []float32) {
	return learn.FoldBN(bn.Gamma, bn.Beta, bn.Mean, bn.Var)
}

// Layer is one graph layer. GCN uses Lin1 (bias applied after the
// aggregation); GIN uses Lin1 (bias after the aggregation, then batch norm
// BN and ReLU) and Lin2 (the MLP's second linear); SAGE uses Lin1 as
// lin_l (the neighbours' weight, its bias added after the mean) and Lin2
// as lin_r (the root weight, no bias), both reading the layer's input.
type Layer struct {
	Lin1 Linear
	Lin2 *Linear
	BN   *BatchNorm // GIN only

	// Z quantizes the update product H·W (GCN: D^-1/2·H·W; SAGE: H·W_lᵀ),
	// signed; it is the right operand of the aggregation.
	Z Params
	// U (GIN only) quantizes ReLU(BN(A·Z + b1)), the MLP's hidden activation.
	U Params
	// Out quantizes the layer's output, the next layer's input; unused on
	// the last layer, which emits float32 logits.
	Out Params
	// ZScale and ZShift (nil: none) give Z per-channel ranges through its
	// per-tensor quantizer: Z's epilogue emits (Z − ZShift)/ZScale per
	// column, and the aggregation's epilogue multiplies back and adds
	// ZShift·deg, both folded into per-column terms the kernels already
	// have. One pair of levels for all of Z's channels is what 1-bit
	// activations cannot afford (Model.ChannelZ).
	ZScale, ZShift []float32
}

// NewModel returns a randomly initialised (Glorot) kind model: in → hidden
// (× layers−1) → classes, with activation and weight widths abits, wbits.
// A GIN has no batch norm (NormNone, the better choice on Cora and
// CiteSeer: bench/accuracy/RESULTS.md); SetNorm adds it.
func NewModel(kind string, in, hidden, classes, layers, abits, wbits int, seed uint64) (*Model, error) {
	if !knownKind(kind) {
		return nil, fmt.Errorf("%w: model %q (want %s)", ErrModel, kind, kinds)
	}
	if layers < 1 || in < 1 || hidden < 1 || classes < 1 {
		return nil, fmt.Errorf("%w: %d layers, %d inputs, %d hidden, %d classes", ErrModel, layers, in, hidden, classes)
	}
	if err := checkBits(abits, wbits); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	m := &Model{Kind: kind, Classes: classes, ABits: abits, WBits: wbits, NormRows: true}
	for l := 0; l < layers; l++ {
		fi, fo := hidden, hidden
		if l == 0 {
			fi = in
		}
		if l == layers-1 {
			fo = classes
		}
		var ly Layer
		switch kind {
		case GCN:
			ly.Lin1 = glorot(r, fi, fo)
		case SAGE:
			ly.Lin1 = glorot(r, fi, fo)
			root := glorot(r, fi, fo)
			root.B = nil
			ly.Lin2 = &root
		default:
			ly.Lin1 = glorot(r, fi, hidden)
			l2 := glorot(r, hidden, fo)
			ly.Lin2 = &l2
		}
		m.Layers = append(m.Layers, ly)
	}
	return m, nil
}

func glorot(r *rand.Rand, in, out int) Linear {
	a := math.Sqrt(6 / float64(in+out))
	l := Linear{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
	for i := range l.W {
		l.W[i] = float32((2*r.Float64() - 1) * a)
	}
	return l
}

func checkBits(abits, wbits int) error {
	if abits < 1 || abits > 32 {
		return fmt.Errorf("%w: activation bits %d", ErrBits, abits)
	}
	if wbits < 1 || wbits > 32 {
		return fmt.Errorf("%w: weight bits %d", ErrBits, wbits)
	}
	return nil
}

// Norm is the normalization of m's GIN MLPs: NormBatch when its layers
// have a batch norm, else NormNone (always for GCN).
func (m *Model) Norm() string {
	for _, ly := range m.Layers {
		if ly.BN != nil {
			return NormBatch
		}
	}
	return NormNone
}

// SetNorm gives every layer of a GIN a fresh batch norm (NormBatch) or
// removes them (NormNone); call it before training. GCN takes only
// NormNone.
func (m *Model) SetNorm(norm string) error {
	switch {
	case norm != NormNone && norm != NormBatch:
		return fmt.Errorf("%w: norm %q (want none or batch)", ErrModel, norm)
	case norm == NormBatch && m.Kind != GIN:
		return fmt.Errorf("%w: norm %q: only GIN has a batch norm", ErrModel, norm)
	}
	for i := range m.Layers {
		ly := &m.Layers[i]
		switch {
		case norm == NormNone:
			ly.BN = nil
		case ly.BN == nil:
			ly.BN = newBatchNorm(ly.Lin1.Out)
		}
	}
	return nil
}

// SetSignWeights sets the 1-bit weight rule of every linear of m
// (Linear.Sign); call it before calibrating.
func (m *Model) SetSignWeights(on bool) {
	for _, l := range m.linears() {
		l.Sign = on
	}
}

// SignWeights says whether m's linears binarize their weights by sign.
func (m *Model) SignWeights() bool {
	ls := m.linears()
	return len(ls) > 0 && ls[0].Sign
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := *m
	c.Layers = make([]Layer, len(m.Layers))
	for i, ly := range m.Layers {
		c.Layers[i] = ly
		c.Layers[i].Lin1 = ly.Lin1.clone()
		if ly.Lin2 != nil {
			l2 := ly.Lin2.clone()
			c.Layers[i].Lin2 = &l2
		}
		if ly.BN != nil {
			c.Layers[i].BN = ly.BN.clone()
		}
	}
	return &c
}

func (l Linear) clone() Linear {
	l.W = append([]float32(nil), l.W...)
	if l.B != nil {
		l.B = append([]float32(nil), l.B...)
	}
	return l
}

// Validate checks the shapes chain from in features to Classes.
func (m *Model) Validate(in int) error {
	if !knownKind(m.Kind) {
		return fmt.Errorf("%w: kind %q (want %s)", ErrModel, m.Kind, kinds)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%w: no layers", ErrModel)
	}
	if err := checkBits(m.ABits, m.WBits); err != nil {
		return err
	}
	switch {
	case m.Aggr != "" && m.Aggr != AggrSum && m.Aggr != AggrMean:
		return fmt.Errorf("%w: aggregation %q (want %s or %s)", ErrModel, m.Aggr, AggrSum, AggrMean)
	case m.Aggr != "" && m.Kind != GIN:
		return fmt.Errorf("%w: aggregation %q: only GIN's is chosen (%s's is fixed)", ErrModel, m.Aggr, m.Kind)
	}
	if m.LastBits != 0 {
		if err := checkBits(m.LastBits, m.LastBits); err != nil {
			return fmt.Errorf("last layer: %w", err)
		}
	}
	prev := in
	for i, ly := range m.Layers {
		if m.Kind == SAGE {
			if ly.Lin2 == nil || ly.BN != nil || ly.Lin2.B != nil {
				return fmt.Errorf("%w: SAGE layer %d needs lin_l, lin_r without bias and no batch norm", ErrModel, i)
			}
			for j, l := range []*Linear{&ly.Lin1, ly.Lin2} {
				if l.In != prev || l.Out != ly.Lin1.Out || len(l.W) != l.In*l.Out || (l.B != nil && len(l.B) != l.Out) {
					return fmt.Errorf("%w: layer %d linear %d is %d→%d with %d weights and %d biases, input width %d",
						ErrModel, i, j+1, l.In, l.Out, len(l.W), len(l.B), prev)
				}
			}
			prev = ly.Lin1.Out
			continue
		}
		lins := []*Linear{&ly.Lin1}
		if m.Kind == GIN {
			if ly.Lin2 == nil {
				return fmt.Errorf("%w: GIN layer %d has no second linear", ErrModel, i)
			}
			lins = append(lins, ly.Lin2)
			bn, n := ly.BN, ly.Lin1.Out
			if bn != nil && (len(bn.Gamma) != n || len(bn.Beta) != n || len(bn.Mean) != n || len(bn.Var) != n) {
				return fmt.Errorf("%w: GIN layer %d has a batch norm of width %d, its hidden width is %d", ErrModel, i, len(bn.Gamma), n)
			}
		} else if ly.BN != nil {
			return fmt.Errorf("%w: GCN layer %d has a batch norm", ErrModel, i)
		}
		for j, l := range lins {
			if l.In != prev || len(l.W) != l.In*l.Out || (l.B != nil && len(l.B) != l.Out) {
				return fmt.Errorf("%w: layer %d linear %d is %d→%d with %d weights and %d biases, input width %d",
					ErrModel, i, j+1, l.In, l.Out, len(l.W), len(l.B), prev)
			}
			prev = l.Out
		}
	}
	for i, ly := range m.Layers {
		if n := ly.Lin1.Out; (ly.ZScale != nil || ly.ZShift != nil) && (len(ly.ZScale) != n || len(ly.ZShift) != n) {
			return fmt.Errorf("%w: layer %d has %d Z scales and %d shifts for %d channels", ErrModel, i, len(ly.ZScale), len(ly.ZShift), n)
		}
		for j, c := range ly.ZScale {
			if !(c > 0) || math.IsInf(float64(c), 0) || math.IsNaN(float64(ly.ZShift[j])) || math.IsInf(float64(ly.ZShift[j]), 0) {
				return fmt.Errorf("%w: layer %d channel %d has Z scale %v and shift %v (want a positive scale, finite both)", ErrModel, i, j, c, ly.ZShift[j])
			}
		}
	}
	if prev != m.Classes {
		return fmt.Errorf("%w: last layer has %d outputs for %d classes", ErrModel, prev, m.Classes)
	}
	return nil
}

// opKind is one step of the flattened model.
type opKind uint8

const (
	qLin opKind = iota // H·Wᵀ: activation codes times weight codes
	qAgg               // A·Z: 1-bit adjacency times the update codes
	qAdd               // X + Y: the join of two float values
)

// planOp is one step of the flattened model with its epilogue settings and
// the quantizer of its output (nil: the output stays float32, as the
// logits and the branches a qAdd joins). The ops form a small DAG: value 0
// is the batch's input features, value i+1 the output of op i, and in
// names the values an op reads (a chain reads the one before). qLin and
// qAgg read codes (value 0 or a quantized output), qAdd two float values.
type planOp struct {
	kind opKind
	in   []int
	lin  *Linear // qLin
	// nbr (qAgg) sums the neighbours without the node itself, and mean
	// divides by their number (SAGE's mean aggregator); otherwise the
	// adjacency has its self-loops (GCN's Â, GIN's h + Σ neighbours).
	nbr, mean bool
	// selfMean (qAgg) divides by the row's count, the node included
	// (GIN's mean, Model.Aggr).
	selfMean bool
	// biasOf is the linear whose bias the epilogue adds (GCN's and GIN's
	// Lin1 after the aggregation), nil for none.
	biasOf   *Linear
	rowScale bool // multiply by D^-1/2 (GCN)
	// featScale: multiply by the batch's FeatScale (the model normalizes
	// its input rows; first op only).
	featScale bool
	relu      bool
	// bn (GIN aggregations) normalizes after the bias, before the ReLU.
	bn *BatchNorm
	// keep: training does not drop this op's input out: GIN's second
	// linear when the MLP has a batch norm (see simForward).
	keep bool
	out  *Params
	// outEq (Z's qLin) divides the output per channel before its
	// quantizer, inEq (the aggregation reading Z) multiplies it back:
	// Layer.ZScale and ZShift, nil without. eqOf is the layer whose Z the
	// op makes (calibration sets its ZScale and ZShift).
	outEq, inEq *chanEq
	eqOf        *Layer
}

// chanEq is a per-channel affine map of a quantized value: real = scale·v +
// shift per column.
type chanEq struct{ scale, shift []float32 }

func (ly *Layer) zEq() *chanEq {
	if ly.ZScale == nil {
		return nil
	}
	return &chanEq{ly.ZScale, ly.ZShift}
}

// ops flattens m into the DAG that both the bit-kernel inference and the
// simulation walk. A qLin's output feeds a qAgg (packed by columns, or
// codes over an edge list), a qAgg's output feeds a qLin (packed by rows).
// A SAGE layer reading value h is four ops: Z = h·W_lᵀ (codes), the mean
// of Z over the neighbours plus the bias (float), h·W_rᵀ (float), and
// their sum (the layer's output).
func (m *Model) ops() []planOp {
	var ops []planOp
	last := len(m.Layers) - 1
	h := 0 // the value the layer reads
	for i := range m.Layers {
		ly := &m.Layers[i]
		out := &ly.Out
		if i == last {
			out = nil
		}
		at := len(ops) // op at+j reads value at+j unless named
		chain := func(o ...planOp) {
			for j := range o {
				o[j].in = []int{at + j}
			}
			ops = append(ops, o...)
		}
		eq := ly.zEq()
		switch m.Kind {
		case GCN:
			chain(planOp{kind: qLin, lin: &ly.Lin1, rowScale: true, out: &ly.Z, outEq: eq, eqOf: ly},
				planOp{kind: qAgg, biasOf: &ly.Lin1, rowScale: true, relu: i != last, out: out, inEq: eq})
		case GIN:
			chain(planOp{kind: qLin, lin: &ly.Lin1, out: &ly.Z, outEq: eq, eqOf: ly},
				planOp{kind: qAgg, selfMean: m.GINMean(), biasOf: &ly.Lin1, bn: ly.BN, relu: true, out: &ly.U, inEq: eq},
				planOp{kind: qLin, lin: ly.Lin2, biasOf: ly.Lin2, relu: i != last, out: out, keep: ly.BN != nil})
		case SAGE:
			ops = append(ops,
				planOp{kind: qLin, in: []int{h}, lin: &ly.Lin1, out: &ly.Z, outEq: eq, eqOf: ly},
				planOp{kind: qAgg, in: []int{at + 1}, nbr: true, mean: true, biasOf: &ly.Lin1, inEq: eq},
				planOp{kind: qLin, in: []int{h}, lin: ly.Lin2},
				planOp{kind: qAdd, in: []int{at + 2, at + 3}, relu: i != last, out: out})
		}
		h = len(ops)
	}
	for i := range ops {
		ops[i].featScale = m.NormRows && ops[i].kind == qLin && ops[i].in[0] == 0
	}
	return ops
}

// paramsFor returns params of the given width whose levels span [lo, hi]
// (quantize.FromRange: Lower half a step below lo, so the floor rounds to
// the nearest level). For lo = 0 the zero point is exactly 0, so 0 stays 0
// and non-negative activations need no zero-point correction.
func paramsFor(bits int, lo, hi float64) Params {
	p, err := quantize.FromRange(lo, max(lo, hi), bits)
	if err != nil { // NaN or infinite data: a unit range keeps going
		p, _ = quantize.FromRange(0, 1, bits)
	}
	return p
}

// weightParams returns per-output-channel params for l's weights (one per
// row of W, the columns of the product's B operand) and the codes, laid out
// In×Out (K×N row-major), as float64. Each channel's range is the min/max
// shrunk by the factor that minimises the squared quantization error.
func weightParams(l *Linear, bits int) ([]Params, []float64) {
	ps := make([]Params, l.Out)
	codes := make([]float64, l.In*l.Out)
	for j := 0; j < l.Out; j++ {
		row := l.W[j*l.In : (j+1)*l.In]
		if bits == 1 && l.Sign {
			ps[j] = signParams(row)
		} else {
			ps[j] = bestRange(row, bits, false)
		}
		inv, off := ps[j].Requant()
		for k, w := range row {
			codes[k*l.Out+j] = float64(qQuant(w, inv, off, bits))
		}
	}
	return ps, codes
}

// signParams is the 1-bit range of levels ±α, α = mean |w| (XNOR-Net's and
// Bi-GCN's per-channel binarization): every weight keeps its sign. The two
// levels of least squared error sit at the spike of near-zero weights and
// at the few large ones when most of a wide first layer's inputs are rare,
// which maps nearly every weight to one level; on Coauthor Physics that
// leaves the model at chance (bench/accuracy/RESULTS.md).
func signParams(w []float32) Params {
	var a float64
	for _, v := range w {
		a += math.Abs(float64(v))
	}
	a /= float64(max(1, len(w)))
	if !(a > 0) || math.IsInf(a, 0) {
		a = 1
	}
	return paramsFor(1, -a, a)
}

// qQuant is the one quantizer of the package: bmm.Requant's formula, so
// that a fused epilogue that re-quantizes gives the same codes.
func qQuant(x, inv, off float32, bits int) uint32 {
	return bmm.Requant{Scale: inv, Offset: off}.Quantize(x, bits)
}

// dequant is Scale·(q + Zero()).
func dequant(q float64, p Params) float64 {
	return float64(p.Scale) * (q + float64(p.Zero()))
}

// bestRange picks the range of vals for bits: among the min/max (or
// [0, max] when unsigned), a few tail quantiles and shrunk ranges, the one
// that minimises the squared error of quantize-then-dequantize. vals may be
// a sample; it is not modified.
func bestRange(vals []float32, bits int, unsigned bool) Params {
	p, _ := qRanges(vals, bits, unsigned)
	return p
}

// qRanges returns bestRange's choice and every distinct candidate it
// weighed.
func qRanges(vals []float32, bits int, unsigned bool) (best Params, ps []Params) {
	if len(vals) == 0 {
		p := paramsFor(bits, 0, 1)
		return p, []Params{p}
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	lo, hi := float64(s[0]), float64(s[len(s)-1])
	if unsigned {
		lo = 0
	}
	if bits >= 12 {
		p := paramsFor(bits, lo, hi)
		return p, []Params{p}
	}
	type cand struct{ lo, hi float64 }
	var cands []cand
	for _, f := range []float64{1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3} {
		cands = append(cands, cand{lo * f, hi * f})
	}
	for _, q := range []float64{1e-4, 1e-3, 5e-3, 1e-2, 3e-2, 1e-1} {
		i := int(q * float64(len(s)))
		if i == 0 {
			continue
		}
		c := cand{float64(s[i]), float64(s[len(s)-1-i])}
		if unsigned {
			c.lo = 0
		}
		cands = append(cands, c)
	}
	best, bestErr := paramsFor(bits, lo, hi), math.Inf(1)
	for _, c := range cands {
		p := paramsFor(bits, c.lo, c.hi)
		if slices.Contains(ps, p) {
			continue
		}
		ps = append(ps, p)
		inv, off := p.Requant()
		var e float64
		for _, v := range s {
			d := dequant(float64(qQuant(v, inv, off, bits)), p) - float64(v)
			e += d * d
		}
		if e < bestErr {
			best, bestErr = p, e
		}
	}
	return best, ps
}

// colBias is the bias op's epilogue adds, or nil.
func (op *planOp) colBias() []float32 {
	if op.biasOf == nil {
		return nil
	}
	return op.biasOf.B
}

// scale is op's epilogue RowScale on batch b: D^-1/2, the feature row
// normalization, their product, SAGE's 1/(number of neighbours), GIN's
// 1/(degree + 1), or nil.
// b must carry FeatScale when the op wants it.
func (op *planOp) scale(b *Batch) []float32 {
	switch {
	case op.mean:
		return b.neighbours().Inv
	case op.selfMean:
		return b.selfMean()
	case op.rowScale && op.featScale:
		return b.scaleBoth()
	case op.rowScale:
		return b.DInv
	case op.featScale:
		return b.FeatScale
	}
	return nil
}

// graph is the adjacency op aggregates over, CSR with sorted rows.
func (op *planOp) graph(b *Batch) (indptr, indices []int32) {
	if op.nbr {
		nb := b.neighbours()
		return nb.Indptr, nb.Indices
	}
	return b.Indptr, b.Indices
}

// deg is the row sums of the adjacency op aggregates over: the zero-point
// term of its epilogue.
func (op *planOp) deg(b *Batch) []float32 {
	if op.nbr {
		return b.neighbours().Deg
	}
	return b.Deg
}
