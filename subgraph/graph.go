package subgraph

import (
	"errors"
	"fmt"
	"slices"
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
	for v := 0; v < n; v++ {
		deg[v+1] += deg[v]
	}
	if deg[n] > 1<<31-1 {
		return nil, fmt.Errorf("%w: %d edges exceed int32 indexing", ErrGraph, deg[n])
	}
	fill := make([]int64, n)
	copy(fill, deg[:n])
	idx := make([]int32, deg[n])
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
