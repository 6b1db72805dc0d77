package subgraph

import (
	"errors"
	"fmt"
	"math"
	"runtime"
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
	wg := fromGraph(g)
	kwayPartition(wg, k, opt, p.Parts)
	return p, nil
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
