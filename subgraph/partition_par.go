package subgraph

import (
	"sync"
	"sync/atomic"
)

// parallelEdges is the edge count from which a pass over a working graph is
// split over goroutines; below it the start-up costs more than it saves.
const parallelEdges = 1 << 18

// forRows calls f over consecutive vertex ranges of g that together cover
// every vertex once, on up to threads goroutines when g is large enough.
// The ranges have about equal edge volume. f must only write state owned by
// its range, so the result is the same whatever threads is.
func forRows(g *wgraph, threads int, f func(lo, hi int)) {
	n := g.n()
	if threads <= 1 || len(g.adjncy) < parallelEdges || n < 2 {
		f(0, n)
		return
	}
	per := len(g.adjncy)/threads + 1
	var wg sync.WaitGroup
	lo := 0
	for lo < n {
		hi := lo + 1
		// The first vertex whose row starts at or past lo's start + per.
		target := g.xadj[lo] + int32(per)
		if int(target) >= len(g.adjncy) {
			hi = n
		} else {
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
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
		lo = hi
	}
	wg.Wait()
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
