package subgraph

import (
	"sync/atomic"

	"github.com/qgtc/qgtc/internal/par"
)

// parallelEdges is the edge count from which a pass over a working graph is
// split over goroutines; below it the start-up costs more than it saves.
const parallelEdges = 1 << 18

// forRows calls f over consecutive vertex ranges of g that together cover
// every vertex once, on up to threads goroutines when g is large enough.
// The ranges have about equal edge volume, several per goroutine, taken in
// turn as goroutines come free: one core held up elsewhere (a busy host,
// or a range of dense rows) no longer holds up the whole pass. f must only
// write state owned by its range, so the result is the same whatever
// threads is.
func forRows(g *wgraph, threads int, f func(lo, hi int)) {
	if !splitRows(g, threads) {
		f(0, g.n())
		return
	}
	runChunks(rowChunks(g, threads*chunksPerThread), threads, func(_, lo, hi int) { f(lo, hi) })
}

// chunksPerThread is how many ranges forRows makes per goroutine.
const chunksPerThread = 4

// splitRows reports whether a pass over g's rows is worth splitting.
func splitRows(g *wgraph, threads int) bool {
	return threads > 1 && len(g.adjncy) >= parallelEdges && g.n() >= 2
}

// runChunks calls f(c, bounds[c], bounds[c+1]) for every range c, on up to
// threads participants that take the ranges in turn (par.For).
func runChunks(bounds []int, threads int, f func(c, lo, hi int)) {
	par.For(len(bounds)-1, threads, func(c int) { f(c, bounds[c], bounds[c+1]) })
}

// rowChunks splits g's vertices into at most parts consecutive ranges of
// about equal edge volume, each at least one vertex: range c is
// bounds[c]..bounds[c+1].
func rowChunks(g *wgraph, parts int) []int {
	n := g.n()
	per := len(g.adjncy)/parts + 1
	bounds := []int{0}
	for lo := 0; lo < n; {
		hi := n
		// The first vertex whose row starts at or past lo's start + per.
		if target := g.xadj[lo] + int32(per); int(target) < len(g.adjncy) {
			a, b := lo+1, n
			for a < b {
				m := int(uint(a+b) >> 1)
				if g.xadj[m] < target {
					a = m + 1
				} else {
					b = m
				}
			}
			hi = max(a, lo+1)
		}
		bounds = append(bounds, hi)
		lo = hi
	}
	return bounds
}

// collectRows appends to dst, in increasing order, the vertices of g for
// which keep is true, tested on threads goroutines over ranges of rows
// when g is large enough.
func collectRows(g *wgraph, threads int, dst []int32, keep func(v int32) bool) []int32 {
	if !splitRows(g, threads) {
		for v := int32(0); int(v) < g.n(); v++ {
			if keep(v) {
				dst = append(dst, v)
			}
		}
		return dst
	}
	bounds := rowChunks(g, threads*chunksPerThread)
	parts := make([][]int32, len(bounds)-1)
	runChunks(bounds, threads, func(c, lo, hi int) {
		var part []int32
		for v := int32(lo); int(v) < hi; v++ {
			if keep(v) {
				part = append(part, v)
			}
		}
		parts[c] = part
	})
	for _, part := range parts {
		dst = append(dst, part...)
	}
	return dst
}

// componentSizes returns the vertex counts of g's connected components, in
// no particular order: a lock-free union-find over the edges (each root
// linked under the smaller one), run over vertex ranges in parallel.
func componentSizes(g *wgraph, threads int) []int {
	n := g.n()
	parent := make([]atomic.Int32, n)
	for v := range parent {
		parent[v].Store(int32(v))
	}
	find := func(x int32) int32 {
		for {
			p := parent[x].Load()
			if p == x {
				return x
			}
			if gp := parent[p].Load(); gp != p {
				parent[x].CompareAndSwap(p, gp) // path halving
			}
			x = p
		}
	}
	forRows(g, threads, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			for _, u := range g.adjncy[g.xadj[v]:g.xadj[v+1]] {
				if int(u) >= v {
					continue // each edge from its larger end
				}
				for a, b := int32(v), u; ; {
					ra, rb := find(a), find(b)
					if ra == rb {
						break
					}
					if ra < rb {
						ra, rb = rb, ra
					}
					if parent[ra].CompareAndSwap(ra, rb) {
						break
					}
				}
			}
		}
	})
	count := make([]int32, n)
	for v := range int32(n) {
		count[find(v)]++
	}
	var sizes []int
	for _, c := range count {
		if c > 0 {
			sizes = append(sizes, int(c))
		}
	}
	return sizes
}

// symmetricRows reports whether g is symmetric, checked in parallel, when
// threads are many and every row is strictly increasing (ok false
// otherwise: the caller then compares with g.Reverse, which is cheaper on
// one or two cores and also judges repeated entries). Each edge u<v is
// looked up in v's row; as many edges u>v as u<v then makes the lookups a
// bijection.
func symmetricRows(g *Graph, threads int) (sym, ok bool) {
	if threads < 4 {
		return false, false
	}
	var bad, asym atomic.Bool
	var up, down atomic.Int64
	forRows(&wgraph{xadj: g.Indptr, adjncy: g.Indices}, threads, func(lo, hi int) {
		var nu, nd int64
		for v := lo; v < hi && !bad.Load() && !asym.Load(); v++ {
			row := g.Neighbors(v)
			for i, u := range row {
				if i > 0 && row[i-1] >= u {
					bad.Store(true)
					return
				}
				switch {
				case int(u) > v:
					nu++
					if !hasEdge(g, int(u), int32(v)) {
						asym.Store(true)
					}
				case int(u) < v:
					nd++
				}
			}
		}
		up.Add(nu)
		down.Add(nd)
	})
	if bad.Load() {
		return false, false
	}
	return !asym.Load() && up.Load() == down.Load(), true
}

// evenChunks splits 0..n into at most parts ranges of about equal length
// (a single range [0, n] when n is small).
func evenChunks(n, parts int) []int {
	parts = max(1, min(parts, n/1024))
	bounds := make([]int, parts+1)
	for c := range bounds {
		bounds[c] = c * n / parts
	}
	return bounds
}
