package layers

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
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
	// aggregation's graph with its weight bound (bmm.CheckGraph's) and the
	// codes packed into bit planes (a pass that uploads its inputs again
	// does not pack them again).
	feat struct {
		sync.Mutex
		in      *Input
		sums    []float32
		graph   *bmm.Graph
		bound   int64
		adjMade bool
		packed  *bittensor.Tensor
	}
	// both is DInv·FeatScale, the first GCN product's row scale, made once.
	bothOnce sync.Once
	both     []float32
	// selfInv is 1/Deg, a mean GIN's row scale (selfMean), made once.
	selfInvOnce sync.Once
	selfInv     []float32
	// nbr is the adjacency without its self-loops (SAGE's neighbours),
	// made on first use.
	nbrOnce sync.Once
	nbr     *Neighbours
	// edgesOnly: the batch has no packed adjacency by design (batches
	// merged, mergeBatches), so its aggregations go over the edge list.
	edgesOnly bool
	// keptAdj: the batch is a resident shell (Resident) whose packed
	// adjacency, not its edge list, is kept on the backend.
	keptAdj bool
	// host: Nodes, Indptr, Indices, Deg and DInv are pooled arrays that
	// PreparedBatch.Release gives back (PreparePacked's batches).
	host *hostBufs
	// makeAdj makes the packed adjacency where Adj is nil (a plan that
	// aggregates over the edge list never asks for it): once, into made.
	makeAdj func() (*bittensor.Tensor, error)
	adjOnce sync.Once
	adjMade *bittensor.Tensor
	adjErr  error
}

// hasAdj reports whether b has a packed adjacency, made or to be made.
func (b *Batch) hasAdj() bool { return b.Adj != nil || b.makeAdj != nil || b.keptAdj }

// PackedAdj is b's 1-bit adjacency (nil for a batch without one), made on
// the first call where the batch was built without it.
func (b *Batch) PackedAdj() (*bittensor.Tensor, error) {
	if b.Adj != nil || b.makeAdj == nil {
		return b.Adj, nil
	}
	b.adjOnce.Do(func() { b.adjMade, b.adjErr = b.makeAdj() })
	return b.adjMade, b.adjErr
}

// mergeBatches returns one batch holding bs side by side, block-diagonal:
// the rows of each in turn, with its own edges (renumbered), degrees and
// scales, so that every op, row-local, gives each row what its own batch
// gives it. It has the edge-list forms only. A large one is built on up
// to workers cores (mergeBatchesPar), the same slices.
func mergeBatches(bs []*Batch, workers int) *Batch {
	var n, e int
	for _, b := range bs {
		n, e = n+b.N(), e+len(b.Indices)
	}
	if workers < 2 || n+e < mergeParEntries {
		return mergeBatchesSerial(bs)
	}
	return mergeBatchesPar(bs, workers, mergeParRows)
}

// mergeBatchesSerial is mergeBatches on one core, the reference.
func mergeBatchesSerial(bs []*Batch) *Batch {
	var n, e int
	feat := true
	for _, b := range bs {
		n, e = n+b.N(), e+len(b.Indices)
		feat = feat && b.FeatScale != nil
	}
	m := &Batch{Nodes: make([]int32, 0, n), Indptr: make([]int32, 1, n+1), Indices: make([]int32, 0, e),
		Deg: make([]float32, 0, n), DInv: make([]float32, 0, n), edgesOnly: true}
	if feat {
		m.FeatScale = make([]float32, 0, n)
	}
	for _, b := range bs {
		off, base := int32(len(m.Nodes)), m.Indptr[len(m.Indptr)-1]
		m.Nodes = append(m.Nodes, b.Nodes...)
		for _, q := range b.Indptr[1:] {
			m.Indptr = append(m.Indptr, base+q)
		}
		for _, u := range b.Indices {
			m.Indices = append(m.Indices, u+off)
		}
		m.Deg, m.DInv = append(m.Deg, b.Deg...), append(m.DInv, b.DInv...)
		if feat {
			m.FeatScale = append(m.FeatScale, b.FeatScale...)
		}
	}
	m.Edges = bmm.Graph{Indptr: m.Indptr, Indices: m.Indices}
	return m
}

// Neighbours is a batch's adjacency without the self-loops, in the forms
// its aggregations take: CSR (and Edges), the packed 1-bit tensor when
// the batch has one, the row sums Deg and Inv = 1/max(Deg, 1), the mean's
// row scale (a node without neighbours averages to 0).
type Neighbours struct {
	Indptr, Indices []int32
	Deg, Inv        []float32
	Adj             *bittensor.Tensor
	Edges           bmm.Graph
	tiles           int
	// of is the batch whose adjacency, without its diagonal, Adj is: made
	// on the first PackedAdj where the batch's is made on demand too.
	of      *Batch
	adjOnce sync.Once
	adjMade *bittensor.Tensor
	adjErr  error
}

// PackedAdj is the neighbours' 1-bit adjacency (nil where the batch has
// none).
func (nb *Neighbours) PackedAdj() (*bittensor.Tensor, error) {
	if nb.Adj != nil || nb.of == nil {
		return nb.Adj, nil
	}
	nb.adjOnce.Do(func() {
		adj, err := nb.of.PackedAdj()
		if err != nil || adj == nil {
			nb.adjErr = err
			return
		}
		nb.adjMade = withoutDiagonal(adj)
	})
	return nb.adjMade, nb.adjErr
}

// withoutDiagonal is a copy of adj with its diagonal cleared.
func withoutDiagonal(adj *bittensor.Tensor) *bittensor.Tensor {
	out := adj.Clone()
	for v := range out.Rows() {
		out.Set(v, v, 0)
	}
	return out
}

// neighbours returns b's adjacency without self-loops, made once.
func (b *Batch) neighbours() *Neighbours {
	b.nbrOnce.Do(func() {
		n := b.N()
		var nb *Neighbours
		if w := runtime.GOMAXPROCS(0); b.edgesOnly && w > 1 && n >= listParRows {
			// A merged batch runs on its plan, never on a lane
			// (Plan.mergedBatch): the cores are its own.
			nb = withoutLoopsPar(n, b.Indptr, b.Indices, w, listChunkRows)
		} else {
			nb = withoutLoops(n, b.Indptr, b.Indices)
		}
		if b.hasAdj() {
			if b.Adj != nil {
				nb.Adj = withoutDiagonal(b.Adj)
			} else {
				nb.of = b
			}
			nb.tiles = csrTiles(n, nb.Indptr, nb.Indices)
		}
		nb.Edges = bmm.Graph{Indptr: nb.Indptr, Indices: nb.Indices}
		b.nbr = nb
	})
	return b.nbr
}

// withoutLoops is the n-row CSR graph indptr, indices without its
// self-loops, as Neighbours (no packed forms): the serial reference of
// withoutLoopsPar.
func withoutLoops(n int, indptr, indices []int32) *Neighbours {
	nb := &Neighbours{Indptr: make([]int32, n+1), Indices: make([]int32, 0, max(0, len(indices)-n)),
		Deg: make([]float32, n), Inv: make([]float32, n)}
	for v := range n {
		for _, u := range indices[indptr[v]:indptr[v+1]] {
			if int(u) != v {
				nb.Indices = append(nb.Indices, u)
			}
		}
		nb.Indptr[v+1] = int32(len(nb.Indices))
		d := nb.Indptr[v+1] - nb.Indptr[v]
		nb.Deg[v] = float32(d)
		nb.Inv[v] = 1 / float32(max(d, 1))
	}
	return nb
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
// in's codes pass 8 bits or want is false. A large batch's lists are made
// on up to workers cores.
func (b *Batch) featRows(in *Input, want bool, workers int) (*bmm.Graph, int64) {
	if !want || in.Params.Bits > 8 {
		return nil, 0
	}
	b.feat.Lock()
	defer b.feat.Unlock()
	b.featFor(in)
	if !b.feat.adjMade {
		if workers < 2 || len(b.Nodes) < listParRows {
			b.feat.graph, b.feat.bound = featLists(in, b.Nodes)
		} else {
			b.feat.graph, b.feat.bound = featListsPar(in, b.Nodes, workers, listChunkRows)
		}
		b.feat.adjMade = true
	}
	return b.feat.graph, b.feat.bound
}

// featLists is the graph of the feature lists of nodes in in, in their
// order, weighted unless in's codes are all 1, and its weight bound: the
// serial reference of featListsPar.
func featLists(in *Input, nodes []int32) (*bmm.Graph, int64) {
	// Sized up front: grown by append, the copies and the garbage cost a
	// one-shot run about as much as its ops.
	nnz := 0
	for _, v := range nodes {
		nnz += int(in.Indptr[v+1] - in.Indptr[v])
	}
	g := &bmm.Graph{Indptr: make([]int32, len(nodes)+1), Indices: make([]int32, nnz)}
	if !in.allOnes {
		g.Weights, g.WeightBits = make([]uint8, nnz), in.Params.Bits
	}
	var maxDeg int64
	wmax, at := uint32(1), 0
	for i, v := range nodes {
		q0, q1 := in.Indptr[v], in.Indptr[v+1]
		copy(g.Indices[at:], in.Indices[q0:q1])
		if g.Weights != nil {
			w := g.Weights[at : at+int(q1-q0)]
			for j, c := range in.Codes[q0:q1] {
				w[j] = uint8(c)
				wmax = max(wmax, c)
			}
		}
		at += int(q1 - q0)
		g.Indptr[i+1] = int32(at)
		maxDeg = max(maxDeg, int64(q1-q0))
	}
	return g, maxDeg * int64(wmax)
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
	b.feat.graph, b.feat.bound, b.feat.adjMade, b.feat.packed = nil, 0, false, nil
}

// packed is in's codes of b's nodes packed by rows (Input.Pack), made on
// first use and kept: the caller does not change it.
func (b *Batch) packed(in *Input) (*bittensor.Tensor, error) {
	b.feat.Lock()
	defer b.feat.Unlock()
	b.featFor(in)
	if b.feat.packed == nil {
		x, err := in.Pack(b.Nodes)
		if err != nil {
			return nil, err
		}
		b.feat.packed = x
	}
	return b.feat.packed, nil
}

// N is the number of nodes in the batch.
func (b *Batch) N() int { return len(b.Nodes) }

// Batches come from subgraph's batcher: a partition's parts grouped
// perBatch at a time, the adjacency with a self-loop on every node (Â in
// the CSR too).

// batchPartitioning is parts as a subgraph partitioning; nil parts or
// k ≤ 1 is one part of every node.
func batchPartitioning(g *subgraph.Graph, parts []int32, k int) *subgraph.Partitioning {
	if parts == nil || k <= 1 {
		return &subgraph.Partitioning{K: 1, Parts: make([]int32, g.N())}
	}
	return &subgraph.Partitioning{K: k, Parts: parts}
}

// evalBatches builds the inference batches: consecutive parts, rows in
// breadth-first order (a banded 1-bit adjacency whose zero words the bit
// kernels skip), packed with their tile masks; nodeScale, when not nil,
// gives each node's FeatScale.
func evalBatches(g *subgraph.Graph, parts []int32, k, perBatch int, nodeScale []float32) ([]*Batch, error) {
	p := batchPartitioning(g, parts, k)
	plan, err := subgraph.Batches(g, p, subgraph.BatchOptions{PartsPerBatch: min(max(1, perBatch), p.K),
		Rows: subgraph.BandRows, SelfLoops: true, LoopsInCSR: true, LazyAdj: true})
	if err != nil {
		return nil, err
	}
	return NewBatches(plan, nodeScale)
}

// trainBatches builds one training epoch's batches: the parts grouped in
// the order rng shuffles them (Cluster-GCN's stochastic multiple
// partitions), CSR only (the float simulation needs no bits).
func trainBatches(g *subgraph.Graph, parts []int32, k, perBatch int, rng *rand.Rand, nodeScale []float32) ([]*Batch, error) {
	p := batchPartitioning(g, parts, k)
	plan, err := subgraph.Batches(g, p, subgraph.BatchOptions{PartsPerBatch: min(max(1, perBatch), p.K),
		SelfLoops: true, LoopsInCSR: true, CSROnly: true})
	if err != nil {
		return nil, err
	}
	return NewBatches(plan.Shuffle(rng), nodeScale)
}

// NewBatches builds every batch of plan, which must put the self-loops in
// the CSR (LoopsInCSR): the degrees and GCN's D^-1/2 from its rows, and,
// when packed, the edge list (Edges) and the 64×256 tiles that hold an
// edge (the cost model's DenseTiles). nodeScale, when not nil, gives each node's FeatScale.
// The batches are independent and built plan.Concurrency() at a time; the
// first error in batch order is returned.
func NewBatches(plan *subgraph.BatchPlan, nodeScale []float32) ([]*Batch, error) {
	out := make([]*Batch, plan.Len())
	errs := make([]error, plan.Len())
	par.For(plan.Len(), plan.Concurrency(), func(i int) { out[i], errs[i] = newBatch(plan, i, nodeScale) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func newBatch(plan *subgraph.BatchPlan, i int, nodeScale []float32) (*Batch, error) {
	sb, err := plan.Batch(i)
	if err != nil {
		return nil, err
	}
	if sb.SelfLoops {
		return nil, fmt.Errorf("%w: batch plan keeps the self-loops out of the CSR", ErrModel)
	}
	b := &Batch{Nodes: sb.Nodes, Indptr: sb.Indptr, Indices: sb.Indices, Adj: sb.Adj}
	b.degrees()
	if nodeScale != nil {
		b.FeatScale = make([]float32, len(sb.Nodes))
		for k, v := range sb.Nodes {
			b.FeatScale[k] = nodeScale[v]
		}
	}
	if sb.Adj != nil || sb.Mask.Bits != nil {
		b.Edges = bmm.Graph{Indptr: b.Indptr, Indices: b.Indices}
		b.tiles = denseTiles(sb.Mask)
		if sb.Adj == nil {
			b.makeAdj = sb.Adjacency
		}
	}
	return b, nil
}

// degrees sets b's Deg and DInv (D^-1/2) from its CSR, whose rows hold
// the self-loops.
func (b *Batch) degrees() {
	n := b.N()
	b.Deg, b.DInv = make([]float32, n), make([]float32, n)
	for v := range n {
		d := b.Indptr[v+1] - b.Indptr[v]
		b.Deg[v], b.DInv[v] = float32(d), float32(1/math.Sqrt(float64(d)))
	}
}

// selfMean is 1/Deg, the row scale of a mean over each node and its
// neighbours (every row holds its self-loop), made once.
func (b *Batch) selfMean() []float32 {
	b.selfInvOnce.Do(func() {
		b.selfInv = make([]float32, len(b.Deg))
		for v, d := range b.Deg {
			b.selfInv[v] = 1 / max(d, 1)
		}
	})
	return b.selfInv
}

// denseTileRows × denseTileCols is the tile of the cost model's
// DenseTiles.
const denseTileRows, denseTileCols = 64, 256

// denseTiles is the number of 64-row × 256-column tiles of a batch
// adjacency that hold an edge (the work a dense bit product cannot skip),
// from its tile mask.
func denseTiles(m bittensor.TileMask) int {
	if m.Cols != denseTileCols || denseTileRows%m.Rows != 0 {
		panic(fmt.Sprintf("layers: %d×%d tile mask, want tiles dividing %d×%d", m.Rows, m.Cols, denseTileRows, denseTileCols))
	}
	c := m.Coarsen(denseTileRows / m.Rows)
	return c.Count()
}

// csrTiles is denseTiles' count for the n×n adjacency of a CSR, read from
// its entries.
func csrTiles(n int, indptr, indices []int32) int {
	m := bittensor.NewTileMask(n, n, denseTileRows, denseTileCols)
	for r := range n {
		for _, c := range indices[indptr[r]:indptr[r+1]] {
			m.Set(r, int(c))
		}
	}
	return m.Count()
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
	if f.Dense == nil {
		return quantizeSparse(f, bits), nil
	}
	return quantizeRows(f, bits), nil
}

// inputParams is QuantizeInput's range for features whose values (a
// strided sample of the non-zeros) and counts are given.
func inputParams(binary bool, negative, nonZero int, sample []float32, bits int, dense bool) Params {
	// A signed range gives 0 a non-zero code, which makes every absent
	// entry of sparse features a stored one (rows×cols codes).
	if binary {
		return paramsFor(1, 0, 1) // codes equal the values: exact
	}
	unsigned := negative == 0 || (!dense && negative*100 <= nonZero)
	p := bestRange(sample, bits, unsigned)
	if unsigned && bits <= 2 {
		p = keepPresent(p, sample)
	}
	return p
}

// quantizeRows is QuantizeInput row after row, for either layout.
func quantizeRows(f *subgraph.Features, bits int) *Input {
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
	in.Params = inputParams(binary, negative, nonZero, sample, bits, f.Dense != nil)
	inv, off := in.Params.Requant()
	zero := qQuant(0, inv, off, in.Params.Bits)
	// Sized up front: grown by append, the three arrays were copied and
	// held twice over (bench/scale/RESULTS.md).
	stored := int64(nonZero)
	if zero != 0 {
		stored = int64(f.Rows) * int64(f.Cols)
	}
	in.Indices, in.Vals, in.Codes = make([]int32, 0, stored), make([]float32, 0, stored), make([]uint32, 0, stored)
	// prepare's view, made here while each row's codes are in cache: a
	// one-shot run would otherwise read every code again, on one core.
	sums, ones := make([]float32, f.Rows), true
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
		var sum int64
		for _, c := range in.Codes[in.Indptr[r]:] {
			sum += int64(c)
			ones = ones && c == 1
		}
		sums[r] = float32(sum)
	}
	in.prepOnce.Do(func() { in.rowSums, in.allOnes = sums, ones })
	return in
}

// keepPresent returns p, or when p rounds the smallest positive value of
// sample to code 0, the range of the same width whose first level keeps it:
// a count feature's 1s are most of its entries, and at 1 or 2 bits the
// least squared error over the values rounds them all away, which leaves
// the model the rare large counts only (bench/accuracy/RESULTS.md). Wider
// codes have levels enough for both.
func keepPresent(p Params, sample []float32) Params {
	vmin := float32(math.Inf(1))
	for _, v := range sample {
		if v > 0 && v < vmin {
			vmin = v
		}
	}
	inv, off := p.Requant()
	if math.IsInf(float64(vmin), 1) || qQuant(vmin, inv, off, p.Bits) != 0 {
		return p
	}
	// A step just under 2·vmin puts vmin above the first threshold (step/2).
	step := 1.99 * float64(vmin)
	return paramsFor(p.Bits, 0, step*(math.Exp2(float64(p.Bits))-1))
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
