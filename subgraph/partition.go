package subgraph

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// ErrPartition reports a bad partitioning request or a partition vector that
// does not fit its graph.
var ErrPartition = errors.New("subgraph: bad partition")

// DefaultImbalance is the largest allowed part weight over the average, the
// same 1.03 as METIS's default ufactor=30.
const DefaultImbalance = 1.03

// PartitionOptions controls Partition. The zero value is the default:
// imbalance 1.03, seed 0, every available CPU.
type PartitionOptions struct {
	// Imbalance bounds max part size / (N/K); 0 means DefaultImbalance.
	// A part may also reach ceil(N/K) when that is larger.
	Imbalance float64
	// Seed fixes every random choice: the same graph, K, options and seed
	// always give the same partition, whatever Threads is.
	Seed uint64
	// Threads bounds the goroutines of the parallel phases (the two halves
	// of each recursive bisection run concurrently); 0 means GOMAXPROCS.
	Threads int
	// Iterations is the number of greedy refinement passes per level; 0
	// means 10 (METIS's niter).
	Iterations int
	// Progress, when set, hears how the work gets on: phase is
	// "coarsening" (done of total nodes merged away), "initial partition"
	// (parts made of K) or "refinement" (nodes refined of all levels').
	// It is called a few hundred times at most, never concurrently, and
	// does not change the result.
	Progress func(phase string, done, total int)
}

// Progress phases.
const (
	PhaseCoarsen = "coarsening"
	PhaseInitial = "initial partition"
	PhaseRefine  = "refinement"
)

// tracker forwards Progress calls one at a time, and only when the
// fraction done has grown by a percent or more, so a hot loop (or calls
// arriving out of order from several goroutines) may call it freely.
type tracker struct {
	mu    sync.Mutex
	f     func(phase string, done, total int)
	phase string
	pct   int
}

func newTracker(f func(string, int, int)) *tracker {
	if f == nil {
		return nil
	}
	return &tracker{f: f, pct: -1}
}

func (t *tracker) report(phase string, done, total int) {
	if t == nil {
		return
	}
	done = min(max(done, 0), total)
	pct := 100
	if total > 0 {
		pct = int(int64(done) * 100 / int64(total))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if phase == t.phase && pct <= t.pct {
		return
	}
	t.phase, t.pct = phase, pct
	t.f(phase, done, total)
}

// Partitioning assigns each node of a graph to one of K parts.
type Partitioning struct {
	K     int
	Parts []int32 // Parts[v] in [0, K)
	Seed  uint64
}

// PartitionStats describes the quality of a partitioning of an undirected graph.
type PartitionStats struct {
	Parts        int     `json:"parts"`
	Nodes        int     `json:"nodes"`
	Edges        int64   `json:"edges"`         // undirected edges, self-loops excluded
	EdgeCut      int64   `json:"edge_cut"`      // undirected edges whose ends lie in different parts
	KeptFraction float64 `json:"kept_fraction"` // edges inside parts / all edges
	Imbalance    float64 `json:"imbalance"`     // largest part size · K / N
	MinPart      int     `json:"min_part"`
	MaxPart      int     `json:"max_part"`
	EmptyParts   int     `json:"empty_parts"`
}

// Partition splits an undirected graph into k parts of nearly equal size
// with few edges between them: multilevel k-way partitioning as in METIS
// (Karypis & Kumar 1998). The graph is coarsened by heavy-edge matching
// (with METIS's two-hop matching for leftover vertices), the coarsest graph
// is split by multilevel recursive bisection (greedy graph growing and FM
// refinement), and each level is refined by greedy k-way boundary moves
// while projecting back, keeping every part within opt.Imbalance.
//
// On graphs whose small connected components (at most N/(2K) nodes) hold
// a tenth of the nodes or more, a second partition that keeps each small
// component whole (see packSmallComponents) is computed as well and the
// smaller cut is kept.
//
// A graph stored with only one direction of some edges is treated as its
// symmetric closure; self-loops are ignored.
func Partition(g *Graph, k int, opt PartitionOptions) (*Partitioning, error) {
	n := g.N()
	if n < 1 {
		return nil, fmt.Errorf("%w: graph has no nodes", ErrPartition)
	}
	if k < 1 || k > n {
		return nil, fmt.Errorf("%w: %d parts for %d nodes (want 1..%d)", ErrPartition, k, n, n)
	}
	if opt.Imbalance == 0 {
		opt.Imbalance = DefaultImbalance
	}
	if !(opt.Imbalance >= 1 && opt.Imbalance <= 100) {
		return nil, fmt.Errorf("%w: imbalance %g not in [1, 100]", ErrPartition, opt.Imbalance)
	}
	if opt.Threads <= 0 {
		opt.Threads = runtime.GOMAXPROCS(0)
	}
	if opt.Iterations <= 0 {
		opt.Iterations = 10
	}
	p := &Partitioning{K: k, Parts: make([]int32, n), Seed: opt.Seed}
	if k == 1 {
		return p, nil
	}
	wg := fromGraph(g, opt.Threads)
	if !hasSmallComponents(wg, k, opt.Threads) {
		kwayPartition(wg, k, opt, p.Parts)
		return p, nil
	}
	// Whether packing the small components beats partitioning everything
	// at once depends on the large components' structure: compute both
	// (concurrently when threads allow) and keep the smaller cut, ties to
	// the plain partition.
	packed := make([]int32, n)
	done := make(chan struct{})
	popt := opt
	if opt.Threads > 1 {
		popt.Progress = nil // it runs beside the plain partition, which reports
	}
	go func() {
		defer close(done)
		packSmallComponents(wg, k, popt, packed)
	}()
	if opt.Threads == 1 {
		<-done
	}
	kwayPartition(wg, k, opt, p.Parts)
	<-done
	if wcut(wg, packed) < wcut(wg, p.Parts) {
		copy(p.Parts, packed)
	}
	return p, nil
}

// hasSmallComponents reports whether components of at most N/(2K) nodes
// hold at least a tenth of the nodes and one part's worth: only then is
// the second, packed partition worth its time (CiteSeer: 36% of the nodes
// in small components; Cora 8% and the Amazon graphs 2%, where packing
// changed the cut by under 2%).
func hasSmallComponents(g *wgraph, k, threads int) bool {
	sizes := componentSizes(g, threads)
	limit := max(1, g.n()/(2*k))
	free := 0
	for _, s := range sizes {
		if s <= limit {
			free += s
		}
	}
	return free >= g.n()/k && free >= g.n()/10
}

// packSmallComponents handles graphs with many small connected components
// (Planetoid citation graphs, R-MAT's isolated nodes). A component of at
// most N/(2K) nodes costs nothing when kept whole, so the large components
// get only as many parts as their share of the nodes, K' = round(K·(N-F)/N)
// for F nodes in small components, and the small components fill the other
// K-K' parts and top up the rest, largest first into the lightest part. A
// final k-way refinement and balancing pass runs on the whole graph. It
// returns false, doing nothing, when the small components hold less than
// one part's worth of nodes.
func packSmallComponents(g *wgraph, k int, opt PartitionOptions, out []int32) bool {
	n := g.n()
	comp, sizes := wcomponents(g)
	limit := max(1, int64(n)/int64(2*k))
	var free int64
	for _, s := range sizes {
		if int64(s) <= limit {
			free += int64(s)
		}
	}
	if free < int64(n)/int64(k) {
		return false
	}
	small := func(v int) bool { return int64(sizes[comp[v]]) <= limit }
	kBig := int(math.Round(float64(k) * float64(int64(n)-free) / float64(n)))
	if int64(n) > free {
		kBig = min(max(kBig, 1), k-1, n-int(free))
	} else {
		kBig = 0
	}
	where := make([]int32, n)
	if kBig > 0 {
		// The subgraph of the large components, partitioned into kBig parts.
		var nodes []int32
		local := make([]int32, n)
		for v := 0; v < n; v++ {
			local[v] = -1
			if !small(v) {
				local[v] = int32(len(nodes))
				nodes = append(nodes, int32(v))
			}
		}
		sub := &wgraph{xadj: make([]int32, 1, len(nodes)+1), vwgt: make([]int32, len(nodes)), tvwgt: int64(len(nodes))}
		for i, v := range nodes {
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				sub.adjncy = append(sub.adjncy, local[g.adjncy[e]])
				sub.adjwgt = append(sub.adjwgt, g.adjwgt[e])
			}
			sub.xadj = append(sub.xadj, int32(len(sub.adjncy)))
			sub.vwgt[i] = g.vwgt[v]
		}
		subParts := make([]int32, len(nodes))
		if kBig == 1 {
			clear(subParts)
		} else {
			kwayPartition(sub, kBig, opt, subParts)
		}
		for i, v := range nodes {
			where[v] = subParts[i]
		}
	}
	// Small components, largest first (ties by component id), each whole
	// into the currently lightest part.
	load := make([]int64, k)
	for v := 0; v < n; v++ {
		if !small(v) {
			load[where[v]] += int64(g.vwgt[v])
		}
	}
	var order []int32
	for c, s := range sizes {
		if int64(s) <= limit {
			order = append(order, int32(c))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return sizes[b] - sizes[a] })
	h := &loadHeap{load: load}
	for p := range k {
		h.idx = append(h.idx, int32(p))
	}
	heap.Init(h)
	target := make([]int32, len(sizes))
	for _, c := range order {
		p := h.idx[0]
		target[c] = p
		load[p] += int64(sizes[c])
		heap.Fix(h, 0)
	}
	for v := 0; v < n; v++ {
		if small(v) {
			where[v] = target[comp[v]]
		}
	}
	kr := newKwayRefiner(k, opt, rng64(opt.Seed, 3))
	kr.refine(g, where, opt.Iterations, true, true)
	kr.fillEmpty()
	copy(out, where)
	return true
}

// loadHeap orders parts by load, then index.
type loadHeap struct {
	idx  []int32
	load []int64
}

func (h *loadHeap) Len() int { return len(h.idx) }
func (h *loadHeap) Less(i, j int) bool {
	a, b := h.idx[i], h.idx[j]
	return h.load[a] < h.load[b] || (h.load[a] == h.load[b] && a < b)
}
func (h *loadHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *loadHeap) Push(x any)    { h.idx = append(h.idx, x.(int32)) }
func (h *loadHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// wcomponents labels g's connected components (numbered by smallest
// vertex) and returns each component's vertex count.
func wcomponents(g *wgraph) (comp []int32, sizes []int) {
	n := g.n()
	comp = make([]int32, n)
	for i := range comp {
		comp[i] = -1
	}
	var stack []int32
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		c := int32(len(sizes))
		comp[s] = c
		size := 0
		stack = append(stack[:0], int32(s))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			size++
			for _, u := range g.adjncy[g.xadj[v]:g.xadj[v+1]] {
				if comp[u] < 0 {
					comp[u] = c
					stack = append(stack, u)
				}
			}
		}
		sizes = append(sizes, size)
	}
	return comp, sizes
}

// Check verifies that p is a partition of g's nodes into p.K parts.
func (p *Partitioning) Check(g *Graph) error {
	if p.K < 1 {
		return fmt.Errorf("%w: K=%d", ErrPartition, p.K)
	}
	if len(p.Parts) != g.N() {
		return fmt.Errorf("%w: %d assignments for %d nodes", ErrPartition, len(p.Parts), g.N())
	}
	for v, q := range p.Parts {
		if q < 0 || int(q) >= p.K {
			return fmt.Errorf("%w: node %d in part %d, outside [0, %d)", ErrPartition, v, q, p.K)
		}
	}
	return nil
}

// Members lists the nodes part by part, each part in node order: part q
// is nodes[starts[q]:starts[q+1]] (starts has K+1 entries).
func (p *Partitioning) Members() (starts, nodes []int32) {
	starts = make([]int32, p.K+1)
	for _, q := range p.Parts {
		starts[q+1]++
	}
	for q := range p.K {
		starts[q+1] += starts[q]
	}
	nodes = make([]int32, len(p.Parts))
	fill := slices.Clone(starts[:p.K])
	for v, q := range p.Parts {
		nodes[fill[q]] = int32(v)
		fill[q]++
	}
	return starts, nodes
}

// Stats computes the edge cut, kept fraction and balance of p on g. Edges
// are counted undirected: {u, v} is one edge whether g stores u→v, v→u or
// both, and self-loops are left out.
func (p *Partitioning) Stats(g *Graph) (PartitionStats, error) {
	if err := p.Check(g); err != nil {
		return PartitionStats{}, err
	}
	s := PartitionStats{Parts: p.K, Nodes: g.N()}
	s.Edges, s.EdgeCut = countCut(g, p.Parts)
	if s.Edges > 0 {
		s.KeptFraction = float64(s.Edges-s.EdgeCut) / float64(s.Edges)
	} else {
		s.KeptFraction = 1
	}
	sizes := make([]int, p.K)
	for _, q := range p.Parts {
		sizes[q]++
	}
	s.MinPart = math.MaxInt
	for _, c := range sizes {
		s.MinPart = min(s.MinPart, c)
		s.MaxPart = max(s.MaxPart, c)
		if c == 0 {
			s.EmptyParts++
		}
	}
	s.Imbalance = float64(s.MaxPart) * float64(p.K) / float64(g.N())
	return s, nil
}

// countCut counts undirected edges and cut edges. An edge stored in both
// directions is counted once from its smaller end; one stored in a single
// direction is found by a binary search of the reverse row.
func countCut(g *Graph, parts []int32) (edges, cut int64) {
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			if int(u) == v {
				continue
			}
			if int(u) > v || !hasEdge(g, int(u), int32(v)) {
				// Counted here: from the smaller end, or from the only end
				// that stores it.
				edges++
				if parts[u] != parts[v] {
					cut++
				}
			}
		}
	}
	return edges, cut
}

// hasEdge reports whether u→v is stored (rows are sorted).
func hasEdge(g *Graph, u int, v int32) bool {
	row := g.Neighbors(u)
	lo, hi := 0, len(row)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if row[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo < len(row) && row[lo] == v
}

// maxPartWeight is the largest part weight allowed for total weight tw in k
// parts at imbalance ub: floor(ub·tw/k), but never below ceil(tw/k).
func maxPartWeight(tw int64, k int, ub float64) int64 {
	m := int64(math.Floor(ub * float64(tw) / float64(k)))
	return max(m, (tw+int64(k)-1)/int64(k))
}
