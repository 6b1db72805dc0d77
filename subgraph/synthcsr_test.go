package subgraph

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSymCSR: the parallel build is FromEdges's graph, at any number of
// cores, with duplicates, self-loops and hubs in the edge list.
func TestSymCSR(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ n, m int }{{1, 0}, {1, 3}, {2, 5}, {1000, 300000}, {70000, 200000}} {
		r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.m)))
		src, dst := make([]int32, tc.m), make([]int32, tc.m)
		for i := range src {
			src[i] = int32(r.IntN(tc.n))
			dst[i] = int32(r.IntN(tc.n))
			if i%7 == 0 {
				dst[i] = 0 // a hub
			}
		}
		want, err := FromEdges(tc.n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
		require.NoError(t, err)
		for _, procs := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("n=%d/m=%d/procs=%d", tc.n, tc.m, procs), func(t *testing.T) {
				runtime.GOMAXPROCS(procs)
				got, err := symCSR(tc.n, src, dst)
				require.NoError(t, err)
				assert.Equal(t, want.Indptr, got.Indptr)
				assert.Equal(t, want.Indices, got.Indices)
			})
		}
	}
}

// TestSynthAnyCores: same seed, same graph at any GOMAXPROCS.
func TestSynthAnyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var rmat, planted []*Graph
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		g, err := RMAT(14, 8, 0.57, 0.19, 0.19, 5)
		require.NoError(t, err)
		rmat = append(rmat, g)
		p, _, err := PlantedPartition(40000, 40, 10, 0.2, 5)
		require.NoError(t, err)
		planted = append(planted, p)
	}
	assert.Equal(t, rmat[0], rmat[1])
	assert.Equal(t, planted[0], planted[1])
}

// BenchmarkSynth times the generators alone (no output), at 1M and 4M
// nodes: go test -bench Synth -cpu 1,2 (bench/scale/RESULTS.md).
func BenchmarkSynth(b *testing.B) {
	for _, scale := range []int{20, 22} {
		n := 1 << scale
		b.Run(fmt.Sprintf("model=rmat/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := RMAT(scale, 16, 0.57, 0.19, 0.19, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
		})
		b.Run(fmt.Sprintf("model=planted/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := PlantedPartition(n, n/1000, 16, 0.1, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}
