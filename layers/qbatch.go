package layers

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/subgraph"
)

// Batch is one batch of nodes (one or more partitions, Cluster-GCN style)
// with its adjacency among them, self-loops included, in two forms: CSR for
// the float simulation and a 1-bit tensor packed by rows for the bit
// kernels. Deg and DInv are the row sums of that adjacency and their
// inverse square roots (GCN's D^-1/2), as float32.
type Batch struct {
	Nodes           []int32 // global ids, in the batch's row order
	Indptr, Indices []int32 // local CSR adjacency with self-loops, sorted
	Adj             *bittensor.Tensor
	Deg, DInv       []float32
	// FeatScale is 1/(row sum) of each node's features (1 for empty rows),
	// nil when not known: row normalization of the input, applied as a row
	// scale of the first product's epilogue so the codes stay exact.
	FeatScale []float32
	// Edges is the same adjacency as a backend's edge list (Indptr and
	// Indices, no weights), and tiles the number of 64×256 tiles of Adj
	// that hold an edge (the work a dense bit product cannot skip): the
	// sizes of the backend's cost model.
	Edges bmm.Graph
	tiles int
	// feat keeps, per quantized input, the batch's view of its codes: each
	// node's code sum and, made on first use, the feature lists as an
	// aggregation's graph with its weight bound (bmm.CheckGraph's).
	feat struct {
		sync.Mutex
		in      *Input
		sums    []float32
		graph   *bmm.Graph
		bound   int64
		adjMade bool
	}
	// both is DInv·FeatScale, the first GCN product's row scale, made once.
	bothOnce sync.Once
	both     []float32
}

// scaleBoth returns DInv·FeatScale row by row (see planOp.scale).
func (b *Batch) scaleBoth() []float32 {
	b.bothOnce.Do(func() {
		b.both = make([]float32, b.N())
		for i := range b.both {
			b.both[i] = float32(b.DInv[i] * b.FeatScale[i])
		}
	})
	return b.both
}

// featSums is the row sums of the codes of b's nodes in in: the first
// product's RowTerm.
func (b *Batch) featSums(in *Input) []float32 {
	b.feat.Lock()
	defer b.feat.Unlock()
	b.featFor(in)
	return b.feat.sums
}

// featRows is the stored feature codes of b's nodes as the graph of an
// aggregation over W's code rows (in.Cols source rows), in b's row order,
// weighted by the codes unless all are 1, with its weight bound; nil when
// in's codes pass 8 bits or want is false.
func (b *Batch) featRows(in *Input, want bool) (*bmm.Graph, int64) {
	if !want || in.Params.Bits > 8 {
		return nil, 0
	}
	b.feat.Lock()
	defer b.feat.Unlock()
	b.featFor(in)
	if !b.feat.adjMade {
		g := &bmm.Graph{Indptr: make([]int32, 1, len(b.Nodes)+1)}
		if !in.allOnes {
			g.Weights, g.WeightBits = []uint8{}, in.Params.Bits
		}
		var maxDeg int64
		wmax := int64(1)
		for _, v := range b.Nodes {
			q0, q1 := in.Indptr[v], in.Indptr[v+1]
			g.Indices = append(g.Indices, in.Indices[q0:q1]...)
			if g.Weights != nil {
				for _, c := range in.Codes[q0:q1] {
					g.Weights = append(g.Weights, uint8(c))
					wmax = max(wmax, int64(c))
				}
			}
			g.Indptr = append(g.Indptr, int32(len(g.Indices)))
			maxDeg = max(maxDeg, int64(q1-q0))
		}
		b.feat.graph, b.feat.bound, b.feat.adjMade = g, maxDeg*wmax, true
	}
	return b.feat.graph, b.feat.bound
}

// featFor makes b.feat the view of in (b.feat is locked).
func (b *Batch) featFor(in *Input) {
	if b.feat.in == in {
		return
	}
	in.prepare()
	sums := make([]float32, len(b.Nodes))
	for i, v := range b.Nodes {
		sums[i] = in.rowSums[v]
	}
	b.feat.in, b.feat.sums = in, sums
	b.feat.graph, b.feat.bound, b.feat.adjMade = nil, 0, false
}

// N is the number of nodes in the batch.
func (b *Batch) N() int { return len(b.Nodes) }

// NewBatches builds one batch per group of global node ids: the subgraph
// of g induced by the group, plus a self-loop on every node. The node ids
// of a group must be distinct.
//
// withBits also packs the 1-bit adjacency (needed by the bit kernels, not
// by the float simulation that trains).
// nodeScale, when not nil, gives each node's FeatScale.
func NewBatches(g *subgraph.Graph, groups [][]int32, withBits bool, nodeScale []float32) ([]*Batch, error) {
	local := make([]int32, g.N())
	for i := range local {
		local[i] = -1
	}
	out := make([]*Batch, 0, len(groups))
	for gi, nodes := range groups {
		for i, v := range nodes {
			if v < 0 || int(v) >= g.N() {
				return nil, fmt.Errorf("%w: batch %d holds node %d of a %d-node graph", ErrModel, gi, v, g.N())
			}
			if local[v] >= 0 {
				return nil, fmt.Errorf("%w: batch %d holds node %d twice", ErrModel, gi, v)
			}
			local[v] = int32(i)
		}
		if withBits {
			// Breadth-first order inside the batch: neighbours get nearby
			// rows, so the 1-bit adjacency is banded and its rows have
			// long runs of zero words, which bit kernels skip.
			nodes = bandOrder(g, nodes, local)
			for i, v := range nodes {
				local[v] = int32(i)
			}
		}
		b, err := buildBatch(g, nodes, local, withBits)
		if err == nil && nodeScale != nil {
			b.FeatScale = make([]float32, len(nodes))
			for i, v := range nodes {
				b.FeatScale[i] = nodeScale[v]
			}
		}
		for _, v := range nodes {
			local[v] = -1
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func buildBatch(g *subgraph.Graph, nodes, local []int32, withBits bool) (*Batch, error) {
	n := len(nodes)
	b := &Batch{Nodes: slices.Clone(nodes), Indptr: make([]int32, n+1)}
	if withBits {
		adj, err := bittensor.New(n, n, 1, bittensor.ByRows, bittensor.DefaultPadding)
		if err != nil {
			return nil, err
		}
		b.Adj = adj
	}
	b.Deg = make([]float32, n)
	b.DInv = make([]float32, n)
	for i, v := range nodes {
		row := len(b.Indices)
		self := false
		for _, u := range g.Neighbors(int(v)) {
			if lu := local[u]; lu >= 0 {
				if u == v {
					self = true
				}
				b.Indices = append(b.Indices, lu)
			}
		}
		if !self {
			b.Indices = append(b.Indices, int32(i))
		}
		r := b.Indices[row:]
		slices.Sort(r)
		if b.Adj != nil {
			line := b.Adj.Line(0, i)
			for _, k := range r {
				line[k/64] |= 1 << (k % 64)
			}
		}
		b.Indptr[i+1] = int32(len(b.Indices))
		b.Deg[i] = float32(len(r))
		b.DInv[i] = float32(1 / math.Sqrt(float64(len(r))))
	}
	if withBits {
		b.Edges = bmm.Graph{Indptr: b.Indptr, Indices: b.Indices}
		b.tiles = adjChunks(b.Indptr, b.Indices)
	}
	return b, nil
}

// Groups groups the k parts of a partition (parts[v] is node v's part)
// into batches of q parts each: consecutive parts when rng is nil
// (inference), a random grouping otherwise (a Cluster-GCN training epoch).
// Empty groups are dropped.
func Groups(parts []int32, k, q int, rng *rand.Rand) [][]int32 {
	byPart := make([][]int32, k)
	for v, p := range parts {
		byPart[p] = append(byPart[p], int32(v))
	}
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	if rng != nil {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	q = max(1, q)
	var groups [][]int32
	for i := 0; i < len(order); i += q {
		var nodes []int32
		for _, k := range order[i:min(len(order), i+q)] {
			nodes = append(nodes, byPart[k]...)
		}
		if len(nodes) > 0 {
			if rng == nil {
				slices.Sort(nodes)
			}
			groups = append(groups, nodes)
		}
	}
	return groups
}

// Input is a dataset's node features quantized once: the float values
// (for the full-precision path) and the codes, both CSR over the non-zero
// codes' positions. Binary features get 1-bit codes, which are exact.
type Input struct {
	Rows, Cols      int
	Params          Params
	Indptr, Indices []int32
	Vals            []float32 // float value of each stored entry
	Codes           []uint32  // its code
	// Made once by prepare for the sparse first product: each row's code
	// sum and whether every stored code is 1 (binary features: no weights
	// to multiply).
	prepOnce sync.Once
	rowSums  []float32
	allOnes  bool
}

// prepare fills the sparse first product's view of the codes.
func (in *Input) prepare() {
	in.prepOnce.Do(func() {
		in.rowSums = make([]float32, in.Rows)
		in.allOnes = true
		for r := 0; r < in.Rows; r++ {
			var s int64
			for _, c := range in.Codes[in.Indptr[r]:in.Indptr[r+1]] {
				s += int64(c)
				in.allOnes = in.allOnes && c == 1
			}
			in.rowSums[r] = float32(s)
		}
	})
}

// QuantizeInput quantizes features f to bits (ignored for binary features,
// which take 1 bit) with a per-tensor range calibrated on the values.
// Sparse features whose negatives are rare (at most 1% of the non-zeros)
// get an unsigned range, their negatives' codes clamped to 0 (the float
// values stay exact), so that they stay sparse.
func QuantizeInput(f *subgraph.Features, bits int) (*Input, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: dataset has no node features", ErrModel)
	}
	if bits < 1 || bits > 32 {
		return nil, fmt.Errorf("%w: feature bits %d", ErrBits, bits)
	}
	in := &Input{Rows: f.Rows, Cols: f.Cols, Indptr: make([]int32, f.Rows+1)}
	// Collect (col, value) per row from either layout.
	row := func(r int, visit func(c int32, v float32)) {
		if f.Dense != nil {
			for c, v := range f.Dense[r*f.Cols : (r+1)*f.Cols] {
				visit(int32(c), v)
			}
			return
		}
		for p := f.Indptr[r]; p < f.Indptr[r+1]; p++ {
			v := float32(1)
			if f.Values != nil {
				v = f.Values[p]
			}
			visit(f.Indices[p], v)
		}
	}
	binary := true
	var sample []float32
	nonZero, negative := 0, 0
	stride := 1
	if nnz := featureNNZ(f); nnz > 1<<20 {
		stride = nnz >> 20
	}
	i := 0
	for r := 0; r < f.Rows; r++ {
		row(r, func(_ int32, v float32) {
			if v != 0 && v != 1 {
				binary = false
			}
			if v < 0 {
				negative++
			}
			if v != 0 {
				nonZero++
			}
			if v != 0 && i%stride == 0 {
				sample = append(sample, v)
			}
			i++
		})
	}
	// A signed range gives 0 a non-zero code, which makes every absent
	// entry of sparse features a stored one (rows×cols codes).
	if binary {
		in.Params = paramsFor(1, 0, 1) // codes equal the values: exact
	} else {
		unsigned := negative == 0 || (f.Dense == nil && negative*100 <= nonZero)
		in.Params = bestRange(sample, bits, unsigned)
	}
	inv, off := in.Params.Requant()
	zero := qQuant(0, inv, off, in.Params.Bits)
	for r := 0; r < f.Rows; r++ {
		if zero != 0 {
			// A non-zero code for 0: every column is stored.
			dense := make([]float32, f.Cols)
			row(r, func(c int32, v float32) { dense[c] = v })
			for c, v := range dense {
				in.Indices = append(in.Indices, int32(c))
				in.Vals = append(in.Vals, v)
				in.Codes = append(in.Codes, qQuant(v, inv, off, in.Params.Bits))
			}
		} else {
			row(r, func(c int32, v float32) {
				q := qQuant(v, inv, off, in.Params.Bits)
				if q == 0 && v == 0 {
					return
				}
				in.Indices = append(in.Indices, c)
				in.Vals = append(in.Vals, v)
				in.Codes = append(in.Codes, q)
			})
		}
		in.Indptr[r+1] = int32(len(in.Indices))
	}
	return in, nil
}

func featureNNZ(f *subgraph.Features) int {
	if f.Dense != nil {
		return len(f.Dense)
	}
	return len(f.Indices)
}

// Pack packs the codes of rows nodes as a ByRows tensor: a batch's first
// operand. Only the stored codes are visited.
func (in *Input) Pack(nodes []int32) (*bittensor.Tensor, error) {
	t, err := bittensor.New(len(nodes), in.Cols, in.Params.Bits, bittensor.ByRows, bittensor.DefaultPadding)
	if err != nil {
		return nil, err
	}
	pw := t.PlaneWords()
	lw := t.LineWords()
	words := t.Words()
	for i, v := range nodes {
		if v < 0 || int(v) >= in.Rows {
			return nil, fmt.Errorf("%w: node %d outside the %d feature rows", ErrModel, v, in.Rows)
		}
		base := i * lw
		for p := in.Indptr[v]; p < in.Indptr[v+1]; p++ {
			c, q := int(in.Indices[p]), in.Codes[p]
			w, bit := base+c/64, uint64(1)<<(c%64)
			for q != 0 {
				pl := bits.TrailingZeros32(q)
				words[pl*pw+w] |= bit
				q &= q - 1
			}
		}
	}
	return t, nil
}

// Feature scalings for Model.NormRows (Data.NodeScale).
const (
	ScaleMean = "mean" // every row by 1/(mean row sum): features of order 1, relative row sizes kept
	ScaleRows = "rows" // each row by 1/(its sum): rows sum to 1 (Kipf & Welling's preprocessing)
	ScaleSqrt = "sqrt" // every row by 1/sqrt(mean row sum)
	ScaleNone = "none" // raw features
)

// FeatureScale returns the per-node input scale of mode for features f.
// Raw bag-of-words rows of hundreds of ones make the first products large
// enough to kill the ReLUs early in training (Amazon Computers), while rows
// scaled to sum 1 make them so small that training crawls (Amazon Photo);
// sqrt, between the two, trains on every dataset we have.
func FeatureScale(f *subgraph.Features, mode string) []float32 {
	inv := rowInverse(f)
	if mode == ScaleRows {
		return inv
	}
	var sum float64
	n := 0
	for _, v := range inv {
		sum += 1 / float64(v)
		n++
	}
	c := float32(1)
	if sum > 0 {
		switch mode {
		case ScaleMean:
			c = float32(float64(n) / sum)
		case ScaleSqrt:
			c = float32(math.Sqrt(float64(n) / sum))
		}
	}
	for i := range inv {
		inv[i] = c
	}
	return inv
}

// rowInverse returns 1/(row sum) of f per row (1 for rows summing to 0).
func rowInverse(f *subgraph.Features) []float32 {
	out := make([]float32, f.Rows)
	for r := range out {
		var s float64
		if f.Dense != nil {
			for _, v := range f.Dense[r*f.Cols : (r+1)*f.Cols] {
				s += float64(v)
			}
		} else if f.Values == nil {
			s = float64(f.Indptr[r+1] - f.Indptr[r])
		} else {
			for _, v := range f.Values[f.Indptr[r]:f.Indptr[r+1]] {
				s += float64(v)
			}
		}
		out[r] = 1
		if s != 0 {
			out[r] = float32(1 / s)
		}
	}
	return out
}

// bandOrder returns nodes (whose positions local holds) in breadth-first
// order over the subgraph they induce, each component started from its
// first node in the given order (Cuthill–McKee without the degree sort).
func bandOrder(g *subgraph.Graph, nodes, local []int32) []int32 {
	seen := make([]bool, len(nodes))
	order := make([]int32, 0, len(nodes))
	for s, v := range nodes {
		if seen[s] {
			continue
		}
		seen[s] = true
		order = append(order, v)
		for i := len(order) - 1; i < len(order); i++ {
			for _, u := range g.Neighbors(int(order[i])) {
				if lu := local[u]; lu >= 0 && !seen[lu] {
					seen[lu] = true
					order = append(order, u)
				}
			}
		}
	}
	return order
}

// adjChunks counts the 64-row × 256-column chunks of an n-row CSR
// adjacency that hold an edge.
func adjChunks(indptr, indices []int32) int {
	n := len(indptr) - 1
	chunks := 0
	// One bit per 256-column chunk, reset after each 64-row block.
	seen := make([]uint64, (n/256+64)/64)
	for v0 := 0; v0 < n; v0 += 64 {
		clear(seen)
		for v := v0; v < min(n, v0+64); v++ {
			for _, u := range indices[indptr[v]:indptr[v+1]] {
				c := u / 256
				if seen[c/64]&(1<<(c%64)) == 0 {
					seen[c/64] |= 1 << (c % 64)
					chunks++
				}
			}
		}
	}
	return chunks
}
