package subgraph

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// kwayPartition is the multilevel k-way driver (METIS's kmetis): coarsen to
// max(n/(20·log2 k), 30·k) vertices, split the coarsest graph by recursive
// bisection, then project back level by level, balancing and refining each.
func kwayPartition(g *wgraph, k int, opt PartitionOptions, out []int32) {
	n := g.n()
	coarsenTo := max(int(float64(n)/(20*math.Log2(float64(k)))), 30*k)
	maxvwgt := int32(max(1, min(int64(math.MaxInt32), int64(1.5*float64(g.tvwgt)/float64(coarsenTo)))))
	r := rng64(opt.Seed, 1)
	tr := newTracker(opt.Progress)
	toMerge := max(0, n-coarsenTo)
	tr.report(PhaseCoarsen, 0, toMerge)
	graphs, cmaps := coarsen(g, coarsenTo, maxvwgt, opt.Threads, r, func(cn int) { tr.report(PhaseCoarsen, n-cn, toMerge) })
	tr.report(PhaseCoarsen, toMerge, toMerge)
	cg := graphs[len(graphs)-1]
	where := make([]int32, cg.n())
	rb := &recursiveBisector{
		ub:       math.Pow(opt.Imbalance, 1/math.Log(float64(k))),
		sem:      make(chan struct{}, max(0, opt.Threads-1)),
		ncuts:    4,
		topDepth: topDepth(k),
		k:        k,
		tr:       tr,
	}
	rb.threads = opt.Threads
	rb.run(cg, k, splitmix(opt.Seed^0x5bd1e995), where, 0, 0)
	kr := newKwayRefiner(k, opt, rng64(opt.Seed, 2))
	// Refinement work is counted in nodes: every level's, the finest
	// (about half of them) pass by pass.
	total, done := 0, 0
	for _, h := range graphs {
		total += h.n()
	}
	for l := len(graphs) - 1; l >= 0; l-- {
		if l < len(graphs)-1 {
			fine, cmap, coarse := make([]int32, graphs[l].n()), cmaps[l], where
			forRows(graphs[l], opt.Threads, func(lo, hi int) {
				for v := lo; v < hi; v++ {
					fine[v] = coarse[cmap[v]]
				}
			})
			where = fine
		}
		ln := graphs[l].n()
		kr.onPass = func(pass int) { tr.report(PhaseRefine, done+ln*pass/max(1, opt.Iterations), total) }
		kr.refine(graphs[l], where, opt.Iterations, 2*(len(graphs)-1-l) >= len(graphs), l == 0)
		done += ln
		tr.report(PhaseRefine, done, total)
	}
	kr.onPass = nil
	kr.fillEmpty()
	copy(out, where)
}

// recursiveBisector splits a graph into k parts by multilevel bisection,
// running the two halves of each split concurrently while threads are free.
// Each call's randomness comes from its own seed, derived from its parent's,
// so the result does not depend on scheduling.
type recursiveBisector struct {
	ub       float64 // allowed imbalance of each bisection
	ncuts    int     // bisections tried per split near the top, the best kept
	threads  int     // goroutines for the passes over a large graph
	topDepth int     // splits at depth < topDepth try ncuts bisections, deeper ones one
	sem      chan struct{}
	k        int          // parts of the whole split, for progress
	made     atomic.Int64 // parts finished so far
	tr       *tracker
}

// run writes parts off..off+k-1 of g's vertices into out, and returns
// once every half it spawned has: a caller copies out as soon as run
// returns (a half still writing then was lost, and the parts depended on
// the goroutines' timing).
func (rb *recursiveBisector) run(g *wgraph, k int, seed uint64, out []int32, off int32, depth int) {
	if k == 1 || g.n() <= 1 {
		for i := range out {
			out[i] = off
		}
		if rb.tr != nil {
			rb.tr.report(PhaseInitial, int(rb.made.Add(int64(k))), rb.k)
		}
		return
	}
	k0 := k / 2
	ncuts := 1
	if depth < rb.topDepth {
		ncuts = rb.ncuts
	}
	where := mlBisect(g, float64(k0)/float64(k), rb.ub, ncuts, rb.threads, rng64(seed, 0))
	subs, vmaps := splitGraph(g, where, rb.threads)
	var halves sync.WaitGroup
	defer halves.Wait()
	for s := 0; s < 2; s++ {
		sub, vmap := subs[s], vmaps[s]
		ks, offs := k0, off
		if s == 1 {
			ks, offs = k-k0, off+int32(k0)
		}
		child := splitmix(seed*2 + uint64(s) + 1)
		task := func() {
			part := make([]int32, sub.n())
			rb.run(sub, ks, child, part, offs, depth+1)
			for i, v := range vmap {
				out[v] = part[i]
			}
		}
		// Spawn only worthwhile halves; writes go to disjoint entries of out.
		if sub.n() > 2000 {
			select {
			case rb.sem <- struct{}{}:
				halves.Add(1)
				go func() {
					defer halves.Done()
					defer func() { <-rb.sem }()
					task()
				}()
				continue
			default:
			}
		}
		task()
	}
}

// splitGraph returns the subgraphs induced by each side of a bisection and,
// for each, the parent vertex of every subgraph vertex.
func splitGraph(g *wgraph, where []uint8, threads int) (subs [2]*wgraph, vmaps [2][]int32) {
	n := g.n()
	if threads > 1 && len(g.adjncy) >= parallelEdges {
		return splitGraphParallel(g, where, threads)
	}
	label := make([]int32, n)
	var cnt [2]int32
	var ne [2]int32
	for v := 0; v < n; v++ {
		s := where[v]
		label[v] = cnt[s]
		cnt[s]++
		for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
			if where[g.adjncy[e]] == s {
				ne[s]++
			}
		}
	}
	for s := 0; s < 2; s++ {
		subs[s] = &wgraph{
			xadj:   make([]int32, 1, cnt[s]+1),
			adjncy: make([]int32, 0, ne[s]),
			adjwgt: make([]int32, 0, ne[s]),
			vwgt:   make([]int32, 0, cnt[s]),
		}
		vmaps[s] = make([]int32, 0, cnt[s])
	}
	for v := 0; v < n; v++ {
		s := where[v]
		sg := subs[s]
		for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
			if u := g.adjncy[e]; where[u] == s {
				sg.adjncy = append(sg.adjncy, label[u])
				sg.adjwgt = append(sg.adjwgt, g.adjwgt[e])
			}
		}
		sg.xadj = append(sg.xadj, int32(len(sg.adjncy)))
		sg.vwgt = append(sg.vwgt, g.vwgt[v])
		sg.tvwgt += int64(g.vwgt[v])
		vmaps[s] = append(vmaps[s], int32(v))
	}
	return subs, vmaps
}

// splitGraphParallel is splitGraph with the rows counted and filled on the
// cores: the same subgraphs.
func splitGraphParallel(g *wgraph, where []uint8, threads int) (subs [2]*wgraph, vmaps [2][]int32) {
	n := g.n()
	label := make([]int32, n)
	deg := make([]int32, n) // v's neighbours on its side
	var cnt [2]int32
	for v := 0; v < n; v++ {
		label[v] = cnt[where[v]]
		cnt[where[v]]++
	}
	forRows(g, threads, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			s, d := where[v], int32(0)
			for _, u := range g.adjncy[g.xadj[v]:g.xadj[v+1]] {
				if where[u] == s {
					d++
				}
			}
			deg[v] = d
		}
	})
	for s := 0; s < 2; s++ {
		subs[s] = &wgraph{xadj: make([]int32, cnt[s]+1), vwgt: make([]int32, cnt[s])}
		vmaps[s] = make([]int32, cnt[s])
	}
	for v := 0; v < n; v++ {
		sg, l := subs[where[v]], label[v]
		sg.xadj[l+1] = sg.xadj[l] + deg[v]
		sg.vwgt[l] = g.vwgt[v]
		sg.tvwgt += int64(g.vwgt[v])
		vmaps[where[v]][l] = int32(v)
	}
	for s := 0; s < 2; s++ {
		m := subs[s].xadj[cnt[s]]
		subs[s].adjncy, subs[s].adjwgt = make([]int32, m), make([]int32, m)
	}
	forRows(g, threads, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			s := where[v]
			sg := subs[s]
			p := sg.xadj[label[v]]
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				if u := g.adjncy[e]; where[u] == s {
					sg.adjncy[p], sg.adjwgt[p] = label[u], g.adjwgt[e]
					p++
				}
			}
		}
	})
	return subs, vmaps
}

// kwayRefiner improves a k-way partition level by level with greedy
// boundary moves (METIS's Greedy_KWayOptimize): a boundary vertex moves to
// the neighbouring part it is most connected to when that lowers the cut,
// or keeps it and evens the balance, and the target has room.
type kwayRefiner struct {
	k       int
	ub      float64
	threads int // for the passes over every vertex, preconnect and refineRounds
	r       *rand.PCG
	g       *wgraph
	where   []int32
	pwgts   []int64
	maxpw   int64
	minpw   int64
	conn    []int32 // edge weight from the current vertex to each part; zero between uses
	touched []int32
	mark    []uint32
	stamp   uint32
	id, ed  []int32
	dirty   []int32 // pass+1 when the vertex's degrees changed in that pass
	q       *pqueue
	strict  bool     // no overshoot: the final pass after balancing
	target  []int32  // a round's proposed part per vertex (refineRounds)
	movedAt []uint32 // the round (stamp) in which the vertex last moved

	// preconnect's results for this pass (pre, preStamp): vertex v's
	// neighbour parts and connections are preP/preC[preChunk[v]][preOff[v]:][:preLn[v]]
	// where preMark[v] == preStamp, while changed[v] != preStamp.
	pre                     bool
	preStamp                uint32
	preMark, changed        []uint32
	preChunk, preOff, preLn []int32
	preP, preC              [][]int32
	onPass                  func(pass int) // called after each pass with the passes done
}

func newKwayRefiner(k int, opt PartitionOptions, r *rand.PCG) *kwayRefiner {
	return &kwayRefiner{k: k, ub: opt.Imbalance, threads: opt.Threads, r: r, conn: make([]int32, k), pwgts: make([]int64, k)}
}

// setup attaches a level's graph and partition.
func (kr *kwayRefiner) setup(g *wgraph, where []int32) {
	kr.g, kr.where = g, where
	clear(kr.pwgts)
	for v, p := range where {
		kr.pwgts[p] += int64(g.vwgt[v])
	}
	kr.maxpw = maxPartWeight(g.tvwgt, kr.k, kr.ub)
	kr.minpw = int64(float64(g.tvwgt) / float64(kr.k) / kr.ub)
	if cap(kr.mark) < g.n() {
		kr.mark = make([]uint32, g.n())
		kr.stamp = 0
		kr.movedAt = nil // holds stamps too
	}
	kr.mark = kr.mark[:g.n()]
}

// connect fills conn for v's neighbour parts and touched with those parts.
func (kr *kwayRefiner) connect(v int32) {
	g := kr.g
	kr.touched = kr.touched[:0]
	for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
		p := kr.where[g.adjncy[e]]
		if kr.conn[p] == 0 {
			kr.touched = append(kr.touched, p)
		}
		kr.conn[p] += g.adjwgt[e]
	}
}

// preconnect computes, on the refiner's threads, what connect would give
// for each of a pass's candidates, so that the serial pass only replays it
// for those none of whose neighbours has moved since (connectAt). It does
// nothing on one thread or a small graph, where connect's scan is cheaper
// than the bookkeeping; the pass is the same either way.
func (kr *kwayRefiner) preconnect(bnd []int32) bool {
	g := kr.g
	n := g.n()
	if kr.threads <= 1 || len(g.adjncy) < parallelEdges || len(bnd) < 2*kr.threads {
		return false
	}
	kr.preStamp++
	if len(kr.changed) < n {
		kr.preMark, kr.changed = make([]uint32, n), make([]uint32, n)
		kr.preChunk, kr.preOff, kr.preLn = make([]int32, n), make([]int32, n), make([]int32, n)
	}
	chunks := kr.threads
	if len(kr.preP) < chunks {
		kr.preP, kr.preC = make([][]int32, chunks), make([][]int32, chunks)
	}
	var wg sync.WaitGroup
	for c := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := make([]int32, kr.k)
			ps, cs := kr.preP[c][:0], kr.preC[c][:0]
			for _, v := range bnd[c*len(bnd)/chunks : (c+1)*len(bnd)/chunks] {
				start := len(ps)
				for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
					p := kr.where[g.adjncy[e]]
					if conn[p] == 0 {
						ps = append(ps, p)
					}
					conn[p] += g.adjwgt[e]
				}
				for _, p := range ps[start:] {
					cs = append(cs, conn[p])
					conn[p] = 0
				}
				kr.preMark[v] = kr.preStamp
				kr.preChunk[v], kr.preOff[v], kr.preLn[v] = int32(c), int32(start), int32(len(ps)-start)
			}
			kr.preP[c], kr.preC[c] = ps, cs
		}()
	}
	wg.Wait()
	return true
}

// connectAt is connect, from preconnect's results where they still hold.
func (kr *kwayRefiner) connectAt(v int32) {
	if !kr.pre || kr.preMark[v] != kr.preStamp || kr.changed[v] == kr.preStamp {
		kr.connect(v)
		return
	}
	c, off, ln := kr.preChunk[v], kr.preOff[v], kr.preLn[v]
	kr.touched = append(kr.touched[:0], kr.preP[c][off:off+ln]...)
	for i, p := range kr.touched {
		kr.conn[p] = kr.preC[c][int(off)+i]
	}
}

func (kr *kwayRefiner) release() {
	for _, p := range kr.touched {
		kr.conn[p] = 0
	}
}

// bestTarget is the neighbour part (not from) with room for weight vw that
// v is most connected to, ties to the lighter part; -1 if none.
func (kr *kwayRefiner) bestTarget(from int32, vw int64) (int32, int32) {
	best, bc := int32(-1), int32(-1)
	for _, p := range kr.touched {
		if p == from || kr.pwgts[p]+vw > kr.maxpw {
			continue
		}
		if c := kr.conn[p]; c > bc || (c == bc && kr.pwgts[p] < kr.pwgts[best]) {
			best, bc = p, c
		}
	}
	return best, bc
}

func (kr *kwayRefiner) moveTo(v, to int32) {
	vw := int64(kr.g.vwgt[v])
	kr.pwgts[kr.where[v]] -= vw
	kr.pwgts[to] += vw
	kr.where[v] = to
}

// refine runs up to niter greedy passes over one level. A pass pops
// candidate vertices (ed >= id) from a max-priority queue keyed by external
// minus internal degree; when a vertex moves, its neighbours' degrees are
// updated and those not yet visited in this pass are queued or re-keyed, as
// in METIS, so one pass follows a chain of improvements (on a large graph,
// rounds of moves chosen on the cores come first: refineRounds; the greedy
// passes then take the chains rounds cannot). Moves may overshoot
// the weight limit in proportion to their gain (see overshoot). As in
// METIS's RefineKWay, balanceFirst (the finer half of the levels) first
// rebalances a partition more than 2% over the limit, and final (the input
// graph) ends with a strict balance and a pass without overshoot.
func (kr *kwayRefiner) refine(g *wgraph, where []int32, niter int, balanceFirst, final bool) {
	kr.setup(g, where)
	if balanceFirst && slices.Max(kr.pwgts) > kr.maxpw+kr.maxpw/50 {
		kr.balance()
	}
	n := g.n()
	id, ed := grow(kr.id, n), grow(kr.ed, n)
	kr.id, kr.ed = id, ed
	forRows(g, kr.threads, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			var a, b int32
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				if where[g.adjncy[e]] == where[v] {
					a += g.adjwgt[e]
				} else {
					b += g.adjwgt[e]
				}
			}
			id[v], ed[v] = a, b
		}
	})
	if len(g.adjncy) >= parallelEdges {
		// Chosen by size, never by threads: the same partition on any core count.
		// Progress per level only: rounds take little time each, and a
		// pass's report just before the level's own was dropped by the CLI.
		onPass := kr.onPass
		kr.onPass = nil
		kr.refineRounds(niter)
		kr.greedyPasses(niter)
		kr.onPass = onPass
	} else {
		kr.greedyPasses(niter)
	}
	if final && slices.Max(kr.pwgts) > kr.maxpw {
		kr.balance()
		kr.strict = true
		kr.refine(g, where, niter, false, false)
		kr.strict = false
	}
}

// greedyPasses is refine's passes, one vertex at a time from a priority
// queue (see refine).
func (kr *kwayRefiner) greedyPasses(niter int) {
	g, where, id, ed := kr.g, kr.where, kr.id, kr.ed
	n := g.n()
	if kr.q == nil || len(kr.q.pos) < n {
		kr.q = newPQueue(n)
	}
	q := kr.q
	status := kr.mark // 0 idle, stamp = queued or visited in this pass
	var bnd []int32
	kr.dirty = grow(kr.dirty, n)
	dirty := kr.dirty
	clear(dirty)
	var touched []int32
	for pass := 0; pass < niter; pass++ {
		bnd = bnd[:0]
		// Only vertices with ed >= id can gain (or break even): no part
		// can hold more than all of v's external edges. After the first
		// pass only vertices whose degrees changed are looked at again.
		if pass == 0 {
			bnd = collectRows(g, kr.threads, bnd, func(v int32) bool { return ed[v] > 0 && ed[v] >= id[v] })
		} else {
			for _, v := range touched {
				if ed[v] > 0 && ed[v] >= id[v] {
					bnd = append(bnd, v)
				}
			}
		}
		touched = touched[:0]
		mark := int32(pass + 1)
		for i := len(bnd) - 1; i > 0; i-- {
			j := int(below(uint32(kr.r.Uint64()), uint32(i+1)))
			bnd[i], bnd[j] = bnd[j], bnd[i]
		}
		kr.stamp++
		q.reset()
		for _, v := range bnd {
			q.insert(v, kr.key(v))
			status[v] = kr.stamp
		}
		kr.pre = kr.preconnect(bnd)
		moves := 0
		gains := int64(0)
		for {
			v, ok := q.pop()
			if !ok {
				break
			}
			from := where[v]
			vw := int64(g.vwgt[v])
			if id[v] > 0 && kr.pwgts[from]-vw < kr.minpw {
				continue
			}
			kr.connectAt(v)
			to, c := kr.refineTarget(kr.conn, kr.touched, from, vw, id[v])
			blocked := to < 0 && canGain(kr.conn, kr.touched, from, id[v])
			kr.release()
			gain := c - id[v]
			if blocked || (to >= 0 && gain == 0 && !kr.evens(from, to, vw)) {
				// Held back by the balance, which later moves may change:
				// look again next pass.
				if dirty[v] != mark {
					dirty[v] = mark
					touched = append(touched, v)
				}
				continue
			}
			if to < 0 {
				continue
			}
			kr.moveTo(v, to)
			moves++
			gains += int64(gain)
			id[v], ed[v] = c, ed[v]+id[v]-c
			if dirty[v] != mark {
				dirty[v] = mark
				touched = append(touched, v)
			}
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				u := g.adjncy[e]
				w := g.adjwgt[e]
				if kr.pre {
					kr.changed[u] = kr.preStamp // its connections are not preconnect's any more
				}
				switch where[u] {
				case from:
					id[u] -= w
					ed[u] += w
				case to:
					id[u] += w
					ed[u] -= w
				default:
					continue
				}
				if dirty[u] != mark {
					dirty[u] = mark
					touched = append(touched, u)
				}
				live := ed[u] > 0 && ed[u] >= id[u]
				switch {
				case q.has(u) && live:
					q.update(u, kr.key(u))
				case q.has(u):
					q.remove(u)
				case status[u] != kr.stamp && live:
					q.insert(u, kr.key(u))
					status[u] = kr.stamp
				}
			}
		}
		// Stop when a pass no longer lowers the cut (METIS stops on an
		// unchanged cut too); balance-only moves go on in the next level.
		if kr.onPass != nil {
			kr.onPass(pass + 1)
		}
		if moves == 0 || gains == 0 {
			break
		}
	}
}

// evens reports whether moving weight vw from part from to part to helps
// the balance: the only reason to take a move that gains nothing.
func (kr *kwayRefiner) evens(from, to int32, vw int64) bool {
	return kr.pwgts[from] > kr.maxpw || kr.pwgts[to]+vw < kr.pwgts[from]
}

// canGain reports whether some neighbour part (v's connections conn to the
// parts touched) would take v without raising the cut, room aside.
func canGain(conn, touched []int32, from int32, id int32) bool {
	for _, p := range touched {
		if p != from && conn[p] >= id {
			return true
		}
	}
	return false
}

// overshoot is METIS's ffactor: a move that gains g may leave its target up
// to overshoot·g over the weight limit. Coarse levels thus keep moving whole
// communities; the finer levels restore the balance.
const overshoot = 5

// refineTarget picks the move for v (internal degree id, weight vw) as
// METIS's greedy refinement: the most connected neighbour part that is no
// worse than staying and has room up to the overshoot, ties to the
// lighter part; -1 when there is none. conn and touched are v's connections
// as connect fills them.
func (kr *kwayRefiner) refineTarget(conn, touched []int32, from int32, vw int64, id int32) (int32, int32) {
	best, bc := int32(-1), int32(-1)
	for _, p := range touched {
		c := conn[p]
		if p == from || c < id {
			continue
		}
		slack := overshoot * int64(c-id)
		if kr.strict {
			slack = 0
		}
		if kr.pwgts[p]+vw > kr.maxpw+slack {
			if best < 0 || c != bc {
				continue
			}
		}
		if c > bc || (c == bc && kr.pwgts[p] < kr.pwgts[best]) {
			best, bc = p, c
		}
	}
	return best, bc
}

// key is the queue priority of v: external minus internal degree. (METIS
// divides ed by sqrt of the number of neighbour parts; that needs a scan of
// v's neighbours per update and changed no cut in our tests.)
func (kr *kwayRefiner) key(v int32) int64 { return int64(kr.ed[v]) - int64(kr.id[v]) }

// balance moves vertices out of parts heavier than maxpw: in each
// overweight part, best gain first, to the most connected neighbour part
// with room, or to the lightest part when no neighbour part has room.
func (kr *kwayRefiner) balance() {
	g := kr.g
	for round := 0; round < 8; round++ {
		type cand struct {
			gain int64
			v    int32
		}
		var cands []cand
		for v := int32(0); int(v) < g.n(); v++ {
			from := kr.where[v]
			if kr.pwgts[from] <= kr.maxpw {
				continue
			}
			kr.connect(v)
			_, c := kr.bestTarget(from, int64(g.vwgt[v]))
			gain := int64(c) - int64(kr.conn[from])
			if c < 0 {
				gain = -int64(kr.conn[from]) - 1<<31
			}
			kr.release()
			cands = append(cands, cand{gain, v})
		}
		if len(cands) == 0 {
			return
		}
		slices.SortFunc(cands, func(a, b cand) int {
			if a.gain != b.gain {
				if a.gain > b.gain {
					return -1
				}
				return 1
			}
			return int(a.v - b.v)
		})
		moved := false
		for _, cd := range cands {
			v := cd.v
			from := kr.where[v]
			vw := int64(g.vwgt[v])
			if kr.pwgts[from] <= kr.maxpw {
				continue
			}
			kr.connect(v)
			to, _ := kr.bestTarget(from, vw)
			kr.release()
			if to < 0 {
				to = kr.lightest()
				if kr.pwgts[to]+vw > kr.maxpw && kr.pwgts[to]+vw >= kr.pwgts[from] {
					continue
				}
			}
			kr.moveTo(v, to)
			moved = true
		}
		if !moved {
			return
		}
	}
}

func (kr *kwayRefiner) lightest() int32 {
	best := int32(0)
	for p := range kr.pwgts {
		if kr.pwgts[p] < kr.pwgts[best] {
			best = int32(p)
		}
	}
	return best
}

// fillEmpty gives every empty part one vertex of the heaviest part (the
// one whose move cuts the fewest edges), so that each of the K parts is
// used; it runs on the finest level, where all vertex weights are 1.
func (kr *kwayRefiner) fillEmpty() {
	g := kr.g
	for p := range kr.pwgts {
		if kr.pwgts[p] > 0 {
			continue
		}
		heavy := int32(0)
		for q := range kr.pwgts {
			if kr.pwgts[q] > kr.pwgts[heavy] {
				heavy = int32(q)
			}
		}
		best, bestID := int32(-1), int32(math.MaxInt32)
		for v := int32(0); int(v) < g.n(); v++ {
			if kr.where[v] != heavy {
				continue
			}
			kr.connect(v)
			id := kr.conn[heavy]
			kr.release()
			if id < bestID {
				best, bestID = v, id
			}
		}
		kr.moveTo(best, int32(p))
	}
}

// wcut is the weight of the edges cut by a k-way partition of g.
func wcut(g *wgraph, where []int32) int64 {
	var c int64
	for v := 0; v < g.n(); v++ {
		for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
			if where[g.adjncy[e]] != where[v] {
				c += int64(g.adjwgt[e])
			}
		}
	}
	return c / 2
}

// bisectCut is the weight of the edges across a bisection.
func bisectCut(g *wgraph, where []uint8) int64 {
	var c int64
	for v := 0; v < g.n(); v++ {
		for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
			if where[g.adjncy[e]] != where[v] {
				c += int64(g.adjwgt[e])
			}
		}
	}
	return c / 2
}

// topDepth is how deep in the recursion bisections are tried four times.
// Up to 128 parts every split is (the cut is 1-4% lower on the real graphs
// than with one try); beyond, only the first two levels, which shape the
// partition most, so that K=1500 costs about 1.5x one try instead of 4x.
func topDepth(k int) int {
	if k <= 128 {
		return math.MaxInt
	}
	return 2
}

// refineRounds is refine's passes on a large graph, one round each: (a)
// every candidate's best move is proposed on the cores from the partition
// as the round found it; (b) the proposals are committed on one goroutine,
// highest gain first, ties in an order drawn per round, each re-checked
// against the current partition (its own row: moves committed before it
// may have made it worse) and the balance; (c) the degrees of the moved
// vertices and their neighbours are updated on the cores, and those that
// can gain are the next round's candidates. The order of the commits
// depends on neither threads nor timing, so neither does the partition.
func (kr *kwayRefiner) refineRounds(niter int) {
	g, where, id, ed := kr.g, kr.where, kr.id, kr.ed
	n := g.n()
	kr.target = grow(kr.target, n)
	target, mark := kr.target, kr.mark
	live := func(v int32) bool { return ed[v] > 0 && ed[v] >= id[v] }
	bnd := collectRows(g, kr.threads, nil, live)
	var props []uint64
	var moved, movedFrom []int32
	if len(kr.movedAt) < n {
		kr.movedAt = make([]uint32, n) // stamps do not repeat until setup clears both
	}
	movedAt := kr.movedAt
	for pass := 0; pass < niter && len(bnd) > 0; pass++ {
		kr.stamp++
		stamp := kr.stamp // mark[v] == stamp: v is looked at again next round
		// Ties in gain go in an order drawn per round: vertex order would
		// favour the low-numbered parts of the graph round after round.
		salt := uint32(kr.r.Uint64())
		props = kr.propose(bnd, props[:0], stamp, salt)
		slices.Sort(props)
		moved, movedFrom = moved[:0], movedFrom[:0]
		gains := int64(0)
		for _, key := range props {
			v := int32((uint32(key) * tieInv) ^ salt)
			from, to := where[v], target[v]
			vw := int64(g.vwgt[v])
			var cf, ct int32
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				switch where[g.adjncy[e]] {
				case from:
					cf += g.adjwgt[e]
				case to:
					ct += g.adjwgt[e]
				}
			}
			gain := ct - cf
			if gain < 0 || (cf > 0 && kr.pwgts[from]-vw < kr.minpw) {
				continue // a neighbour moved (v is marked) or from is too light
			}
			slack := overshoot * int64(gain)
			if kr.strict {
				slack = 0
			}
			if kr.pwgts[to]+vw > kr.maxpw+slack ||
				(gain == 0 && !kr.evens(from, to, vw)) {
				mark[v] = stamp // held back by the balance: again next round
				continue
			}
			kr.moveTo(v, to)
			moved, movedFrom = append(moved, v), append(movedFrom, from)
			movedAt[v] = stamp
			gains += int64(gain)
		}
		// Degrees after the round: a moved vertex counts its row again; a
		// neighbour that stayed gets each moved edge's weight moved between
		// its id and ed (atomic adds: sums in any order are the same).
		runChunks(evenChunks(len(moved), kr.threads*chunksPerThread), kr.threads, func(_, lo, hi int) {
			for i, v := range moved[lo:hi] {
				from, to := movedFrom[lo+i], where[v]
				var a, b int32
				atomic.StoreUint32(&mark[v], stamp)
				for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
					u, w := g.adjncy[e], g.adjwgt[e]
					pu := where[u]
					if pu == to {
						a += w
					} else {
						b += w
					}
					if movedAt[u] == stamp {
						continue
					}
					atomic.StoreUint32(&mark[u], stamp)
					switch pu {
					case from:
						atomic.AddInt32(&id[u], -w)
						atomic.AddInt32(&ed[u], w)
					case to:
						atomic.AddInt32(&id[u], w)
						atomic.AddInt32(&ed[u], -w)
					}
				}
				id[v], ed[v] = a, b
			}
		})
		bnd = collectRows(g, kr.threads, bnd[:0], func(v int32) bool { return mark[v] == stamp })
		bnd = slices.DeleteFunc(bnd, func(v int32) bool { return !live(v) })
		if len(moved) == 0 || gains == 0 {
			break
		}
	}
}

// propose appends to props, for each candidate in bnd with a move (as
// greedyPasses would choose it from the current partition), the key
// (-gain, v's place in the tie order) and sets target[v]; a candidate held
// back by the balance is marked with stamp. Run on the refiner's threads;
// props' order depends on the timing, its sorted order does not.
func (kr *kwayRefiner) propose(bnd []int32, props []uint64, stamp, salt uint32) []uint64 {
	g, where, id := kr.g, kr.where, kr.id
	var mu sync.Mutex
	runChunks(evenChunks(len(bnd), kr.threads*chunksPerThread), kr.threads, func(_, lo, hi int) {
		conn := make([]int32, kr.k)
		var touched []int32
		var mine []uint64
		for _, v := range bnd[lo:hi] {
			from := where[v]
			vw := int64(g.vwgt[v])
			if id[v] > 0 && kr.pwgts[from]-vw < kr.minpw {
				continue
			}
			touched = touched[:0]
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				p := where[g.adjncy[e]]
				if conn[p] == 0 {
					touched = append(touched, p)
				}
				conn[p] += g.adjwgt[e]
			}
			to, c := kr.refineTarget(conn, touched, from, vw, id[v])
			blocked := to < 0 && canGain(conn, touched, from, id[v])
			for _, p := range touched {
				conn[p] = 0
			}
			gain := c - id[v]
			if blocked || (to >= 0 && gain == 0 && !kr.evens(from, to, vw)) {
				kr.mark[v] = stamp // bnd holds v once: no other writer
				continue
			}
			if to < 0 {
				continue
			}
			kr.target[v] = to
			mine = append(mine, uint64(uint32(math.MaxInt32-gain))<<32|uint64((uint32(v)^salt)*tieMul))
		}
		mu.Lock()
		props = append(props, mine...)
		mu.Unlock()
	})
	return props
}

// tieMul and its inverse mod 2^32 (tieInv) number the vertices in a
// round's tie order, v -> (v^salt)·tieMul, a bijection of uint32.
const (
	tieMul uint32 = 0x9e3779b1
	tieInv uint32 = 0x0e8b2f51
)
