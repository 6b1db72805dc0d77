package subgraph

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartitionMETIS runs the real METIS next to ours when built with
// -tags metis, and checks both partitions and that our cut is close.
func TestPartitionMETIS(t *testing.T) {
	g, _, err := PlantedPartition(20000, 40, 12, 0.2, 2)
	require.NoError(t, err)
	if !HaveMETIS {
		_, err := PartitionMETIS(g, 4, PartitionOptions{})
		assert.ErrorIs(t, err, ErrPartition)
		t.Skip("built without -tags metis")
	}
	for _, k := range []int{2, 20, 100} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			m, err := PartitionMETIS(g, k, PartitionOptions{Seed: 1})
			require.NoError(t, err)
			ms, err := m.Stats(g)
			require.NoError(t, err)
			p, err := Partition(g, k, PartitionOptions{Seed: 1})
			require.NoError(t, err)
			ps, err := p.Stats(g)
			require.NoError(t, err)
			t.Logf("k=%d: ours cut %d, METIS cut %d", k, ps.EdgeCut, ms.EdgeCut)
			assert.LessOrEqual(t, float64(ps.EdgeCut), 1.05*float64(ms.EdgeCut))
		})
	}
}

// BenchmarkPartition times ours and (with -tags metis) METIS side by side
// on the same graphs, reporting the edge cut next to the time.
func BenchmarkPartition(b *testing.B) {
	planted, _, err := PlantedPartition(200000, 200, 16, 0.3, 1)
	require.NoError(b, err)
	graphs := []struct {
		name string
		g    *Graph
	}{{"planted200k", planted}}
	if d, err := Load("coauthor_physics"); err == nil {
		graphs = append(graphs, struct {
			name string
			g    *Graph
		}{"coauthor_physics", d.Graph})
	}
	impls := []struct {
		name string
		f    func(*Graph, int, PartitionOptions) (*Partitioning, error)
	}{{"qgtc", Partition}}
	if HaveMETIS {
		impls = append(impls, struct {
			name string
			f    func(*Graph, int, PartitionOptions) (*Partitioning, error)
		}{"metis", PartitionMETIS})
	}
	for _, gr := range graphs {
		for _, k := range []int{50, 1500} {
			for _, im := range impls {
				b.Run(fmt.Sprintf("graph=%s/k=%d/impl=%s", gr.name, k, im.name), func(b *testing.B) {
					var p *Partitioning
					for b.Loop() {
						var err error
						if p, err = im.f(gr.g, k, PartitionOptions{Seed: 1}); err != nil {
							b.Fatal(err)
						}
					}
					s, err := p.Stats(gr.g)
					require.NoError(b, err)
					b.ReportMetric(float64(s.EdgeCut), "cut")
					b.ReportMetric(s.Imbalance, "imbalance")
					b.ReportMetric(float64(gr.g.N())*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
				})
			}
		}
	}
}
