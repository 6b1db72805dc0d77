package templates

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/qgtc/qgtc/internal/par"
)

// Schedule says how a sparse template walks its graph: FeatGraph's CPU
// recipe of feature tiling combined with 1D partitioning of the sources,
// and TLPGNN's edge-balanced, atomic-free work split.
//
// The rows are cut into spans of about equal work (edges plus a per-row
// cost, not rows). A row with more edges than a span holds is split into
// slices reduced into private partials and merged afterwards, so one hub
// cannot stall a worker. The feature columns are cut into tiles of
// FeatTile columns; every (tile, span) pair is a work item, taken by the
// workers from a shared counter tile by tile, and each output element is
// written by exactly one worker. Within an item the sources are visited one
// partition (a contiguous range of nsrc/Partitions source rows) at a time,
// so the source rows a pass touches stay in cache.
type Schedule struct {
	FeatTile   int  // feature columns per tile; 0 (or ≥ f) is all of them
	Partitions int  // source partitions per tile; ≤ 1 is none
	Workers    int  // goroutines; 0 is GOMAXPROCS
	Grain      int  // spans per worker; 0 is 8, and 1 span for tiny problems
	NoSplit    bool // never split a heavy row (the ablation baseline)
}

// Shape keys the schedule cache: rows, source rows, edges, feature width.
type Shape struct{ Rows, Cols, NNZ, F int }

func (s Schedule) tile(f int) int {
	if s.FeatTile <= 0 || s.FeatTile >= f {
		return f
	}
	return s.FeatTile
}

func (s Schedule) workers() int {
	if s.Workers > 0 {
		return s.Workers
	}
	return runtime.GOMAXPROCS(0)
}

var (
	schedMu    sync.Mutex
	schedCache = map[Shape]Schedule{}
)

// CachedSchedule returns the schedule TuneSchedule found for sh, if any.
func CachedSchedule(sh Shape) (Schedule, bool) {
	schedMu.Lock()
	defer schedMu.Unlock()
	s, ok := schedCache[sh]
	return s, ok
}

// HeuristicSchedule is the schedule used for a shape nobody tuned: the
// whole feature width in one pass, no source partitions, all cores. On the
// CPUs measured (BenchmarkSchedules: AMD EPYC, 1 MB L2, 32 MB L3) tiling and
// partitioning only paid off once the gathered features outgrew the last
// level cache, which TuneSchedule finds out per shape.
func HeuristicSchedule(sh Shape) Schedule {
	return Schedule{}
}

// resolve picks the schedule of a call: the caller's, the tuned one, or the
// heuristic.
func resolve(s *Schedule, g CSR, nsrc, f int) Schedule {
	if s != nil {
		return *s
	}
	sh := Shape{g.Rows(), nsrc, g.NNZ(), f}
	if t, ok := CachedSchedule(sh); ok {
		return t
	}
	return HeuristicSchedule(sh)
}

// span is a unit of work: rows [r0, r1), or, when seg ≥ 0, the edges
// [p0, p1) of the heavy row r0, reduced into partial number seg.
type rowSpan struct {
	r0, r1, p0, p1, seg int32
}

func (sp rowSpan) maxDeg(g CSR) int {
	if sp.seg >= 0 {
		return int(sp.p1 - sp.p0)
	}
	m := 0
	for v := sp.r0; v < sp.r1; v++ {
		m = max(m, int(g.Indptr[v+1]-g.Indptr[v]))
	}
	return m
}

// heavyRow is a row split into nseg slices with partials seg0.. .
type heavyRow struct{ v, seg0, nseg int32 }

type rowPlan struct {
	spans []rowSpan
	heavy []heavyRow
	nseg  int
}

// rowCost is the work of a row beyond its edges (initialising and
// finishing its output), in edge units.
const rowCost = 2

// makePlan cuts g into spans of about equal cost. Binary searches over
// Indptr find the cuts, so planning costs O(spans·log rows).
func makePlan(g CSR, s Schedule, f int) rowPlan {
	rows := g.Rows()
	var pl rowPlan
	if rows == 0 {
		return pl
	}
	w := s.workers()
	grain := s.Grain
	cost := func(r int) int64 { return int64(g.Indptr[r]) + rowCost*int64(r) }
	total := cost(rows)
	// Tiny problems are not worth a goroutine each (unless the caller
	// asked for a grain, as the tests do to exercise the planner).
	tiny := grain <= 0 && total*int64(f) < 1<<15
	if grain <= 0 {
		grain = 8
	}
	nspan := int64(w * grain)
	if tiny || w == 1 {
		nspan = 1
	}
	target := max((total+nspan-1)/nspan, 1)
	for r := 0; r < rows; {
		base := cost(r)
		// Largest end with cost(end) − base ≤ target.
		end := r + sort.Search(rows-r, func(i int) bool { return cost(r+i+1)-base > target })
		if end > r {
			pl.spans = append(pl.spans, rowSpan{r0: int32(r), r1: int32(end), seg: -1})
			r = end
			continue
		}
		deg := int64(g.Indptr[r+1] - g.Indptr[r])
		if s.NoSplit || nspan == 1 || deg < 2*target {
			pl.spans = append(pl.spans, rowSpan{r0: int32(r), r1: int32(r + 1), seg: -1})
			r++
			continue
		}
		n := (deg + target - 1) / target
		h := heavyRow{v: int32(r), seg0: int32(pl.nseg), nseg: int32(n)}
		p := int64(g.Indptr[r])
		for i := int64(0); i < n; i++ {
			p0, p1 := p+deg*i/n, p+deg*(i+1)/n
			pl.spans = append(pl.spans, rowSpan{r0: int32(r), r1: int32(r + 1), p0: int32(p0), p1: int32(p1), seg: int32(pl.nseg)})
			pl.nseg++
		}
		pl.heavy = append(pl.heavy, h)
		r++
	}
	return pl
}

// spanWorker holds one goroutine's scratch.
type spanWorker struct {
	buf  []float32
	part partCursor
}

// scratch returns n floats of the worker's buffer, with at least 8 more
// of capacity behind them (see expInPlace).
func (w *spanWorker) scratch(n int) []float32 {
	if cap(w.buf) < n+8 {
		w.buf = make([]float32, n+8)
	}
	return w.buf[:n]
}

// run executes every span on the schedule's workers.
func (pl *rowPlan) run(s Schedule, fn func(w *spanWorker, sp rowSpan)) {
	runItems(s, len(pl.spans), func(w *spanWorker, i int) { fn(w, pl.spans[i]) })
}

// runTiles executes every (span, feature tile) pair: TLPGNN's feature
// parallelism on top of the row split, so a graph with few rows still
// fills the cores. Items go tile-major, so the workers sweep the sources'
// columns of one tile together while it is in cache.
func (pl *rowPlan) runTiles(s Schedule, f, tile int, fn func(w *spanWorker, sp rowSpan, k0, k1 int)) {
	nt := (f + tile - 1) / tile
	ns := len(pl.spans)
	runItems(s, ns*nt, func(w *spanWorker, i int) {
		k0 := i / ns * tile
		fn(w, pl.spans[i%ns], k0, min(f, k0+tile))
	})
}

// runItems calls fn for items 0..n-1, handed out to the schedule's
// workers through a shared counter.
func runItems(s Schedule, n int, fn func(w *spanWorker, i int)) {
	if n == 0 {
		return
	}
	nw := min(s.workers(), n)
	if nw <= 1 {
		var w spanWorker
		for i := range n {
			fn(&w, i)
		}
		return
	}
	var next atomic.Int64
	par.Run(nw, func(int) {
		var w spanWorker
		for {
			i := next.Add(1) - 1
			if i >= int64(n) {
				return
			}
			fn(&w, int(i))
		}
	})
}

// runHeavy calls fn once per split row, in parallel when there are many.
func (pl *rowPlan) runHeavy(s Schedule, fn func(h heavyRow)) {
	if len(pl.heavy) < 64 {
		for _, h := range pl.heavy {
			fn(h)
		}
		return
	}
	hp := rowPlan{}
	for i := range pl.heavy {
		hp.spans = append(hp.spans, rowSpan{r0: int32(i), seg: -1})
	}
	hp.run(s, func(_ *spanWorker, sp rowSpan) { fn(pl.heavy[sp.r0]) })
}

// partCursor walks rows [r0, r1) one source partition at a time. It needs
// each row's sources sorted ascending; a span whose rows are not sorted is
// walked with a single partition.
type partCursor struct {
	g        CSR
	r0, r1   int
	nsrc, np int
	cur      []int32
}

func (w *spanWorker) partitions(g CSR, s Schedule, r0, r1, nsrc int) *partCursor {
	pc := &w.part
	*pc = partCursor{g: g, r0: r0, r1: r1, nsrc: nsrc, np: 1, cur: pc.cur}
	if s.Partitions <= 1 || nsrc <= s.Partitions {
		return pc
	}
	for v := r0; v < r1; v++ {
		row := g.Indices[g.Indptr[v]:g.Indptr[v+1]]
		for i := 1; i < len(row); i++ {
			if row[i] < row[i-1] {
				return pc
			}
		}
	}
	pc.np = s.Partitions
	if cap(pc.cur) < r1-r0 {
		pc.cur = make([]int32, r1-r0)
	}
	pc.cur = pc.cur[:r1-r0]
	return pc
}

// each calls fn(v, p0, p1) for every row v and every partition with edges
// [p0, p1) of v whose sources fall in that partition; partitions outermost.
func (pc *partCursor) each(fn func(v, p0, p1 int)) {
	g := pc.g
	if pc.np <= 1 {
		for v := pc.r0; v < pc.r1; v++ {
			fn(v, int(g.Indptr[v]), int(g.Indptr[v+1]))
		}
		return
	}
	for v := pc.r0; v < pc.r1; v++ {
		pc.cur[v-pc.r0] = g.Indptr[v]
	}
	for q := 1; q <= pc.np; q++ {
		hi := int32(int64(pc.nsrc) * int64(q) / int64(pc.np))
		for v := pc.r0; v < pc.r1; v++ {
			p0 := pc.cur[v-pc.r0]
			end := g.Indptr[v+1]
			p1 := p0
			for p1 < end && g.Indices[p1] < hi {
				p1++
			}
			if p1 > p0 {
				fn(v, int(p0), int(p1))
			}
			pc.cur[v-pc.r0] = p1
		}
	}
}
