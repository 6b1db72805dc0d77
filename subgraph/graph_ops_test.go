package subgraph

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tiny: directed edges 0->1, 1->2, 2->0, 2->3, 3->3 (loop); node 4 isolated.
func tinyDirected(t *testing.T) *Graph {
	g, err := FromEdges(5, []int32{0, 1, 2, 2, 3, 0}, []int32{1, 2, 0, 3, 3, 1}, BuildOptions{})
	require.NoError(t, err)
	return g
}

func TestGraphCounts(t *testing.T) {
	g := tinyDirected(t)
	assert.Equal(t, 5, g.NumEdges(), "duplicate 0->1 merged")
	assert.Equal(t, 4, g.NumUndirectedEdges())
	assert.Equal(t, 1, g.SelfLoops())
	assert.False(t, g.IsSymmetric())
	assert.Equal(t, []int32{1, 1, 2, 1, 0}, g.Degrees())
	assert.Equal(t, []int32{1, 1, 1, 2, 0}, g.InDegrees())
	assert.Equal(t, g.InDegrees(), g.Reverse().Degrees())
	src, dst := g.Edges()
	assert.Equal(t, []int32{0, 1, 2, 2, 3}, src)
	assert.Equal(t, []int32{1, 2, 0, 3, 3}, dst)
	assert.True(t, g.HasEdge(2, 3))
	assert.False(t, g.HasEdge(3, 2))

	u := g.Rebuild(BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	require.NoError(t, u.Validate())
	assert.True(t, u.IsSymmetric())
	assert.Zero(t, u.SelfLoops())
	assert.Equal(t, 8, u.NumEdges())
	assert.Equal(t, 4, u.NumUndirectedEdges())
	l := u.Rebuild(BuildOptions{SelfLoops: AddSelfLoops})
	assert.Equal(t, 5, l.SelfLoops())
}

func TestNormalization(t *testing.T) {
	u := tinyDirected(t).Rebuild(BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	// degrees 2, 2, 3, 1, 0
	inv := func(d float64) float32 { return float32(1 / math.Sqrt(d)) }
	assert.Equal(t, []float32{inv(2), inv(2), inv(3), inv(1), 0}, u.GCNNorm(false))
	assert.Equal(t, []float32{inv(3), inv(3), inv(4), inv(2), inv(1)}, u.GCNNorm(true))
	assert.Equal(t, []float32{0.5, 0.5, float32(1) / 3, 1, 0}, u.MeanNorm())
	// An existing self-loop is not counted twice.
	l := u.Rebuild(BuildOptions{SelfLoops: AddSelfLoops})
	assert.Equal(t, u.GCNNorm(true), l.GCNNorm(true))
}

func TestInducedSubgraph(t *testing.T) {
	u := tinyDirected(t).Rebuild(BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	tests := []struct {
		nodes   []int32
		indptr  []int32
		indices []int32
		err     string
	}{
		{[]int32{2, 3, 0}, []int32{0, 2, 3, 4}, []int32{1, 2, 0, 0}, ""},
		{[]int32{4}, []int32{0, 0}, nil, ""},
		{[]int32{}, []int32{0}, nil, ""},
		{[]int32{1, 5}, nil, nil, "node 5 outside [0, 5)"},
		{[]int32{1, 1}, nil, nil, "node 1 listed twice"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.nodes), func(t *testing.T) {
			h, err := u.InducedSubgraph(tt.nodes)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrGraph)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, h.Validate())
			assert.Equal(t, tt.indptr, h.Indptr)
			assert.Equal(t, tt.indices, h.Indices)
		})
	}
}

func TestComponentsAndStats(t *testing.T) {
	g := tinyDirected(t)
	comp, k := g.Components()
	assert.Equal(t, 2, k)
	assert.Equal(t, []int32{0, 0, 0, 0, 1}, comp)
	assert.Equal(t, []int32{0, 1, 2, 3}, g.LargestComponent())
	assert.Equal(t, DegreeStats{Min: 0, Max: 2, Mean: 1, Median: 1}, g.DegreeStats())
	e, err := FromEdges(0, nil, nil, BuildOptions{})
	require.NoError(t, err)
	assert.Equal(t, DegreeStats{}, e.DegreeStats())
	_, k = e.Components()
	assert.Zero(t, k)
}

func TestDatasetInducedAndMasks(t *testing.T) {
	g := tinyDirected(t).Rebuild(BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	d := &Dataset{
		Graph:      g,
		Features:   &Features{Rows: 5, Cols: 2, Dense: []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		Multi:      &Features{Rows: 5, Cols: 3, Indptr: []int32{0, 1, 1, 3, 3, 4}, Indices: []int32{2, 0, 1, 2}},
		Labels:     []int32{0, 1, 0, 1, -1},
		NumClasses: 2,
		Train:      []int32{0, 4}, Val: []int32{1}, Test: []int32{2, 3},
	}
	s, err := d.Induced([]int32{3, 2, 4})
	require.NoError(t, err)
	assert.Equal(t, []float32{6, 7, 4, 5, 8, 9}, s.Features.Dense)
	assert.Equal(t, []int32{0, 0, 2, 3}, s.Multi.Indptr)
	assert.Equal(t, []int32{0, 1, 2}, s.Multi.Indices)
	assert.Equal(t, []int32{1, 0, -1}, s.Labels)
	assert.Equal(t, []int32{2}, s.Train)
	assert.Empty(t, s.Val)
	assert.Equal(t, []int32{0, 1}, s.Test)
	tr, va, te := d.Masks()
	assert.Equal(t, []bool{true, false, false, false, true}, tr)
	assert.Equal(t, []bool{false, true, false, false, false}, va)
	assert.Equal(t, []bool{false, false, true, true, false}, te)

	lc, nodes := d.LargestComponent()
	assert.Equal(t, 4, lc.Graph.N())
	assert.Len(t, nodes, 4)
	same, none := lc.LargestComponent()
	assert.Same(t, lc, same, "a connected dataset comes back as itself")
	assert.Nil(t, none)
	assert.Equal(t, []int32{0}, lc.Train)

	sp := &Features{Rows: 2, Cols: 3, Indptr: []int32{0, 2, 3}, Indices: []int32{0, 2, 1}, Values: []float32{1, 0.5, 2}}
	assert.Equal(t, []float32{1, 0, 0.5, 0, 2, 0}, sp.ToDense())
	assert.False(t, sp.Binary())
	assert.Equal(t, 3, sp.NNZ())
}

func TestCanonicalCSR(t *testing.T) {
	// rows: {2:1, 0:2, 2:3}, {}, {1:4}
	ip := []int32{0, 3, 3, 4}
	ix := []int32{2, 0, 2, 1}
	vs := []float32{1, 2, 3, 4}
	for _, cols := range []int{3, 100000} { // transpose path, row-sort path
		p, i, v, err := canonicalCSR("m", 3, cols, ip, ix, vs)
		require.NoError(t, err)
		assert.Equal(t, []int32{0, 2, 2, 3}, p)
		assert.Equal(t, []int32{0, 2, 1}, i)
		assert.Equal(t, []float32{2, 4, 4}, v)
	}
	_, _, _, err := canonicalCSR("m", 3, 2, ip, ix, vs)
	assert.ErrorContains(t, err, "m: row 0 has column 2 outside [0, 2)")
	_, _, _, err = canonicalCSR("m", 3, 3, []int32{0, 3, 2, 4}, ix, vs)
	assert.ErrorContains(t, err, "indptr decreases at row 1")
}

func TestDatasetValidate(t *testing.T) {
	good := func() *Dataset {
		g, _ := FromEdges(3, []int32{0, 1}, []int32{1, 2}, BuildOptions{Symmetrize: true})
		return &Dataset{
			Name: "t", Graph: g, NumClasses: 2, Labels: []int32{0, 1, -1},
			Features: &Features{Rows: 3, Cols: 2, Indptr: []int32{0, 1, 1, 3}, Indices: []int32{1, 0, 1}},
			Train:    []int32{0}, Test: []int32{2},
		}
	}
	require.NoError(t, good().Validate())
	tests := []struct {
		name   string
		mutate func(d *Dataset)
		msg    string
	}{
		{"directed", func(d *Dataset) { d.Graph, _ = FromEdges(3, []int32{0}, []int32{1}, BuildOptions{}) }, "not undirected"},
		{"label range", func(d *Dataset) { d.Labels[1] = 2 }, "node 1 has label 2 outside [-1, 2)"},
		{"label count", func(d *Dataset) { d.Labels = d.Labels[:2] }, "2 labels for 3 nodes"},
		{"feature rows", func(d *Dataset) { d.Features = &Features{Rows: 2, Cols: 1, Dense: []float32{1, 2}} }, "features have 2 rows for 3 nodes"},
		{"dense size", func(d *Dataset) { d.Features = &Features{Rows: 3, Cols: 2, Dense: []float32{1}} }, "1 dense values"},
		{"unsorted", func(d *Dataset) { d.Features.Indices = []int32{1, 1, 0} }, "row 2: columns not sorted"},
		{"values", func(d *Dataset) { d.Features.Values = []float32{1} }, "1 values for 3 indices"},
		{"split", func(d *Dataset) { d.Val = []int32{3} }, "val node 3 outside [0, 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good()
			tt.mutate(d)
			err := d.Validate()
			require.ErrorIs(t, err, ErrInconsistent)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestNumUndirectedEdgesChunks: counted over row chunks on several cores,
// a directed graph with one-way edges, pairs both ways and loops spanning
// several chunks counts as one pass over its rows does.
func TestNumUndirectedEdgesChunks(t *testing.T) {
	n := 3*(1<<14) + 7
	var src, dst []int32
	for i := range 5 * n {
		u, v := int32(i*7919%n), int32((i*104729+i/3)%n)
		src, dst = append(src, u), append(dst, v)
		if i%4 == 0 { // some pairs both ways
			src, dst = append(src, v), append(dst, u)
		}
	}
	g, err := FromEdges(n, src, dst, BuildOptions{})
	require.NoError(t, err)
	want := 0
	for v := range n {
		for _, u := range g.Neighbors(v) {
			if int(u) > v || (int(u) < v && !g.HasEdge(u, int32(v))) {
				want++
			}
		}
	}
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		assert.Equal(t, want, g.NumUndirectedEdges(), "GOMAXPROCS %d", procs)
		runtime.GOMAXPROCS(prev)
	}
}
