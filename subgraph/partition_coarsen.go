package subgraph

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/qgtc/qgtc/internal/par"
)

// wgraph is the partitioner's working graph: symmetric CSR without
// self-loops, with vertex and edge weights (a coarse vertex weighs as much as
// the nodes it stands for, a coarse edge as many edges as it merges).
type wgraph struct {
	xadj   []int32
	adjncy []int32
	adjwgt []int32
	vwgt   []int32
	tvwgt  int64
}

func (g *wgraph) n() int { return len(g.xadj) - 1 }

// fromGraph turns a Graph into a unit-weight working graph, symmetrizing it
// and dropping self-loops when needed.
func fromGraph(g *Graph, threads int) *wgraph {
	n := g.N()
	src := g
	sym, ok := symmetricRows(g, threads)
	if !ok {
		sym = isSymmetric(g)
	}
	if !sym {
		rev := g.Reverse()
		xadj := make([]int32, n+1)
		adj := make([]int32, 0, len(g.Indices)+len(rev.Indices))
		for v := 0; v < n; v++ {
			a, b := g.Neighbors(v), rev.Neighbors(v)
			i, j := 0, 0
			for i < len(a) || j < len(b) { // sorted union
				var u int32
				switch {
				case j == len(b) || (i < len(a) && a[i] < b[j]):
					u = a[i]
					i++
				case i == len(a) || b[j] < a[i]:
					u = b[j]
					j++
				default:
					u = a[i]
					i++
					j++
				}
				adj = append(adj, u)
			}
			xadj[v+1] = int32(len(adj))
		}
		src = &Graph{Indptr: xadj, Indices: adj}
	}
	w := &wgraph{xadj: make([]int32, n+1), vwgt: make([]int32, n), tvwgt: int64(n)}
	if threads > 1 && len(src.Indices) >= parallelEdges {
		// The same rows, counted and then filled on the cores.
		rows := &wgraph{xadj: src.Indptr, adjncy: src.Indices}
		forRows(rows, threads, func(lo, hi int) {
			for v := lo; v < hi; v++ {
				c := int32(0)
				for _, u := range src.Neighbors(v) {
					if int(u) != v {
						c++
					}
				}
				w.xadj[v+1], w.vwgt[v] = c, 1
			}
		})
		for v := 0; v < n; v++ {
			w.xadj[v+1] += w.xadj[v]
		}
		w.adjncy, w.adjwgt = make([]int32, w.xadj[n]), make([]int32, w.xadj[n])
		forRows(rows, threads, func(lo, hi int) {
			for v := lo; v < hi; v++ {
				p := w.xadj[v]
				for _, u := range src.Neighbors(v) {
					if int(u) != v {
						w.adjncy[p], w.adjwgt[p] = u, 1
						p++
					}
				}
			}
		})
		return w
	}
	w.adjncy = make([]int32, 0, len(src.Indices))
	for v := 0; v < n; v++ {
		for _, u := range src.Neighbors(v) {
			if int(u) != v {
				w.adjncy = append(w.adjncy, u)
			}
		}
		w.xadj[v+1] = int32(len(w.adjncy))
		w.vwgt[v] = 1
	}
	w.adjwgt = make([]int32, len(w.adjncy))
	for i := range w.adjwgt {
		w.adjwgt[i] = 1
	}
	return w
}

// isSymmetric reports whether every stored edge u→v has its v→u.
func isSymmetric(g *Graph) bool {
	rev := g.Reverse()
	return slices.Equal(rev.Indptr, g.Indptr) && slices.Equal(rev.Indices, g.Indices)
}

// coarsener holds scratch space reused across levels.
type coarsener struct {
	match, perm, htable []int32
	deg                 []int32
	cand                []int32 // proposeRounds' scratch
}

// coarsen builds the multilevel hierarchy: graphs[0] is g, graphs[i+1] is
// graphs[i] contracted along a matching, cmaps[i] maps graphs[i]'s vertices
// to graphs[i+1]'s. It stops at `to` vertices or once a level shrinks by
// less than 15% (METIS's COARSEN_FRACTION), which happens on graphs whose
// matchings run dry (stars, power-law hubs). level, when set, is told each
// new level's vertex count.
func coarsen(g *wgraph, to int, maxvwgt int32, threads int, r *rand.PCG, level func(cn int)) (graphs []*wgraph, cmaps [][]int32) {
	graphs = []*wgraph{g}
	var c coarsener
	for cur := g; cur.n() > to && len(cur.adjncy) > 0; {
		cmap, cn := c.matchLevel(cur, maxvwgt, threads, r)
		var next *wgraph
		if threads > 1 && len(cur.adjncy) >= parallelContractEdges {
			next = contractParallel(cur, cmap, cn, c.match, threads)
		} else {
			next = contract(cur, cmap, cn, c.match, &c.htable)
		}
		graphs = append(graphs, next)
		cmaps = append(cmaps, cmap)
		if level != nil {
			level(cn)
		}
		if float64(cn) > 0.85*float64(cur.n()) {
			break
		}
		cur = next
	}
	return graphs, cmaps
}

// matchLevel computes a sorted heavy-edge matching (vertices visited by
// increasing degree, see degreeOrder, each matched to its unmatched
// neighbour over the heaviest edge that keeps the pair under maxvwgt; on a
// large graph most pairs come first from proposeRounds), adds
// two-hop matches when more than 10% stay unmatched, and numbers the coarse
// vertices in order of their smallest member. It returns the coarse map and
// the coarse vertex count.
func (c *coarsener) matchLevel(g *wgraph, maxvwgt int32, threads int, r *rand.PCG) ([]int32, int) {
	n := g.n()
	c.match = grow(c.match, n)
	c.perm = grow(c.perm, n)
	match, perm := c.match, c.perm
	for i := range match {
		match[i] = -1
	}
	degreeOrder(g, perm, &c.deg, r)
	if len(g.adjncy) >= parallelMatchEdges {
		c.proposeRounds(g, maxvwgt, threads)
	}
	unmatched := 0
	lastFree := 0 // isolated vertices pair with the next free vertex in perm order
	for pi, v := range perm {
		if match[v] >= 0 {
			continue
		}
		best := v
		if g.xadj[v] == g.xadj[v+1] {
			lastFree = max(lastFree, pi+1)
			for ; lastFree < n; lastFree++ {
				u := perm[lastFree]
				if match[u] < 0 && g.vwgt[u]+g.vwgt[v] <= maxvwgt {
					best = u
					break
				}
			}
		} else {
			bw := int32(-1)
			vw := g.vwgt[v]
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				u := g.adjncy[e]
				if match[u] < 0 && g.adjwgt[e] > bw && vw+g.vwgt[u] <= maxvwgt {
					best, bw = u, g.adjwgt[e]
				}
			}
		}
		if best == v {
			unmatched++
			continue
		}
		match[v], match[best] = best, v
	}
	if unmatched > n/10 {
		for _, maxDeg := range []int32{2, 3, int32(n)} {
			unmatched = match2Hop(g, perm, match, maxvwgt, maxDeg, unmatched)
			if unmatched <= n/10+n/20 {
				break
			}
		}
	}
	cmap := make([]int32, n)
	cn := int32(0)
	for v := 0; v < n; v++ {
		u := match[v]
		if u < 0 {
			match[v] = int32(v)
			u = int32(v)
		}
		if int(u) >= v {
			cmap[v] = cn
			cmap[u] = cn
			cn++
		}
	}
	return cmap, int(cn)
}

// parallelMatchEdges is the graph size from which matching starts with
// rounds of mutual proposals (proposeRounds). It is a size, not a thread
// count, so that a graph's partition never depends on the threads.
const parallelMatchEdges = 1 << 20

// proposeRounds matches most vertices of a large graph in parallel, the
// same way on any number of threads: in each round every unmatched vertex
// proposes to its unmatched neighbour over the heaviest edge that keeps the
// pair under maxvwgt (ties by a hash of the edge, which spreads the
// proposals: ties to the lowest degree sent most of a level's vertices to a
// few), and two vertices that propose to each other match. The greedy
// visit of matchLevel then takes the vertices left over.
func (c *coarsener) proposeRounds(g *wgraph, maxvwgt int32, threads int) {
	n := g.n()
	match := c.match
	c.cand = grow(c.cand, n)
	cand := c.cand
	for v := range cand {
		cand[v] = -1
	}
	for round := 0; round < 6; round++ {
		// A proposal stands while its target is free (the others can only
		// have gone), and a vertex with none never gets one (-2): only
		// vertices whose target matched elsewhere look again.
		forRows(g, threads, func(lo, hi int) {
			for v := lo; v < hi; v++ {
				if match[v] >= 0 || cand[v] == -2 || (cand[v] >= 0 && match[cand[v]] < 0) {
					continue
				}
				best, bw, bh := int32(-1), int32(-1), uint32(0)
				vw := g.vwgt[v]
				for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
					u := g.adjncy[e]
					w := g.adjwgt[e]
					if w < bw || match[u] >= 0 || vw+g.vwgt[u] > maxvwgt {
						continue
					}
					if h := edgeHash(int32(v), u); w > bw || h > bh {
						best, bw, bh = u, w, h
					}
				}
				if best < 0 {
					best = -2
				}
				cand[v] = best
			}
		})
		var made atomic.Int64
		forRows(g, threads, func(lo, hi int) {
			m := 0
			for v := lo; v < hi; v++ {
				if u := cand[v]; u >= 0 && match[v] < 0 && cand[u] == int32(v) {
					match[v] = u
					m++
				}
			}
			made.Add(int64(m))
		})
		// Later rounds find fewer and fewer pairs; the greedy visit is
		// cheaper than another round over every vertex for the last few.
		if made.Load() < int64(n)/50 {
			break
		}
	}
}

// edgeHash orders the edges of equal weight, the same from either end.
func edgeHash(a, b int32) uint32 {
	if a > b {
		a, b = b, a
	}
	x := uint64(uint32(a))<<32 | uint64(uint32(b))
	x = (x ^ x>>33) * 0xff51afd7ed558ccd
	x = (x ^ x>>33) * 0xc4ceb9fe1a85ec53
	return uint32(x >> 32)
}

// match2Hop pairs unmatched vertices of degree <= maxDeg that share a
// neighbour (METIS's Match_2HopAny): on power-law graphs the leaves of a hub
// cannot match each other directly, and without this coarsening stalls.
func match2Hop(g *wgraph, perm, match []int32, maxvwgt, maxDeg int32, unmatched int) int {
	n := g.n()
	// For each pivot, the unmatched low-degree vertices next to it.
	colptr := make([]int32, n+1)
	for v := 0; v < n; v++ {
		if d := g.xadj[v+1] - g.xadj[v]; match[v] < 0 && d > 0 && d <= maxDeg {
			for _, u := range g.adjncy[g.xadj[v]:g.xadj[v+1]] {
				colptr[u+1]++
			}
		}
	}
	for v := 0; v < n; v++ {
		colptr[v+1] += colptr[v]
	}
	rows := make([]int32, colptr[n])
	fill := slices.Clone(colptr[:n])
	for _, v := range perm {
		if d := g.xadj[v+1] - g.xadj[v]; match[v] < 0 && d > 0 && d <= maxDeg {
			for _, u := range g.adjncy[g.xadj[v]:g.xadj[v+1]] {
				rows[fill[u]] = v
				fill[u]++
			}
		}
	}
	for _, pivot := range perm {
		list := rows[colptr[pivot]:colptr[pivot+1]]
		for i := 0; i < len(list); i++ {
			a := list[i]
			if match[a] >= 0 {
				continue
			}
			for j := i + 1; j < len(list); j++ {
				b := list[j]
				if match[b] < 0 && g.vwgt[a]+g.vwgt[b] <= maxvwgt {
					match[a], match[b] = b, a
					unmatched -= 2
					i = j
					break
				}
			}
		}
	}
	return unmatched
}

// degreeOrder fills perm with the visiting order of the sorted heavy-edge
// matching: vertices by increasing degree, and within a degree in id order
// after n/8 random swaps (as METIS perturbs it; a full shuffle gave cuts
// within 0.3% of these on the bundled graphs). METIS also caps the degree
// key at 0.7 × the average degree: that cut 0.5-2% fewer edges on the
// bundled graphs but 3-7% more on planted-partition graphs, so the full
// degree is kept.
func degreeOrder(g *wgraph, perm []int32, scratch *[]int32, r *rand.PCG) {
	n := g.n()
	rp := make([]int32, n)
	for i := range rp {
		rp[i] = int32(i)
	}
	for s := 0; s < n/8; s++ {
		i, j := below(uint32(r.Uint64()), uint32(n)), below(uint32(r.Uint64()), uint32(n))
		rp[i], rp[j] = rp[j], rp[i]
	}
	limit := int32(1)
	for v := 0; v < n; v++ {
		limit = max(limit, g.xadj[v+1]-g.xadj[v])
	}
	// Degrees above 2^16 share the last bucket, which keeps it small.
	limit = min(limit, 1<<16)
	cnt := grow(*scratch, int(limit)+2)
	*scratch = cnt
	clear(cnt)
	for v := 0; v < n; v++ {
		cnt[min(g.xadj[v+1]-g.xadj[v], limit)+1]++
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	for _, v := range rp {
		d := min(g.xadj[v+1]-g.xadj[v], limit)
		perm[cnt[d]] = v
		cnt[d]++
	}
}

// contract builds the coarse graph of a matching: coarse vertex c merges
// the members of its pair, its edges are the merged edges to other coarse
// vertices with summed weights (an edge inside the pair disappears).
func contract(g *wgraph, cmap []int32, cn int, match []int32, htable *[]int32) *wgraph {
	n := g.n()
	*htable = grow(*htable, cn)
	ht := (*htable)[:cn]
	for i := range ht {
		ht[i] = -1
	}
	cg := &wgraph{xadj: make([]int32, cn+1), vwgt: make([]int32, cn), tvwgt: g.tvwgt}
	adj := make([]int32, 0, len(g.adjncy))
	wgt := make([]int32, 0, len(g.adjncy))
	for v := 0; v < n; v++ {
		if int(match[v]) < v {
			continue
		}
		c := cmap[v]
		adj, wgt, cg.vwgt[c] = contractRow(g, cmap, match, int32(v), c, ht, adj, wgt)
		cg.xadj[c+1] = int32(len(adj))
	}
	cg.adjncy = slices.Clone(adj)
	cg.adjwgt = slices.Clone(wgt)
	return cg
}

// contractRow appends the row of coarse vertex c, made of its leader v and
// v's match, to adj and wgt: edges to the same coarse neighbour merge
// (through ht, all -1 on entry and on return), edges inside c go. It
// returns the grown slices and c's weight.
func contractRow(g *wgraph, cmap, match []int32, v, c int32, ht, adj, wgt []int32) ([]int32, []int32, int32) {
	u := match[v]
	start := len(adj)
	members := [2]int32{v, u}
	nm, w := 2, g.vwgt[v]
	if u == v {
		nm = 1
	} else {
		w += g.vwgt[u]
	}
	for _, x := range members[:nm] {
		for e := g.xadj[x]; e < g.xadj[x+1]; e++ {
			cw := cmap[g.adjncy[e]]
			if cw == c {
				continue
			}
			if p := ht[cw]; p >= 0 {
				wgt[p] += g.adjwgt[e]
			} else {
				ht[cw] = int32(len(adj))
				adj = append(adj, cw)
				wgt = append(wgt, g.adjwgt[e])
			}
		}
	}
	for _, cw := range adj[start:] {
		ht[cw] = -1
	}
	return adj, wgt, w
}

// parallelContractEdges is the graph size from which contraction is split
// over goroutines (below it the start-up costs more than it saves).
const parallelContractEdges = parallelEdges

// contractParallel is contract split over threads goroutines by ranges of
// coarse vertices of about equal edge volume, several per goroutine; each
// range's rows are built with its goroutine's hash table, then copied into
// place on the cores, so the result is identical to contract's.
func contractParallel(g *wgraph, cmap []int32, cn int, match []int32, threads int) *wgraph {
	leader := make([]int32, cn)
	forRows(g, threads, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			if int(match[v]) >= v {
				leader[cmap[v]] = int32(v)
			}
		}
	})
	vol := func(c int) int {
		v := leader[c]
		d := int(g.xadj[v+1] - g.xadj[v])
		if u := match[v]; u != v {
			d += int(g.xadj[u+1] - g.xadj[u])
		}
		return d
	}
	// Coarse vertices are numbered in the order of their leaders, so the
	// fine rows before a leader measure the volume before its coarse
	// vertex (the partners aside): ranges are found by binary search.
	pieces := threads * chunksPerThread
	per := len(g.adjncy)/pieces + 1
	bounds := []int{0}
	for c := 0; c < cn; {
		target := g.xadj[leader[c]] + int32(per)
		next, _ := slices.BinarySearchFunc(leader[c+1:], target, func(v, t int32) int { return cmp.Compare(g.xadj[v], t) })
		c += next + 1
		bounds = append(bounds, c)
	}
	type piece struct{ deg, adj, wgt []int32 }
	ps := make([]piece, len(bounds)-1)
	cg := &wgraph{xadj: make([]int32, cn+1), vwgt: make([]int32, cn), tvwgt: g.tvwgt}
	// Each participant builds the ranges it takes with its own hash table.
	var next atomic.Int32
	par.Run(min(threads, len(ps)), func(int) {
		ht := make([]int32, cn)
		for i := range ht {
			ht[i] = -1
		}
		for t := int(next.Add(1)) - 1; t < len(ps); t = int(next.Add(1)) - 1 {
			lo, hi := bounds[t], bounds[t+1]
			room := 0
			for c := lo; c < hi; c++ {
				room += vol(c)
			}
			pc := piece{deg: make([]int32, hi-lo), adj: make([]int32, 0, room), wgt: make([]int32, 0, room)}
			for c := lo; c < hi; c++ {
				start := len(pc.adj)
				pc.adj, pc.wgt, cg.vwgt[c] = contractRow(g, cmap, match, leader[c], int32(c), ht, pc.adj, pc.wgt)
				pc.deg[c-lo] = int32(len(pc.adj) - start)
			}
			ps[t] = pc
		}
	})
	offs := make([]int, len(ps)+1)
	for t, pc := range ps {
		offs[t+1] = offs[t] + len(pc.adj)
	}
	cg.adjncy, cg.adjwgt = make([]int32, offs[len(ps)]), make([]int32, offs[len(ps)])
	runChunks(bounds, threads, func(t, lo, _ int) {
		pc := ps[t]
		x := int32(offs[t])
		for i, d := range pc.deg {
			x += d
			cg.xadj[lo+i+1] = x
		}
		copy(cg.adjncy[offs[t]:], pc.adj)
		copy(cg.adjwgt[offs[t]:], pc.wgt)
	})
	return cg
}

// grow returns s resized to n, reallocating only when it is too short.
func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
