package subgraph

import (
	"errors"
	"fmt"
	"iter"
	"math/bits"
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

// BatchOptions controls Batches.
type BatchOptions struct {
	PartsPerBatch int        // q: parts per batch (the last batch may have fewer); 0 means 1
	Order         BatchOrder // Sequential or Shuffled
	Seed          uint64     // the shuffle's seed
	SelfLoops     bool       // set the diagonal of each batch adjacency (Â = A + I)
	// Padding of the adjacency tensors; the zero value means
	// bittensor.DefaultPadding. It is also the tile of the zero-tile mask.
	Padding bittensor.Padding
}

// TileMask marks which tiles of a batch adjacency hold a one. A tile is
// Rows×Cols entries (the adjacency's padding: 16 rows × 256 columns by
// default, the GPU's b1 mma tile), so a kernel can skip the tiles of the
// block-diagonal adjacency that are all zero.
type TileMask struct {
	Rows, Cols         int      // tile extent in entries
	RowTiles, ColTiles int      // tiles down and across
	Bits               []uint64 // bit rt·ColTiles+ct is set when tile (rt, ct) is non-zero
}

// NonZero reports whether tile (rt, ct) holds a one.
func (m *TileMask) NonZero(rt, ct int) bool {
	i := rt*m.ColTiles + ct
	return m.Bits[i/64]>>(i%64)&1 != 0
}

// Count is the number of non-zero tiles.
func (m *TileMask) Count() int {
	c := 0
	for _, w := range m.Bits {
		c += bits.OnesCount64(w)
	}
	return c
}

// Batch is one Cluster-GCN mini-batch: the union of a few parts with every
// edge among them (including the edges between different parts of the
// batch, which Cluster-GCN restores).
type Batch struct {
	Index int
	Parts []int32 // the parts, in batch order
	// Nodes are the global node ids: local node i is Nodes[i]. Each part's
	// nodes are contiguous and ascending, Blocks[j]..Blocks[j+1] for Parts[j];
	// callers slice feature rows and labels with Nodes.
	Nodes  []int32
	Blocks []int32
	// Indptr/Indices is the batch's local CSR, rows sorted, without the
	// diagonal (SelfLoops adds it to Adj, not here).
	Indptr, Indices []int32
	// Adj is the Nodes×Nodes 1-bit adjacency packed ByRows: Adj.At(i, j) = 1
	// iff g stores the edge Nodes[i]→Nodes[j] (or i = j with SelfLoops).
	Adj       *bittensor.Tensor
	Mask      TileMask
	SelfLoops bool
}

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
// adjacency until asked. A plan is safe for concurrent use.
type BatchPlan struct {
	g         *Graph
	opt       BatchOptions
	partStart []int32 // nodes of part p: partNodes[partStart[p]:partStart[p+1]]
	partNodes []int32
	groups    [][]int32
	scratch   sync.Pool // *[]int32 of length N, all -1: global → local ids
}

// Batches plans Cluster-GCN batches of opt.PartsPerBatch parts each.
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
	if opt.Order != Sequential && opt.Order != Shuffled {
		return nil, fmt.Errorf("%w: order %v", ErrBatch, opt.Order)
	}
	if opt.Padding == (bittensor.Padding{}) {
		opt.Padding = bittensor.DefaultPadding
	}
	if _, err := bittensor.New(0, 0, 1, bittensor.ByRows, opt.Padding); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	bp := &BatchPlan{g: g, opt: opt, partStart: make([]int32, p.K+1), partNodes: make([]int32, g.N())}
	for _, part := range p.Parts {
		bp.partStart[part+1]++
	}
	for i := 0; i < p.K; i++ {
		bp.partStart[i+1] += bp.partStart[i]
	}
	fill := slices.Clone(bp.partStart[:p.K])
	for v, part := range p.Parts {
		bp.partNodes[fill[part]] = int32(v)
		fill[part]++
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
	for i := 0; i < p.K; i += q {
		bp.groups = append(bp.groups, order[i:min(p.K, i+q)])
	}
	n := g.N()
	bp.scratch.New = func() any {
		s := make([]int32, n)
		for i := range s {
			s[i] = -1
		}
		return &s
	}
	return bp, nil
}

// Len is the number of batches.
func (bp *BatchPlan) Len() int { return len(bp.groups) }

// Parts returns the parts of batch i.
func (bp *BatchPlan) Parts(i int) []int32 { return bp.groups[i] }

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

// Batch builds batch i: its nodes, local CSR, bit adjacency and tile mask.
func (bp *BatchPlan) Batch(i int) (*Batch, error) {
	if i < 0 || i >= len(bp.groups) {
		return nil, fmt.Errorf("%w: batch %d of %d", ErrBatch, i, len(bp.groups))
	}
	parts := bp.groups[i]
	b := &Batch{Index: i, Parts: slices.Clone(parts), Blocks: make([]int32, 1, len(parts)+1), SelfLoops: bp.opt.SelfLoops}
	for _, p := range parts {
		b.Nodes = append(b.Nodes, bp.partNodes[bp.partStart[p]:bp.partStart[p+1]]...)
		b.Blocks = append(b.Blocks, int32(len(b.Nodes)))
	}
	sp := bp.scratch.Get().(*[]int32)
	local := *sp
	for j, v := range b.Nodes {
		local[v] = int32(j)
	}
	b.Indptr = make([]int32, len(b.Nodes)+1)
	for j, v := range b.Nodes {
		start := len(b.Indices)
		for _, u := range bp.g.Neighbors(int(v)) {
			if l := local[u]; l >= 0 && u != v {
				b.Indices = append(b.Indices, l)
			}
		}
		slices.Sort(b.Indices[start:])
		b.Indptr[j+1] = int32(len(b.Indices))
	}
	for _, v := range b.Nodes {
		local[v] = -1
	}
	bp.scratch.Put(sp)
	adj, err := adjacency(len(b.Nodes), b.Indptr, b.Indices, b.SelfLoops, bp.opt.Padding)
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: %w", ErrBatch, i, err)
	}
	b.Adj = adj
	b.Mask = tileMask(len(b.Nodes), b.Indptr, b.Indices, b.SelfLoops, bp.opt.Padding)
	return b, nil
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

// tileMask marks the tiles of an n×n adjacency that hold a one.
func tileMask(n int, indptr, indices []int32, selfLoops bool, pad bittensor.Padding) TileMask {
	m := TileMask{Rows: pad.Lines, Cols: pad.Bits}
	m.RowTiles = (n + m.Rows - 1) / m.Rows
	m.ColTiles = (n + m.Cols - 1) / m.Cols
	m.Bits = make([]uint64, (m.RowTiles*m.ColTiles+63)/64)
	set := func(r, c int) {
		i := (r/m.Rows)*m.ColTiles + c/m.Cols
		m.Bits[i/64] |= 1 << (i % 64)
	}
	for r := 0; r < n; r++ {
		for _, c := range indices[indptr[r]:indptr[r+1]] {
			set(r, int(c))
		}
		if selfLoops {
			set(r, r)
		}
	}
	return m
}
