package subgraph

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkUndirected asserts the generator contract: valid CSR, symmetric,
// deduplicated (Validate), no self-loops.
func checkUndirected(t *testing.T, g *Graph) {
	t.Helper()
	require.NoError(t, g.Validate())
	assert.True(t, isSymmetric(g), "symmetric")
	for v := 0; v < g.N(); v++ {
		assert.False(t, hasEdge(g, v, int32(v)), "self-loop on %d", v)
	}
}

func TestRMAT(t *testing.T) {
	for _, scale := range []int{1, 4, 12} {
		t.Run(fmt.Sprintf("scale=%d", scale), func(t *testing.T) {
			g, err := RMAT(scale, 8, 0.57, 0.19, 0.19, 42)
			require.NoError(t, err)
			assert.Equal(t, 1<<scale, g.N())
			checkUndirected(t, g)
			h, err := RMAT(scale, 8, 0.57, 0.19, 0.19, 42)
			require.NoError(t, err)
			assert.Equal(t, g, h, "same seed, same graph")
			if scale >= 12 {
				o, err := RMAT(scale, 8, 0.57, 0.19, 0.19, 43)
				require.NoError(t, err)
				assert.NotEqual(t, g.Indices, o.Indices)
				// Skewed: the top degree is far above the mean.
				deg := g.Degrees()
				mx := int32(0)
				for _, d := range deg {
					mx = max(mx, d)
				}
				assert.Greater(t, float64(mx), 10*float64(g.NumEdges())/float64(g.N()))
			}
		})
	}
	for _, bad := range [][4]float64{{0.5, 0.3, 0.3, 0}, {-0.1, 0.5, 0.3, 0}} {
		_, err := RMAT(10, 8, bad[0], bad[1], bad[2], 1)
		assert.ErrorIs(t, err, ErrSynth)
	}
	_, err := RMAT(0, 8, 0.57, 0.19, 0.19, 1)
	assert.ErrorIs(t, err, ErrSynth)
	_, err = RMAT(10, 0, 0.57, 0.19, 0.19, 1)
	assert.ErrorIs(t, err, ErrSynth)
}

func TestPlantedPartition(t *testing.T) {
	for _, tc := range []struct {
		n, k   int
		deg    float64
		mixing float64
	}{{1000, 10, 8, 0.2}, {50000, 50, 16, 0.3}, {100, 1, 5, 0}, {5000, 7, 10, 1}} {
		t.Run(fmt.Sprintf("n=%d/k=%d/mix=%g", tc.n, tc.k, tc.mixing), func(t *testing.T) {
			g, comm, err := PlantedPartition(tc.n, tc.k, tc.deg, tc.mixing, 5)
			require.NoError(t, err)
			checkUndirected(t, g)
			require.Len(t, comm, tc.n)
			sizes := make([]int, tc.k)
			for _, c := range comm {
				sizes[c]++
			}
			for _, s := range sizes {
				assert.InDelta(t, tc.n/tc.k, s, 1, "equal communities")
			}
			p := &Partitioning{K: tc.k, Parts: comm}
			s, err := p.Stats(g)
			require.NoError(t, err)
			assert.InDelta(t, tc.deg*float64(tc.n)/2, float64(s.Edges), 0.05*tc.deg*float64(tc.n)/2, "edge count")
			assert.InDelta(t, tc.mixing, 1-s.KeptFraction, 0.03, "fraction of edges between communities")
			g2, comm2, err := PlantedPartition(tc.n, tc.k, tc.deg, tc.mixing, 5)
			require.NoError(t, err)
			assert.Equal(t, g, g2)
			assert.Equal(t, comm, comm2)
		})
	}
	for _, bad := range []struct {
		n, k   int
		deg, m float64
	}{{1, 1, 2, 0}, {10, 11, 2, 0}, {10, 2, 0, 0}, {10, 2, 2, 1.5}, {10, 1, 2, 0.5}} {
		_, _, err := PlantedPartition(bad.n, bad.k, bad.deg, bad.m, 1)
		assert.ErrorIs(t, err, ErrSynth, "%+v", bad)
	}
}

func BenchmarkPlantedPartition(b *testing.B) {
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := PlantedPartition(n, n/1000, 16, 0.3, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}

// TestSynthMemory checks the estimates against the bytes the generators
// really allocate: every slice they make is still live at the CSR build's
// peak, so the total allocated is that peak (plus small change).
func TestSynthMemory(t *testing.T) {
	measure := func(gen func()) int64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		gen()
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc - before.TotalAlloc)
	}
	for _, tc := range []struct{ scale, ef int }{{12, 8}, {16, 4}, {14, 16}} {
		t.Run(fmt.Sprintf("rmat/scale=%d/ef=%d", tc.scale, tc.ef), func(t *testing.T) {
			mem, ok := RMATMemory(tc.scale, tc.ef)
			require.True(t, ok)
			var g *Graph
			got := measure(func() { g, _ = RMAT(tc.scale, tc.ef, 0.57, 0.19, 0.19, 1) })
			assert.GreaterOrEqual(t, mem.Peak, got*95/100, "peak estimate covers what RMAT allocates")
			assert.LessOrEqual(t, mem.Peak, got*11/10, "and is not far above it")
			assert.GreaterOrEqual(t, mem.Graph, int64(4*cap(g.Indices)+4*len(g.Indptr)))
		})
	}
	for _, tc := range []struct {
		n   int
		deg float64
	}{{5000, 10}, {100000, 16}} {
		t.Run(fmt.Sprintf("planted/n=%d", tc.n), func(t *testing.T) {
			mem, ok := PlantedMemory(tc.n, tc.deg)
			require.True(t, ok)
			var g *Graph
			var comm []int32
			got := measure(func() { g, comm, _ = PlantedPartition(tc.n, 10, tc.deg, 0.2, 1) })
			assert.GreaterOrEqual(t, mem.Peak, got*95/100)
			assert.LessOrEqual(t, mem.Peak, got*11/10)
			assert.GreaterOrEqual(t, mem.Graph, int64(4*cap(g.Indices)+4*len(g.Indptr)+4*len(comm)))
		})
	}
	for _, bad := range [][2]int{{0, 8}, {31, 1}, {26, 32}, {10, 0}} {
		_, ok := RMATMemory(bad[0], bad[1])
		assert.False(t, ok, "%v", bad)
	}
	_, ok := PlantedMemory(1, 4)
	assert.False(t, ok)
}
