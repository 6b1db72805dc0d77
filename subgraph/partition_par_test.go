package subgraph

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parGraph is large enough for forRows to split (2^18 edges and more).
func parGraph(t *testing.T) *Graph {
	t.Helper()
	g, _, err := PlantedPartition(40000, 400, 8, 0.2, 7)
	require.NoError(t, err)
	require.GreaterOrEqual(t, g.NumEdges(), parallelEdges)
	return g
}

func TestComponentSizesMatchSerial(t *testing.T) {
	// Many components: a planted graph with most of its edges dropped.
	g := parGraph(t)
	sparse := &Graph{Indptr: make([]int32, g.N()+1)}
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			if (int(u)+v)%7 == 0 {
				sparse.Indices = append(sparse.Indices, u)
			}
		}
		sparse.Indptr[v+1] = int32(len(sparse.Indices))
	}
	for _, h := range []*Graph{g, sparse} {
		w := fromGraph(h, 1)
		_, want := wcomponents(w)
		slices.Sort(want)
		for _, threads := range []int{1, 2, 5} {
			got := componentSizes(w, threads)
			slices.Sort(got)
			assert.Equal(t, want, got, "%d threads", threads)
		}
	}
}

func TestSymmetricRows(t *testing.T) {
	g := parGraph(t)
	sym, ok := symmetricRows(g, 4)
	assert.True(t, ok)
	assert.True(t, sym)
	_, ok = symmetricRows(g, 2)
	assert.False(t, ok, "two threads leave it to Reverse")

	// One edge direction dropped.
	one := &Graph{Indptr: slices.Clone(g.Indptr), Indices: slices.Clone(g.Indices)}
	v := 1234
	row := one.Neighbors(v)
	drop := one.Indptr[v] + int32(len(row)) - 1
	one.Indices = slices.Delete(one.Indices, int(drop), int(drop)+1)
	for i := v + 1; i < len(one.Indptr); i++ {
		one.Indptr[i]--
	}
	sym, ok = symmetricRows(one, 4)
	assert.True(t, ok)
	assert.False(t, sym)
	assert.False(t, isSymmetric(one))

	// A repeated entry is left to the serial check.
	rep := &Graph{Indptr: []int32{0, 2, 3}, Indices: []int32{1, 1, 0}}
	_, ok = symmetricRows(rep, 4)
	assert.False(t, ok)
}

// TestProposeRoundsMatching: the rounds give a valid matching (pairs are
// edges, mutual, under maxvwgt), the same on any number of threads, and
// most vertices of a planted graph are matched.
func TestProposeRoundsMatching(t *testing.T) {
	w := fromGraph(parGraph(t), 1)
	var want []int32
	for _, threads := range []int{1, 2, 7} {
		var c coarsener
		c.match = make([]int32, w.n())
		for i := range c.match {
			c.match[i] = -1
		}
		c.proposeRounds(w, 2, threads)
		matched := 0
		for v, u := range c.match {
			if u < 0 {
				continue
			}
			matched++
			require.Equal(t, int32(v), c.match[u], "mutual")
			require.True(t, slices.Contains(w.adjncy[w.xadj[v]:w.xadj[v+1]], u), "an edge")
		}
		assert.Greater(t, matched, w.n()*3/4)
		if want == nil {
			want = slices.Clone(c.match)
		}
		assert.Equal(t, want, c.match, "%d threads", threads)
	}
}

// TestParallelBuildsMatchSerial: fromGraph and splitGraph give the same
// working graphs on the cores as on one, self-loops dropped.
func TestParallelBuildsMatchSerial(t *testing.T) {
	g := parGraph(t)
	loops := &Graph{Indptr: make([]int32, g.N()+1)}
	for v := 0; v < g.N(); v++ {
		row := g.Neighbors(v)
		i, _ := slices.BinarySearch(row, int32(v))
		loops.Indices = append(loops.Indices, row[:i]...)
		if v%3 == 0 {
			loops.Indices = append(loops.Indices, int32(v))
		}
		loops.Indices = append(loops.Indices, row[i:]...)
		loops.Indptr[v+1] = int32(len(loops.Indices))
	}
	for _, h := range []*Graph{g, loops} {
		want := fromGraph(h, 1)
		got := fromGraph(h, 4)
		require.Equal(t, want, got)
		where := make([]uint8, want.n())
		for v := range where {
			where[v] = uint8(edgeHash(int32(v), 1) & 1)
		}
		ws, wv := splitGraph(want, where, 1)
		gs, gv := splitGraph(want, where, 3)
		assert.Equal(t, ws, gs)
		assert.Equal(t, wv, gv)
	}
}

// TestRowChunks: forRows' ranges cover every vertex once, in order, and
// collectRows keeps what a serial filter keeps, in the same order, however
// many goroutines take the ranges.
func TestRowChunks(t *testing.T) {
	w := fromGraph(parGraph(t), 1)
	for _, parts := range []int{1, 2, 7, 64, w.n() + 5} {
		b := rowChunks(w, parts)
		require.Equal(t, 0, b[0])
		require.Equal(t, w.n(), b[len(b)-1])
		assert.LessOrEqual(t, len(b)-1, parts+1, "about parts ranges")
		for i := 1; i < len(b); i++ {
			require.Less(t, b[i-1], b[i], "ranges of at least one vertex")
		}
	}
	keep := func(v int32) bool { return w.xadj[v+1]-w.xadj[v] > 8 || v%97 == 0 }
	want := collectRows(w, 1, nil, keep)
	require.NotEmpty(t, want)
	require.Less(t, len(want), w.n())
	for _, threads := range []int{2, 3, 16} {
		got := collectRows(w, threads, []int32{-1}, keep)
		assert.Equal(t, append([]int32{-1}, want...), got, "%d threads", threads)
		seen := make([]atomic.Int32, w.n())
		forRows(w, threads, func(lo, hi int) {
			for v := lo; v < hi; v++ {
				seen[v].Add(1)
			}
		})
		for v := range seen {
			require.Equal(t, int32(1), seen[v].Load(), "vertex %d, %d threads", v, threads)
		}
	}
}

// TestParallelRefine: refinement by rounds (refineRounds, on graphs of
// parallelEdges and more) gives the same parts on 1, 2 and 8 threads,
// never raises the cut, and a whole partition through it keeps every part
// within the imbalance limit.
func TestParallelRefine(t *testing.T) {
	g := parGraph(t)
	require.GreaterOrEqual(t, len(fromGraph(g, 1).adjncy), parallelEdges, "a graph the rounds run on")
	wg := fromGraph(g, 1)
	const k = 64
	start := make([]int32, wg.n())
	for v := range start {
		start[v] = int32(v * k / len(start)) // consecutive blocks: far from the planted parts
	}
	var first []int32
	for _, threads := range []int{1, 2, 8} {
		where := slices.Clone(start)
		kr := newKwayRefiner(k, PartitionOptions{Imbalance: DefaultImbalance, Threads: threads}, rng64(5, 2))
		kr.setup(wg, where)
		before := wcut(wg, where)
		kr.refine(wg, where, 10, true, true)
		assert.Less(t, wcut(wg, where), before, "threads %d", threads)
		assert.LessOrEqual(t, slices.Max(kr.pwgts), kr.maxpw, "threads %d", threads)
		if first == nil {
			first = where
			continue
		}
		require.Equal(t, first, where, "threads %d against 1", threads)
	}
	var parts [][]int32
	for _, threads := range []int{1, 2, 8} {
		p, err := Partition(g, 100, PartitionOptions{Seed: 2, Threads: threads})
		require.NoError(t, err)
		s, err := p.Stats(g)
		require.NoError(t, err)
		assert.LessOrEqual(t, s.Imbalance, DefaultImbalance+1e-9, "threads %d", threads)
		parts = append(parts, p.Parts)
	}
	assert.Equal(t, parts[0], parts[1], "1 and 2 threads")
	assert.Equal(t, parts[0], parts[2], "1 and 8 threads")
}
