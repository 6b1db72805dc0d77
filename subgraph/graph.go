package subgraph

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/qgtc/qgtc/internal/par"
)

// Errors for graph construction; wrapped with the offending values.
var (
	ErrGraph = errors.New("subgraph: bad graph")
)

// Graph is a directed graph in CSR form with int32 indices: the out-edges
// of node v are Indices[Indptr[v]:Indptr[v+1]], sorted ascending, without
// duplicates. An undirected graph stores each edge in both directions, so
// out- and in-edges coincide; In() gives the reverse graph otherwise.
type Graph struct {
	Indptr  []int32 // len N+1
	Indices []int32 // len NumEdges()
}

// N is the number of nodes.
func (g *Graph) N() int { return len(g.Indptr) - 1 }

// NumEdges is the number of stored (directed) edges.
func (g *Graph) NumEdges() int { return len(g.Indices) }

// Neighbors returns the out-neighbours of v (a view, not a copy).
func (g *Graph) Neighbors(v int) []int32 { return g.Indices[g.Indptr[v]:g.Indptr[v+1]] }

// Degree is the out-degree of v.
func (g *Graph) Degree(v int) int { return int(g.Indptr[v+1] - g.Indptr[v]) }

// Validate checks the CSR invariants: monotone indptr, indices in range,
// rows sorted without duplicates.
func (g *Graph) Validate() error {
	if len(g.Indptr) == 0 || g.Indptr[0] != 0 {
		return fmt.Errorf("%w: indptr must start with 0", ErrGraph)
	}
	n := g.N()
	if int(g.Indptr[n]) != len(g.Indices) {
		return fmt.Errorf("%w: indptr[%d]=%d but %d indices", ErrGraph, n, g.Indptr[n], len(g.Indices))
	}
	for v := 0; v < n; v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return fmt.Errorf("%w: indptr decreases at node %d", ErrGraph, v)
		}
		nb := g.Neighbors(v)
		for i, u := range nb {
			if u < 0 || int(u) >= n {
				return fmt.Errorf("%w: node %d has neighbour %d outside [0, %d)", ErrGraph, v, u, n)
			}
			if i > 0 && nb[i-1] >= u {
				return fmt.Errorf("%w: neighbours of node %d not sorted and unique at %d", ErrGraph, v, u)
			}
		}
	}
	return nil
}

// BuildOptions controls FromEdges.
type BuildOptions struct {
	Symmetrize bool // add the reverse of every edge
	SelfLoops  SelfLoopMode
}

// SelfLoopMode says what FromEdges does with self-loops.
type SelfLoopMode uint8

const (
	KeepSelfLoops   SelfLoopMode = iota // as given
	RemoveSelfLoops                     // drop every (v, v)
	AddSelfLoops                        // ensure every node has (v, v)
)

// FromEdges builds a CSR graph on n nodes from parallel src/dst lists,
// removing duplicate edges. An endpoint outside [0, n) is an error naming
// the edge.
func FromEdges(n int, src, dst []int32, opt BuildOptions) (*Graph, error) {
	if len(src) != len(dst) {
		return nil, fmt.Errorf("%w: %d sources but %d destinations", ErrGraph, len(src), len(dst))
	}
	if n < 0 || n > 1<<31-2 {
		return nil, fmt.Errorf("%w: node count %d", ErrGraph, n)
	}
	deg := make([]int64, n+1)
	count := func(u, v int32) {
		if opt.SelfLoops == RemoveSelfLoops && u == v {
			return
		}
		deg[u+1]++
	}
	for i := range src {
		u, v := src[i], dst[i]
		if u < 0 || int(u) >= n || v < 0 || int(v) >= n {
			return nil, fmt.Errorf("%w: edge %d (%d -> %d) has an endpoint outside [0, %d)", ErrGraph, i, u, v, n)
		}
		count(u, v)
		if opt.Symmetrize && u != v {
			count(v, u)
		}
	}
	if opt.SelfLoops == AddSelfLoops {
		for v := 0; v < n; v++ {
			deg[v+1]++
		}
	}
	fill, idx, err := rowStarts(deg)
	if err != nil {
		return nil, err
	}
	put := func(u, v int32) {
		if opt.SelfLoops == RemoveSelfLoops && u == v {
			return
		}
		idx[fill[u]] = v
		fill[u]++
	}
	for i := range src {
		put(src[i], dst[i])
		if opt.Symmetrize && src[i] != dst[i] {
			put(dst[i], src[i])
		}
	}
	if opt.SelfLoops == AddSelfLoops {
		for v := 0; v < n; v++ {
			put(int32(v), int32(v))
		}
	}
	// Sort and dedupe each row, compacting in place.
	indptr := make([]int32, n+1)
	w := int64(0)
	for v := 0; v < n; v++ {
		row := idx[deg[v]:deg[v+1]]
		slices.Sort(row)
		row = slices.Compact(row)
		copy(idx[w:], row)
		w += int64(len(row))
		indptr[v+1] = int32(w)
	}
	return &Graph{Indptr: indptr, Indices: slices.Clip(idx[:w])}, nil
}

// Reverse returns the graph with every edge reversed (the in-edges as CSR).
func (g *Graph) Reverse() *Graph {
	n := g.N()
	indptr := make([]int32, n+1)
	for _, u := range g.Indices {
		indptr[u+1]++
	}
	for v := 0; v < n; v++ {
		indptr[v+1] += indptr[v]
	}
	fill := slices.Clone(indptr[:n])
	idx := make([]int32, len(g.Indices))
	for v := 0; v < n; v++ { // rows visited in order keep each reversed row sorted
		for _, u := range g.Neighbors(v) {
			idx[fill[u]] = int32(v)
			fill[u]++
		}
	}
	return &Graph{Indptr: indptr, Indices: idx}
}

// Edges lists every stored edge as parallel source/destination slices in
// CSR order.
func (g *Graph) Edges() (src, dst []int32) {
	src = make([]int32, len(g.Indices))
	for v := 0; v < g.N(); v++ {
		for i := g.Indptr[v]; i < g.Indptr[v+1]; i++ {
			src[i] = int32(v)
		}
	}
	return src, slices.Clone(g.Indices)
}

// Rebuild returns a new graph from g's edges under opt, e.g. to symmetrize
// a directed graph or to add self-loops before GCN normalization.
func (g *Graph) Rebuild(opt BuildOptions) *Graph {
	src, dst := g.Edges()
	h, err := FromEdges(g.N(), src, dst, opt)
	if err != nil { // g's own edges are always in range
		panic(err)
	}
	return h
}

// Degrees returns the out-degree of every node (for an undirected graph,
// its degree).
func (g *Graph) Degrees() []int32 {
	d := make([]int32, g.N())
	for v := range d {
		d[v] = g.Indptr[v+1] - g.Indptr[v]
	}
	return d
}

// InDegrees returns the in-degree of every node.
func (g *Graph) InDegrees() []int32 {
	d := make([]int32, g.N())
	for _, u := range g.Indices {
		d[u]++
	}
	return d
}

// HasEdge reports whether u -> v is stored (binary search in u's row).
func (g *Graph) HasEdge(u, v int32) bool {
	_, ok := slices.BinarySearch(g.Neighbors(int(u)), v)
	return ok
}

// SelfLoops counts nodes with an edge to themselves.
func (g *Graph) SelfLoops() int {
	c := 0
	for v := 0; v < g.N(); v++ {
		if g.HasEdge(int32(v), int32(v)) {
			c++
		}
	}
	return c
}

// IsSymmetric reports whether every edge u -> v has its reverse v -> u.
func (g *Graph) IsSymmetric() bool {
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			if !g.HasEdge(u, int32(v)) {
				return false
			}
		}
	}
	return true
}

// NumUndirectedEdges counts the distinct unordered pairs {u, v}, u != v,
// joined by an edge in either direction: the "edges" figure papers and
// testdata/README.md quote. Self-loops are not counted.
// Rows are counted on all cores: each reverse lookup is a random read
// (bench/scale/RESULTS.md).
func (g *Graph) NumUndirectedEdges() int {
	const rows = 1 << 14
	n := g.N()
	counts := make([]int, (n+rows-1)/rows)
	par.For(len(counts), runtime.GOMAXPROCS(0), func(k int) {
		c := 0
		for v := k * rows; v < min(n, (k+1)*rows); v++ {
			for _, u := range g.Neighbors(v) {
				if int(u) > v || (int(u) < v && !g.HasEdge(u, int32(v))) {
					c++
				}
			}
		}
		counts[k] = c
	})
	c := 0
	for _, k := range counts {
		c += k
	}
	return c
}

// GCNNorm returns D^-1/2 per node, the symmetric normalization of GCN
// (Kipf & Welling): with selfLoops the degree counts one self-loop per
// node (as Â = A + I does; an existing self-loop is not counted twice),
// without it isolated nodes get 0 rather than +Inf, as PyG does.
func (g *Graph) GCNNorm(selfLoops bool) []float32 {
	out := make([]float32, g.N())
	for v := range out {
		d := g.Degree(v)
		if selfLoops && !g.HasEdge(int32(v), int32(v)) {
			d++
		}
		if d > 0 {
			out[v] = float32(1 / math.Sqrt(float64(d)))
		}
	}
	return out
}

// MeanNorm returns 1/deg per node (0 for isolated nodes), the weights of
// mean aggregation (GraphSAGE-mean).
func (g *Graph) MeanNorm() []float32 {
	out := make([]float32, g.N())
	for v := range out {
		if d := g.Degree(v); d > 0 {
			out[v] = 1 / float32(d)
		}
	}
	return out
}

// InducedSubgraph returns the subgraph on nodes, renumbered so that
// nodes[i] becomes node i, keeping every edge between two of them. Node
// ids must be in range and distinct.
func (g *Graph) InducedSubgraph(nodes []int32) (*Graph, error) {
	n := g.N()
	local := make(map[int32]int32, len(nodes))
	for i, v := range nodes {
		if v < 0 || int(v) >= n {
			return nil, fmt.Errorf("%w: induced subgraph: node %d outside [0, %d)", ErrGraph, v, n)
		}
		if _, dup := local[v]; dup {
			return nil, fmt.Errorf("%w: induced subgraph: node %d listed twice", ErrGraph, v)
		}
		local[v] = int32(i)
	}
	indptr := make([]int32, len(nodes)+1)
	var idx []int32
	for i, v := range nodes {
		start := len(idx)
		for _, u := range g.Neighbors(int(v)) {
			if w, ok := local[u]; ok {
				idx = append(idx, w)
			}
		}
		slices.Sort(idx[start:])
		indptr[i+1] = int32(len(idx))
	}
	return &Graph{Indptr: indptr, Indices: idx}, nil
}

// Components labels the weakly connected components: comp[v] is the
// component of v, numbered 0..count-1 in order of their smallest node.
func (g *Graph) Components() (comp []int32, count int) {
	n := g.N()
	parent := make([]int32, n)
	for v := range parent {
		parent[v] = int32(v)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for v := 0; v < n; v++ {
		for _, u := range g.Neighbors(v) {
			a, b := find(int32(v)), find(u)
			if a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	comp = make([]int32, n)
	id := make([]int32, n)
	for v := range id {
		id[v] = -1
	}
	for v := 0; v < n; v++ {
		r := find(int32(v))
		if id[r] < 0 {
			id[r] = int32(count)
			count++
		}
		comp[v] = id[r]
	}
	return comp, count
}

// LargestComponent returns the nodes of the largest weakly connected
// component in ascending order (ties go to the component with the
// smallest node).
func (g *Graph) LargestComponent() []int32 {
	comp, count := g.Components()
	size := make([]int, count)
	for _, c := range comp {
		size[c]++
	}
	best := 0
	for c := range size {
		if size[c] > size[best] {
			best = c
		}
	}
	var out []int32
	for v, c := range comp {
		if int(c) == best {
			out = append(out, int32(v))
		}
	}
	return out
}

// DegreeStats summarizes a degree sequence.
type DegreeStats struct {
	Min, Max     int
	Mean, Median float64
}

// DegreeStats returns min, mean, median and max of the out-degrees.
func (g *Graph) DegreeStats() DegreeStats {
	d := g.Degrees()
	if len(d) == 0 {
		return DegreeStats{}
	}
	slices.Sort(d)
	s := DegreeStats{Min: int(d[0]), Max: int(d[len(d)-1]), Mean: float64(g.NumEdges()) / float64(len(d))}
	if m := len(d) / 2; len(d)%2 == 1 {
		s.Median = float64(d[m])
	} else {
		s.Median = float64(d[m-1]+d[m]) / 2
	}
	return s
}

// rowStarts turns deg (row v's count at deg[v+1], deg[0] = 0) into row
// offsets in place and returns each row's next free slot and the indices
// to fill: the two passes of building a CSR from an edge stream.
func rowStarts(deg []int64) (fill []int64, idx []int32, err error) {
	n := len(deg) - 1
	for v := range n {
		deg[v+1] += deg[v]
	}
	if deg[n] > 1<<31-1 {
		return nil, nil, fmt.Errorf("%w: %d edges exceed int32 indexing", ErrGraph, deg[n])
	}
	fill = make([]int64, n)
	copy(fill, deg[:n])
	return fill, make([]int32, deg[n]), nil
}
