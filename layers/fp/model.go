package fp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/qgtc/qgtc/templates"
)

// Errors of the full-precision models; wrapped with the value at fault.
var (
	// ErrConfig: a model configuration that cannot be built.
	ErrConfig = errors.New("fp: bad model configuration")
	// ErrData: a dataset the models cannot train on (no features, no
	// labels, no split, mismatched sizes).
	ErrData = errors.New("fp: unusable dataset")
)

// Config describes a full-precision model. Names of parameters follow
// PyG's BasicGNN models (torch_geometric.nn.models.GCN, GIN, GraphSAGE,
// GAT); see the doc comment of each constructor.
type Config struct {
	Model  string // "gcn", "gin", "sage" or "gat"
	In     int    // input features
	Hidden int    // hidden width (GAT: total over heads)
	Out    int    // classes
	Layers int    // graph convolutions (≥ 1)

	Dropout float32 // before every convolution, the input's included

	Aggr        string  // SAGE: "mean" (default) or "max"
	Norm        string  // GIN: "none" (default) or "batch": batch norm inside each MLP
	Heads       int     // GAT: heads of the hidden layers (default 8)
	OutHeads    int     // GAT: heads of the output layer, averaged (default 1)
	AttnDropout float32 // GAT: dropout on the attention coefficients
	Slope       float32 // GAT: LeakyReLU slope of the scores (default 0.2)
}

// withDefaults fills zero fields with their defaults and checks the rest.
func (c Config) withDefaults() (Config, error) {
	c.Model = strings.ToLower(c.Model)
	switch c.Model {
	case "gcn", "gin", "sage", "gat":
	default:
		return c, fmt.Errorf("%w: unknown model %q (want gcn, gin, sage or gat)", ErrConfig, c.Model)
	}
	if c.Model == "sage" && c.Aggr == "" {
		c.Aggr = "mean"
	}
	if c.Model == "sage" && c.Aggr != "mean" && c.Aggr != "max" {
		return c, fmt.Errorf("%w: sage aggregation %q (want mean or max)", ErrConfig, c.Aggr)
	}
	if c.Model == "gin" && c.Norm == "" {
		c.Norm = "none"
	}
	if c.Model == "gin" && c.Norm != "none" && c.Norm != "batch" {
		return c, fmt.Errorf("%w: gin norm %q (want none or batch)", ErrConfig, c.Norm)
	}
	if c.Model == "gat" {
		if c.Heads == 0 {
			c.Heads = 8
		}
		if c.OutHeads == 0 {
			c.OutHeads = 1
		}
		if c.Slope == 0 {
			c.Slope = 0.2
		}
		if c.Heads < 1 || c.OutHeads < 1 || c.Hidden%c.Heads != 0 {
			return c, fmt.Errorf("%w: gat hidden %d not divisible into %d heads (output heads %d)", ErrConfig, c.Hidden, c.Heads, c.OutHeads)
		}
	}
	if c.In < 1 || c.Out < 1 || c.Layers < 1 || (c.Layers > 1 && c.Hidden < 1) {
		return c, fmt.Errorf("%w: in %d, hidden %d, out %d, layers %d", ErrConfig, c.In, c.Hidden, c.Out, c.Layers)
	}
	for _, p := range []float32{c.Dropout, c.AttnDropout} {
		if p < 0 || p >= 1 || math.IsNaN(float64(p)) {
			return c, fmt.Errorf("%w: dropout %v outside [0, 1)", ErrConfig, p)
		}
	}
	return c, nil
}

// Site names one matrix product of a model: the convolution index and the
// weight it multiplies by.
type Site struct {
	Layer  int
	Weight *nn.Param
}

// Hooks let a caller transform what goes into each matrix product, e.g.
// fake quantization for quantization-aware training. Input gets the
// features about to be multiplied (possibly sparse), Weight the weight
// ([out, in]); each returns the tensor to use instead, recording its own
// backward on the tape (nn.Tape.Custom) when it needs gradients to flow.
// Nil fields leave the values as they are.
type Hooks struct {
	Input  func(tp *nn.Tape, s Site, x *nn.Tensor) *nn.Tensor
	Weight func(tp *nn.Tape, s Site, w *nn.Tensor) *nn.Tensor
}

// Model is a full-precision GNN for node classification.
type Model interface {
	// Config returns the configuration the model was built from.
	Config() Config
	// Forward returns the N×Out logits. tp.Train selects training mode
	// (dropout on, batch norm on batch statistics).
	Forward(tp *nn.Tape, in *Input) *nn.Tensor
	// Params lists every tensor of the model's state dict in a fixed
	// order: trained parameters and buffers (batch-norm statistics).
	Params() []*nn.Param
	// SetHooks installs transforms applied before every matrix product.
	SetHooks(h Hooks)
}

// New builds a model with its parameters initialized from seed the way
// PyG initializes them (Glorot for GCN and GAT, Kaiming-uniform Linear
// layers for GIN and SAGE, zero biases where PyG zeroes them).
func New(cfg Config, seed uint64) (Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x9c7a))
	switch cfg.Model {
	case "gcn":
		return newGCN(cfg, r), nil
	case "gin":
		return newGIN(cfg, r), nil
	case "sage":
		return newSAGE(cfg, r), nil
	default:
		return newGAT(cfg, r), nil
	}
}

// widths returns the input and output width of convolution i.
func (c Config) widths(i int) (in, out int) {
	in, out = c.Hidden, c.Hidden
	if i == 0 {
		in = c.In
	}
	if i == c.Layers-1 {
		out = c.Out
	}
	return in, out
}

// Input is the graph and the node features a model runs on, with the
// derived graphs (self-loops, normalizations) each model builds once.
type Input struct {
	Graph *nn.Graph  // pull-style CSR without self-loops (symmetric for undirected graphs)
	X     *nn.Tensor // N×F features, dense or sparse

	pull  *subgraph.Graph // Graph as a subgraph.Graph
	loops *nn.Graph       // Graph plus a self-loop on every node
	gcnW  []float32       // D^-1/2 (A+I) D^-1/2 on loops
}

// denseAbove is the feature density above which NewInput stores the
// features dense (e.g. Amazon's 26%-dense bag-of-words).
const denseAbove = 0.05

// NewInput pairs a graph (edges u→v stored as g's row u, as subgraph
// stores undirected graphs) with its features. Self-loops in g are
// dropped: the models that want them add their own.
func NewInput(g *subgraph.Graph, f *subgraph.Features) (*Input, error) {
	if g == nil || f == nil {
		return nil, fmt.Errorf("%w: missing graph or features", ErrData)
	}
	n := g.N()
	if f.Rows != n {
		return nil, fmt.Errorf("%w: %d feature rows for %d nodes", ErrData, f.Rows, n)
	}
	// Row v of the reverse lists the sources of the edges into v.
	pull := g.Reverse().Rebuild(subgraph.BuildOptions{SelfLoops: subgraph.RemoveSelfLoops})
	var x *nn.Tensor
	switch {
	case f.Dense != nil:
		if len(f.Dense) != f.Rows*f.Cols {
			return nil, fmt.Errorf("%w: %d dense feature values for %d×%d", ErrData, len(f.Dense), f.Rows, f.Cols)
		}
		x = nn.FromData(f.Rows, f.Cols, append([]float32(nil), f.Dense...))
	default:
		if len(f.Indptr) != f.Rows+1 || int(f.Indptr[f.Rows]) != len(f.Indices) || (f.Values != nil && len(f.Values) != len(f.Indices)) {
			return nil, fmt.Errorf("%w: sparse features with %d indptr, %d indices, %d values for %d rows", ErrData, len(f.Indptr), len(f.Indices), len(f.Values), f.Rows)
		}
		var vals []float32
		if f.Values != nil {
			vals = append([]float32(nil), f.Values...)
		}
		x = nn.NewSparse(f.Rows, f.Cols, f.Indptr, f.Indices, vals)
		if float64(len(f.Indices)) >= denseAbove*float64(f.Rows)*float64(f.Cols) {
			x = x.Dense() // the blocked GEMM beats a gather this dense
		}
	}
	return &Input{Graph: nn.NewGraph(pull.Indptr, pull.Indices), X: x, pull: pull}, nil
}

// NormalizeRows scales every feature row to sum 1 (rows summing to 0 stay),
// PyG's NormalizeFeatures, used for Planetoid and the gnn-benchmark sets.
func (in *Input) NormalizeRows() {
	x := in.X
	rowRange := func(i int) []float32 {
		if x.Sparse != nil {
			return x.Data[x.Sparse.Indptr[i]:x.Sparse.Indptr[i+1]]
		}
		return x.Data[i*x.Cols : (i+1)*x.Cols]
	}
	for i := range x.Rows {
		r := rowRange(i)
		var s float64
		for _, v := range r {
			s += float64(v)
		}
		if s == 0 {
			continue
		}
		for j := range r {
			r[j] = float32(float64(r[j]) / s)
		}
	}
}

// GCNGraph is the graph GCN propagates over: in.Graph with a self-loop on
// every node, and its D^-1/2 (A+I) D^-1/2 weights by edge id (built once).
func (in *Input) GCNGraph() (*nn.Graph, []float32) { return in.gcn() }

func (in *Input) gcn() (*nn.Graph, []float32) {
	if in.loops == nil {
		// pull is row v = sources of v's in-edges, so its degrees are
		// in-degrees, the ones PyG's gcn_norm uses.
		loops := in.pull.Rebuild(subgraph.BuildOptions{SelfLoops: subgraph.AddSelfLoops})
		norm := loops.GCNNorm(false)
		w := make([]float32, loops.NumEdges())
		for v := range loops.N() {
			for p := loops.Indptr[v]; p < loops.Indptr[v+1]; p++ {
				w[p] = norm[v] * norm[loops.Indices[p]]
			}
		}
		in.loops, in.gcnW = nn.NewGraph(loops.Indptr, loops.Indices), w
	}
	return in.loops, in.gcnW
}

// SampleGCN is in with ES-SpMM's sampled propagation for GCN, the
// approximation tcu.UploadSampledCSR runs on the GPU: each row of
// D^-1/2 (A+I) D^-1/2 keeps at most limit entries, cache-first within
// window rows (templates.SampleCSR), each kept weight scaled by the row's
// deg/kept so that its sum stays an unbiased estimate. in is unchanged;
// the sampled input shares its features.
func (in *Input) SampleGCN(limit, window int) *Input {
	g, w := in.gcn()
	s, orig, scale := templates.SampleCSR(g.CSR, limit, window, true)
	sw := make([]float32, len(s.Indices))
	for v := range s.Rows() {
		for p := s.Indptr[v]; p < s.Indptr[v+1]; p++ {
			sw[p] = w[orig[p]] * scale[v]
		}
	}
	return &Input{Graph: in.Graph, X: in.X, pull: in.pull, loops: nn.NewGraph(s.Indptr, s.Indices), gcnW: sw}
}

// hooked applies the hooks and returns x·wᵀ (+ b when b is non-nil).
func (h *Hooks) linear(tp *nn.Tape, layer int, x *nn.Tensor, w, b *nn.Param) *nn.Tensor {
	s := Site{Layer: layer, Weight: w}
	wt := w.Tensor
	if h.Input != nil {
		x = h.Input(tp, s, x)
	}
	if h.Weight != nil {
		wt = h.Weight(tp, s, wt)
	}
	y := tp.MatMulT(x, wt)
	if b != nil {
		y = tp.AddBias(y, b.Tensor)
	}
	return y
}

func glorot(r *rand.Rand, p *nn.Param, fanIn, fanOut int) {
	a := math.Sqrt(6 / float64(fanIn+fanOut))
	for i := range p.Data {
		p.Data[i] = float32((r.Float64()*2 - 1) * a)
	}
}

// kaiming is torch.nn.Linear's default initialization: U(±1/√in).
func kaiming(r *rand.Rand, p *nn.Param, fanIn int) {
	a := 1 / math.Sqrt(float64(fanIn))
	for i := range p.Data {
		p.Data[i] = float32((r.Float64()*2 - 1) * a)
	}
}
