package subgraph

import (
	"math"
	"math/rand/v2"
	"sync"
)

// pqueue is a max-heap of vertices keyed by gain, with a locator so keys can
// change in place (METIS's rpq). Ties go to the vertex inserted earlier in
// heap order, which is deterministic.
type pqueue struct {
	keys []int64
	vs   []int32
	pos  []int32 // pos[v] = index in the heap, or -1
}

func newPQueue(n int) *pqueue {
	q := &pqueue{pos: make([]int32, n)}
	for i := range q.pos {
		q.pos[i] = -1
	}
	return q
}

func (q *pqueue) has(v int32) bool { return q.pos[v] >= 0 }

func (q *pqueue) reset() {
	for _, v := range q.vs {
		q.pos[v] = -1
	}
	q.keys, q.vs = q.keys[:0], q.vs[:0]
}

func (q *pqueue) insert(v int32, key int64) {
	q.keys = append(q.keys, key)
	q.vs = append(q.vs, v)
	i := len(q.vs) - 1
	q.pos[v] = int32(i)
	q.up(i)
}

func (q *pqueue) update(v int32, key int64) {
	i := int(q.pos[v])
	old := q.keys[i]
	q.keys[i] = key
	if key > old {
		q.up(i)
	} else {
		q.down(i)
	}
}

func (q *pqueue) remove(v int32) {
	i := int(q.pos[v])
	last := len(q.vs) - 1
	q.pos[v] = -1
	if i != last {
		q.keys[i], q.vs[i] = q.keys[last], q.vs[last]
		q.pos[q.vs[i]] = int32(i)
	}
	q.keys, q.vs = q.keys[:last], q.vs[:last]
	if i != last {
		q.up(i)
		q.down(i)
	}
}

// top returns the vertex with the largest key without removing it.
func (q *pqueue) top() (int32, bool) {
	if len(q.vs) == 0 {
		return -1, false
	}
	return q.vs[0], true
}

func (q *pqueue) pop() (int32, bool) {
	v, ok := q.top()
	if ok {
		q.remove(v)
	}
	return v, ok
}

func (q *pqueue) swap(i, j int) {
	q.keys[i], q.keys[j] = q.keys[j], q.keys[i]
	q.vs[i], q.vs[j] = q.vs[j], q.vs[i]
	q.pos[q.vs[i]] = int32(i)
	q.pos[q.vs[j]] = int32(j)
}

func (q *pqueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if q.keys[p] >= q.keys[i] {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *pqueue) down(i int) {
	n := len(q.vs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && q.keys[r] > q.keys[l] {
			c = r
		}
		if q.keys[i] >= q.keys[c] {
			return
		}
		q.swap(i, c)
		i = c
	}
}

// bisection is a 2-way partition of a working graph with its FM state:
// id/ed are each vertex's edge weight to its own and to the other side.
type bisection struct {
	g       *wgraph
	where   []uint8
	id, ed  []int32
	pwgts   [2]int64
	tpwgts  [2]int64 // target weights
	maxpw   [2]int64 // allowed weights
	cut     int64
	threads int // goroutines for params on a large graph
}

func newBisection(g *wgraph, frac, ub float64) *bisection {
	b := &bisection{g: g, where: make([]uint8, g.n()), id: make([]int32, g.n()), ed: make([]int32, g.n())}
	b.tpwgts[0] = int64(math.Round(frac * float64(g.tvwgt)))
	b.tpwgts[1] = g.tvwgt - b.tpwgts[0]
	for s := 0; s < 2; s++ {
		b.maxpw[s] = int64(ub * float64(b.tpwgts[s]))
	}
	return b
}

// params recomputes pwgts, id, ed and cut from where.
func (b *bisection) params() {
	g := b.g
	var mu sync.Mutex
	b.pwgts = [2]int64{}
	b.cut = 0
	forRows(g, b.threads, func(lo, hi int) {
		var pw [2]int64
		var cut int64
		for v := lo; v < hi; v++ {
			me := b.where[v]
			pw[me] += int64(g.vwgt[v])
			var id, ed int32
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				if b.where[g.adjncy[e]] == me {
					id += g.adjwgt[e]
				} else {
					ed += g.adjwgt[e]
				}
			}
			b.id[v], b.ed[v] = id, ed
			cut += int64(ed)
		}
		mu.Lock() // integer sums: the same in any order
		b.pwgts[0] += pw[0]
		b.pwgts[1] += pw[1]
		b.cut += cut
		mu.Unlock()
	})
	b.cut /= 2
}

// move flips v to the other side and updates the FM state; onNeighbor is
// called for each neighbour after its id/ed changed.
func (b *bisection) move(v int32, onNeighbor func(u int32)) {
	g := b.g
	from := b.where[v]
	to := 1 - from
	b.cut -= int64(b.ed[v] - b.id[v])
	b.pwgts[from] -= int64(g.vwgt[v])
	b.pwgts[to] += int64(g.vwgt[v])
	b.where[v] = to
	b.id[v], b.ed[v] = b.ed[v], b.id[v]
	for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
		u := g.adjncy[e]
		w := g.adjwgt[e]
		if b.where[u] == to {
			b.id[u] += w
			b.ed[u] -= w
		} else {
			b.id[u] -= w
			b.ed[u] += w
		}
		if onNeighbor != nil {
			onNeighbor(u)
		}
	}
}

// fm runs up to niter passes of Fiduccia–Mattheyses boundary refinement as
// METIS's FM_2WayCutRefine: each pass moves the best-gain boundary vertex
// from the side further over its target, locks it, and finally rolls back to
// the best cut seen with no worse balance.
func (b *bisection) fm(niter int, q [2]*pqueue, moved []int32, swaps []int32) {
	g := b.g
	n := g.n()
	if n < 2 {
		return
	}
	limit := min(max(n/100, 15), 100)
	avgvwgt := min((b.pwgts[0]+b.pwgts[1])/20, 2*g.tvwgt/int64(n))
	origdiff := abs64(b.tpwgts[0] - b.pwgts[0])
	for i := range moved {
		moved[i] = -1
	}
	for pass := 0; pass < niter; pass++ {
		q[0].reset()
		q[1].reset()
		for v := int32(0); int(v) < n; v++ {
			if b.ed[v] > 0 {
				q[b.where[v]].insert(v, int64(b.ed[v]-b.id[v]))
			}
		}
		initcut := b.cut
		mincut := b.cut
		mindiff := abs64(b.tpwgts[0] - b.pwgts[0])
		mincutorder := -1
		nswaps := 0
		for ; nswaps < n; nswaps++ {
			from := 1
			if b.tpwgts[0]-b.pwgts[0] < b.tpwgts[1]-b.pwgts[1] {
				from = 0
			}
			v, ok := q[from].pop()
			if !ok {
				break
			}
			to := 1 - from
			vw := int64(g.vwgt[v])
			newcut := b.cut - int64(b.ed[v]-b.id[v])
			newdiff := abs64(b.tpwgts[0] - (b.pwgts[0] + map01(to == 0)*vw - map01(from == 0)*vw))
			if (newcut < mincut && newdiff <= origdiff+avgvwgt) || (newcut == mincut && newdiff < mindiff) {
				mincut, mindiff, mincutorder = newcut, newdiff, nswaps
			} else if nswaps-mincutorder > limit {
				break
			}
			moved[v] = int32(nswaps)
			swaps[nswaps] = v
			b.move(v, func(u int32) {
				if moved[u] >= 0 {
					return
				}
				qs := q[b.where[u]]
				switch {
				case b.ed[u] > 0 && qs.has(u):
					qs.update(u, int64(b.ed[u]-b.id[u]))
				case b.ed[u] > 0:
					qs.insert(u, int64(b.ed[u]-b.id[u]))
				case qs.has(u):
					qs.remove(u)
				}
			})
		}
		// Roll back the moves after the best prefix.
		for i := nswaps - 1; i > mincutorder; i-- {
			b.move(swaps[i], nil)
		}
		for i := 0; i < nswaps; i++ {
			moved[swaps[i]] = -1
		}
		if mincutorder < 0 || b.cut >= initcut {
			break
		}
	}
}

func map01(c bool) int64 {
	if c {
		return 1
	}
	return 0
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// balance moves vertices off an overweight side, best gain first
// (boundary vertices sort ahead since their gains are larger), until both
// sides fit or nothing more can move.
func (b *bisection) balance(q *pqueue) {
	for {
		from := -1
		for s := 0; s < 2; s++ {
			if b.pwgts[s] > b.maxpw[s] {
				from = s
			}
		}
		if from < 0 {
			return
		}
		to := 1 - from
		g := b.g
		q.reset()
		for v := int32(0); int(v) < g.n(); v++ {
			if int(b.where[v]) == from {
				q.insert(v, int64(b.ed[v]-b.id[v]))
			}
		}
		movedAny := false
		for b.pwgts[from] > b.maxpw[from] {
			v, ok := q.pop()
			if !ok {
				break
			}
			vw := int64(g.vwgt[v])
			if b.pwgts[to]+vw > b.maxpw[to] && b.pwgts[to]+vw > b.pwgts[from]-vw {
				continue // would only shift the overweight to the other side
			}
			b.move(v, func(u int32) {
				if q.has(u) {
					q.update(u, int64(b.ed[u]-b.id[u]))
				}
			})
			movedAny = true
		}
		if !movedAny || b.pwgts[from] > b.maxpw[from] {
			return
		}
	}
}

// bisectScratch is per-call scratch for the FM passes.
type bisectScratch struct {
	q            [2]*pqueue
	moved, swaps []int32
}

func newBisectScratch(n int) *bisectScratch {
	return &bisectScratch{q: [2]*pqueue{newPQueue(n), newPQueue(n)}, moved: make([]int32, n), swaps: make([]int32, n)}
}

// growBisection is METIS's GrowBisection: several tries of breadth-first
// growth of side 0 from a random vertex up to its target weight, each
// balanced and FM-refined; the smallest cut wins.
func growBisection(g *wgraph, frac, ub float64, tries int, r *rand.PCG) []uint8 {
	n := g.n()
	best := make([]uint8, n)
	bestCut := int64(-1)
	bestOver := int64(0)
	s := newBisectScratch(n)
	queue := make([]int32, 0, n)
	touched := make([]bool, n)
	for try := 0; try < tries; try++ {
		b := newBisection(g, frac, ub)
		for i := range b.where {
			b.where[i] = 1
			touched[i] = false
		}
		pw1 := g.tvwgt
		oneMax := int64(ub * float64(b.tpwgts[1]))
		oneMin := int64(float64(b.tpwgts[1]) / ub)
		queue = queue[:0]
		start := int32(below(uint32(r.Uint64()), uint32(n)))
		queue = append(queue, start)
		touched[start] = true
		nleft := n - 1
		order := permutation(n, r)
		next := 0
		drain := false
		for head := 0; ; {
			if head == len(queue) {
				if nleft == 0 || drain {
					break
				}
				// Disconnected: restart from the next untouched vertex of a
				// random order.
				for ; touched[order[next]]; next++ {
				}
				queue = append(queue, order[next])
				touched[order[next]] = true
				nleft--
				continue
			}
			v := queue[head]
			head++
			vw := int64(g.vwgt[v])
			if pw1 > 0 && pw1-vw < oneMin {
				drain = true
				continue
			}
			b.where[v] = 0
			pw1 -= vw
			if pw1 <= oneMax {
				break
			}
			drain = false
			for e := g.xadj[v]; e < g.xadj[v+1]; e++ {
				if u := g.adjncy[e]; !touched[u] {
					touched[u] = true
					queue = append(queue, u)
					nleft--
				}
			}
		}
		b.params()
		if b.pwgts[1] == 0 {
			b.where[below(uint32(r.Uint64()), uint32(n))] = 1
			b.params()
		}
		b.balance(s.q[0])
		b.fm(4, s.q, s.moved, s.swaps)
		over := max(0, b.pwgts[0]-b.maxpw[0]) + max(0, b.pwgts[1]-b.maxpw[1])
		if bestCut < 0 || over < bestOver || (over == bestOver && b.cut < bestCut) {
			bestCut, bestOver = b.cut, over
			copy(best, b.where)
		}
	}
	return best
}

// mlBisect splits g into two sides, side 0 targeting frac of the weight and
// each side within ub of its target, by multilevel bisection: coarsen to a
// few dozen vertices, grow an initial bisection, then balance and FM-refine
// while projecting back up. It makes ncuts such bisections over the same
// coarsening (each from its own initial bisections) and keeps the smallest
// cut; re-coarsening per try, as METIS does, cost twice as much in our
// tests without a better cut.
func mlBisect(g *wgraph, frac, ub float64, ncuts, threads int, r *rand.PCG) []uint8 {
	const coarsenTo = 40
	maxvwgt := int32(min(int64(math.MaxInt32), max(1, int64(1.5*float64(g.tvwgt)/coarsenTo))))
	graphs, cmaps := coarsen(g, coarsenTo, maxvwgt, threads, r, nil)
	cg := graphs[len(graphs)-1]
	// Two growing tries (one on a coarsest graph that stayed large): the
	// ncuts repetitions already diversify, and four or eight tries cost
	// 15-35% more CPU for no better cut on the real graphs.
	tries := 2
	if cg.n() > 1000 {
		tries = 1
	}
	// One try: initial bisections of the coarsest graph, projected back
	// level by level with balance and FM refinement.
	try := func(r *rand.PCG, s *bisectScratch) ([]uint8, int64) {
		where := growBisection(cg, frac, ub, tries, r)
		cut := int64(-1)
		for l := len(cmaps) - 1; l >= 0; l-- {
			fg := graphs[l]
			fw := make([]uint8, fg.n())
			for v, c := range cmaps[l] {
				fw[v] = where[c]
			}
			b := newBisection(fg, frac, ub)
			b.where = fw
			b.threads = threads
			b.params()
			b.balance(s.q[0])
			b.fm(10, s.q, s.moved[:fg.n()], s.swaps[:fg.n()])
			where, cut = b.where, b.cut
		}
		if cut < 0 {
			cut = bisectCut(g, where)
		}
		return where, cut
	}
	ncuts = max(1, ncuts)
	wheres := make([][]uint8, ncuts)
	cuts := make([]int64, ncuts)
	if ncuts > 1 && threads > 1 && len(g.adjncy) >= parallelMatchEdges {
		// A large graph's tries run side by side, each from its own
		// stream drawn here, so the result is the same on any threads.
		var wg sync.WaitGroup
		for i := range ncuts {
			tr := rng64(r.Uint64(), uint64(i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				wheres[i], cuts[i] = try(tr, newBisectScratch(g.n()))
			}()
		}
		wg.Wait()
	} else if len(g.adjncy) >= parallelMatchEdges {
		for i := range ncuts {
			wheres[i], cuts[i] = try(rng64(r.Uint64(), uint64(i)), newBisectScratch(g.n()))
		}
	} else {
		s := newBisectScratch(g.n())
		for i := range ncuts {
			wheres[i], cuts[i] = try(r, s)
		}
	}
	best := 0
	for i := range ncuts {
		if cuts[i] < cuts[best] {
			best = i
		}
	}
	return wheres[best]
}
