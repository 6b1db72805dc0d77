package subgraph

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/qgtc/qgtc/bittensor"
)

// ErrBatch reports bad batching parameters.
var ErrBatch = errors.New("subgraph: bad batch request")

// BatchOrder says how parts are grouped into batches.
type BatchOrder uint8

const (
	// Sequential groups parts 0..q-1, q..2q-1, ...
	Sequential BatchOrder = iota
	// Shuffled groups the parts of a seeded random permutation (Cluster-GCN's
	// stochastic multiple partitions; a new seed per epoch gives new batches).
	Shuffled
)

func (o BatchOrder) String() string {
	switch o {
	case Sequential:
		return "sequential"
	case Shuffled:
		return "shuffled"
	}
	return fmt.Sprintf("BatchOrder(%d)", uint8(o))
}

// RowOrder says in which order a batch's nodes become its rows.
type RowOrder uint8

const (
	// PartRows: each part's nodes ascending, parts in batch order (the
	// batch's Blocks say where each part starts).
	PartRows RowOrder = iota
	// SortedRows: all nodes by ascending global id.
	SortedRows
	// BandRows: breadth-first over the batch's subgraph, each component
	// started from its smallest node (Cuthill–McKee without the degree
	// sort). Neighbours get nearby rows, so the packed adjacency is banded
	// and its rows have long runs of zero words, which bit kernels skip.
	BandRows
)

// BatchOptions controls Batches.
type BatchOptions struct {
	PartsPerBatch int        // q: parts per batch (the last batch may have fewer); 0 means 1
	Order         BatchOrder // Sequential or Shuffled
	Seed          uint64     // the shuffle's seed
	Rows          RowOrder   // the row order inside a batch
	SelfLoops     bool       // set the diagonal of each batch adjacency (Â = A + I)
	// LoopsInCSR (with SelfLoops) also puts the diagonal in the local CSR,
	// sorted into each row: the CSR is then Â itself, as the float
	// simulation and the edge-list aggregations read it.
	LoopsInCSR bool
	// CSROnly leaves out the packed adjacency and its tile mask (training
	// in float needs only the CSR).
	CSROnly bool
	// LazyAdj keeps the tile mask but leaves the packed adjacency to
	// Batch.Adjacency: an n-node batch's is n²/8 bytes, which a plan that
	// aggregates over the edge list never reads.
	LazyAdj bool
	// Padding of the adjacency tensors; the zero value means
	// bittensor.DefaultPadding. It is also the tile of the zero-tile mask.
	Padding bittensor.Padding
}

// Batch is one Cluster-GCN mini-batch: the union of a few parts with every
// edge among them (including the edges between different parts of the
// batch, which Cluster-GCN restores).
type Batch struct {
	Index int
	Parts []int32 // the parts, in batch order
	// Nodes are the global node ids: local node i is Nodes[i]; callers
	// slice feature rows and labels with Nodes. With PartRows each part's
	// nodes are contiguous and ascending, Blocks[j]..Blocks[j+1] for
	// Parts[j]; other row orders mix the parts and Blocks is nil.
	Nodes  []int32
	Blocks []int32
	// Indptr/Indices is the batch's local CSR, each row sorted; it holds
	// the diagonal only with LoopsInCSR.
	Indptr, Indices []int32
	// Adj is the Nodes×Nodes 1-bit adjacency packed ByRows: Adj.At(i, j) = 1
	// iff the CSR holds (i, j), or i = j with SelfLoops; nil with CSROnly.
	// Mask marks its non-zero tiles (tiles of the padding's extent).
	Adj  *bittensor.Tensor
	Mask bittensor.TileMask
	// SelfLoops: Adj is the CSR plus the diagonal (false when the CSR
	// already holds it: LoopsInCSR).
	SelfLoops bool
	pad       bittensor.Padding
}

// Adjacency returns Adj, or makes it from the CSR where the plan left it
// out (LazyAdj). It does not keep what it makes.
func (b *Batch) Adjacency() (*bittensor.Tensor, error) {
	if b.Adj != nil {
		return b.Adj, nil
	}
	adj, err := adjacency(len(b.Nodes), b.Indptr, b.Indices, b.SelfLoops, b.pad)
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: %w", ErrBatch, b.Index, err)
	}
	return adj, nil
}

// CSR is the batch's local graph (a view of Indptr and Indices).
func (b *Batch) CSR() *Graph { return &Graph{Indptr: b.Indptr, Indices: b.Indices} }

// Ones is the number of ones in Adj.
func (b *Batch) Ones() int {
	n := len(b.Indices)
	if b.SelfLoops {
		n += len(b.Nodes)
	}
	return n
}

// BatchPlan groups the parts of a partitioning into batches; Batch(i)
// builds batch i on demand, so a plan over a large graph holds no
// adjacency until asked. It is the one batcher: inference (BandRows, Â in
// the CSR, packed), quantization-aware and fp32 training (Shuffle per
// epoch, CSR only) and qgtc partition --batch all read it. A plan is safe
// for concurrent use.
type BatchPlan struct {
	*partIndex
	opt    BatchOptions
	groups [][]int32
}

// partIndex is what every grouping of one partitioning shares: the nodes
// of each part and the global → local scratch.
type partIndex struct {
	g         *Graph
	k         int
	partStart []int32 // nodes of part p: partNodes[partStart[p]:partStart[p+1]]
	partNodes []int32
	scratch   sync.Pool // *[]int32 of length N, all -1: global → local ids
}

// Batches plans Cluster-GCN batches of opt.PartsPerBatch parts each. Parts
// with no node are left out of the grouping's batches; a group of empty
// parts only is no batch.
func Batches(g *Graph, p *Partitioning, opt BatchOptions) (*BatchPlan, error) {
	if err := p.Check(g); err != nil {
		return nil, err
	}
	q := opt.PartsPerBatch
	if q == 0 {
		q = 1
	}
	if q < 1 || q > p.K {
		return nil, fmt.Errorf("%w: %d parts per batch with %d parts", ErrBatch, opt.PartsPerBatch, p.K)
	}
	opt.PartsPerBatch = q
	if opt.Order != Sequential && opt.Order != Shuffled {
		return nil, fmt.Errorf("%w: order %v", ErrBatch, opt.Order)
	}
	if opt.Rows > BandRows {
		return nil, fmt.Errorf("%w: row order %d", ErrBatch, opt.Rows)
	}
	if opt.LoopsInCSR && !opt.SelfLoops {
		return nil, fmt.Errorf("%w: LoopsInCSR without SelfLoops", ErrBatch)
	}
	if opt.Padding == (bittensor.Padding{}) {
		opt.Padding = bittensor.DefaultPadding
	}
	if _, err := bittensor.New(0, 0, 1, bittensor.ByRows, opt.Padding); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	ix := &partIndex{g: g, k: p.K}
	ix.partStart, ix.partNodes = p.Members()
	n := g.N()
	ix.scratch.New = func() any {
		s := make([]int32, n)
		for i := range s {
			s[i] = -1
		}
		return &s
	}
	order := make([]int32, p.K)
	for i := range order {
		order[i] = int32(i)
	}
	if opt.Order == Shuffled {
		r := rng64(opt.Seed, 7)
		for i := len(order) - 1; i > 0; i-- {
			j := int(below(uint32(r.Uint64()), uint32(i+1)))
			order[i], order[j] = order[j], order[i]
		}
	}
	return ix.plan(opt, order), nil
}

// Shuffle returns the plan of the same partitioning and options whose
// parts are grouped in the order r.Shuffle gives 0..K-1 (what r.Perm(K)
// returns): a Cluster-GCN training epoch, drawn from the caller's
// generator so that its other draws stay in step.
func (bp *BatchPlan) Shuffle(r *rand.Rand) *BatchPlan {
	order := make([]int32, bp.k)
	for i := range order {
		order[i] = int32(i)
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return bp.plan(bp.opt, order)
}

// plan groups the parts in order q at a time, leaving out empty parts and
// empty groups.
func (ix *partIndex) plan(opt BatchOptions, order []int32) *BatchPlan {
	bp := &BatchPlan{partIndex: ix, opt: opt}
	for i := 0; i < len(order); i += opt.PartsPerBatch {
		var group []int32
		for _, p := range order[i:min(len(order), i+opt.PartsPerBatch)] {
			if ix.partStart[p+1] > ix.partStart[p] {
				group = append(group, p)
			}
		}
		if len(group) > 0 {
			bp.groups = append(bp.groups, group)
		}
	}
	return bp
}

// Len is the number of batches.
func (bp *BatchPlan) Len() int { return len(bp.groups) }

// Parts returns the parts of batch i.
func (bp *BatchPlan) Parts(i int) []int32 { return bp.groups[i] }

// Concurrency is how many batches to build at once: one a processor, no
// more than there are batches, and no more global → local scratches (4
// bytes a node each) than the graph's own CSR takes in memory.
func (bp *BatchPlan) Concurrency() int {
	byMem := (len(bp.g.Indptr) + len(bp.g.Indices)) / max(1, bp.g.N())
	return max(1, min(runtime.GOMAXPROCS(0), len(bp.groups), byMem))
}

// All yields every batch in order; it stops at the first error.
func (bp *BatchPlan) All() iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		for i := range bp.groups {
			b, err := bp.Batch(i)
			if !yield(b, err) || err != nil {
				return
			}
		}
	}
}

// Batch builds batch i: its nodes, local CSR and, unless CSROnly, its bit
// adjacency and tile mask.
func (bp *BatchPlan) Batch(i int) (*Batch, error) {
	if i < 0 || i >= len(bp.groups) {
		return nil, fmt.Errorf("%w: batch %d of %d", ErrBatch, i, len(bp.groups))
	}
	parts := bp.groups[i]
	b := &Batch{Index: i, Parts: slices.Clone(parts), SelfLoops: bp.opt.SelfLoops && !bp.opt.LoopsInCSR}
	if bp.opt.Rows == PartRows {
		b.Blocks = make([]int32, 1, len(parts)+1)
	}
	for _, p := range parts {
		b.Nodes = append(b.Nodes, bp.partNodes[bp.partStart[p]:bp.partStart[p+1]]...)
		if b.Blocks != nil {
			b.Blocks = append(b.Blocks, int32(len(b.Nodes)))
		}
	}
	if bp.opt.Rows != PartRows && len(parts) > 1 {
		slices.Sort(b.Nodes)
	}
	sp := bp.scratch.Get().(*[]int32)
	local := *sp
	for j, v := range b.Nodes {
		local[v] = int32(j)
	}
	if bp.opt.Rows == BandRows {
		b.Nodes = bandOrder(bp.g, b.Nodes, local)
		for j, v := range b.Nodes {
			local[v] = int32(j)
		}
	}
	loops := bp.opt.LoopsInCSR
	b.Indptr = make([]int32, len(b.Nodes)+1)
	for j, v := range b.Nodes {
		start := len(b.Indices)
		for _, u := range bp.g.Neighbors(int(v)) {
			if l := local[u]; l >= 0 && u != v {
				b.Indices = append(b.Indices, l)
			}
		}
		if loops {
			b.Indices = append(b.Indices, int32(j))
		}
		slices.Sort(b.Indices[start:])
		b.Indptr[j+1] = int32(len(b.Indices))
	}
	for _, v := range b.Nodes {
		local[v] = -1
	}
	bp.scratch.Put(sp)
	if bp.opt.CSROnly {
		return b, nil
	}
	b.pad = bp.opt.Padding
	if !bp.opt.LazyAdj {
		adj, err := b.Adjacency()
		if err != nil {
			return nil, err
		}
		b.Adj = adj
	}
	// From the CSR, not the words: one visit per edge instead of one per
	// word of the n×n adjacency.
	b.Mask = bittensor.NewTileMask(len(b.Nodes), len(b.Nodes), bp.opt.Padding.Lines, bp.opt.Padding.Bits)
	for r := range b.Nodes {
		for _, c := range b.Indices[b.Indptr[r]:b.Indptr[r+1]] {
			b.Mask.Set(r, int(c))
		}
		if b.SelfLoops {
			b.Mask.Set(r, r)
		}
	}
	return b, nil
}

// bandOrder returns nodes (whose positions local holds) in breadth-first
// order over the subgraph they induce, each component started from its
// first node in the given order.
func bandOrder(g *Graph, nodes, local []int32) []int32 {
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

// adjacency sets one bit per CSR entry (and the diagonal with selfLoops)
// in a new n×n 1-bit tensor packed ByRows: one linear pass.
func adjacency(n int, indptr, indices []int32, selfLoops bool, pad bittensor.Padding) (*bittensor.Tensor, error) {
	t, err := bittensor.New(n, n, 1, bittensor.ByRows, pad)
	if err != nil {
		return nil, err
	}
	w := t.Words()
	lw := t.LineWords()
	for r := 0; r < n; r++ {
		row := w[r*lw : (r+1)*lw]
		for _, c := range indices[indptr[r]:indptr[r+1]] {
			row[c>>6] |= 1 << (c & 63)
		}
		if selfLoops {
			row[r>>6] |= 1 << (r & 63)
		}
	}
	return t, nil
}
