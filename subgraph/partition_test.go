package subgraph

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testGraphs are small graphs of awkward shapes for the partitioner.
func testGraphs(t *testing.T) map[string]*Graph {
	t.Helper()
	gs := map[string]*Graph{}
	planted, _, err := PlantedPartition(3000, 12, 10, 0.2, 7)
	require.NoError(t, err)
	gs["planted"] = planted
	rmat, err := RMAT(11, 8, 0.57, 0.19, 0.19, 3)
	require.NoError(t, err)
	gs["rmat"] = rmat // power-law, with isolated nodes
	// A path, a star and a set of disconnected pieces.
	var ps, pd []int32
	for i := int32(0); i < 999; i++ {
		ps, pd = append(ps, i), append(pd, i+1)
	}
	gs["path"] = mustGraph(t, 1000, ps, pd)
	var ss, sd []int32
	for i := int32(1); i < 500; i++ {
		ss, sd = append(ss, 0), append(sd, i)
	}
	gs["star"] = mustGraph(t, 500, ss, sd)
	var cs, cd []int32
	for c := int32(0); c < 40; c++ { // 40 triangles and 80 isolated nodes
		cs = append(cs, 3*c, 3*c+1, 3*c+2)
		cd = append(cd, 3*c+1, 3*c+2, 3*c)
	}
	gs["pieces"] = mustGraph(t, 200, cs, cd)
	gs["isolated"] = mustGraph(t, 300, nil, nil)
	// One direction of each edge plus self-loops: partitioned as its closure.
	r := rand.New(rand.NewPCG(1, 2))
	var as, ad []int32
	for i := 0; i < 3000; i++ {
		as, ad = append(as, int32(r.IntN(700))), append(ad, int32(r.IntN(700)))
	}
	g, err := FromEdges(700, as, ad, BuildOptions{})
	require.NoError(t, err)
	gs["directed"] = g
	return gs
}

func mustGraph(t testing.TB, n int, src, dst []int32) *Graph {
	t.Helper()
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	require.NoError(t, err)
	return g
}

// allowedMax is the largest part size Partition may produce.
func allowedMax(n, k int, ub float64) int {
	return int(maxPartWeight(int64(n), k, ub))
}

func TestPartitionBalanceAndCoverage(t *testing.T) {
	for name, g := range testGraphs(t) {
		for _, k := range []int{1, 2, 3, 7, 16, 50} {
			for _, ub := range []float64{0, 1.1} {
				t.Run(fmt.Sprintf("%s/k=%d/ub=%g", name, k, ub), func(t *testing.T) {
					p, err := Partition(g, k, PartitionOptions{Imbalance: ub, Seed: 5})
					require.NoError(t, err)
					require.NoError(t, p.Check(g))
					s, err := p.Stats(g)
					require.NoError(t, err)
					if ub == 0 {
						ub = DefaultImbalance
					}
					assert.LessOrEqual(t, s.MaxPart, allowedMax(g.N(), k, ub), "part sizes %d..%d", s.MinPart, s.MaxPart)
					assert.Zero(t, s.EmptyParts, "every part is used")
					assert.Equal(t, g.N(), len(p.Parts))
				})
			}
		}
	}
}

func TestPartitionEveryNodeItsOwnPart(t *testing.T) {
	for name, g := range testGraphs(t) {
		if g.N() > 1000 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p, err := Partition(g, g.N(), PartitionOptions{})
			require.NoError(t, err)
			s, err := p.Stats(g)
			require.NoError(t, err)
			assert.Equal(t, 1, s.MaxPart)
			assert.Equal(t, 1, s.MinPart)
			assert.Equal(t, s.Edges, s.EdgeCut)
		})
	}
}

func TestPartitionDeterministic(t *testing.T) {
	g, _, err := PlantedPartition(20000, 40, 12, 0.25, 11)
	require.NoError(t, err)
	for _, k := range []int{8, 100} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			a, err := Partition(g, k, PartitionOptions{Seed: 3, Threads: 1})
			require.NoError(t, err)
			b, err := Partition(g, k, PartitionOptions{Seed: 3, Threads: 4})
			require.NoError(t, err)
			assert.Equal(t, a.Parts, b.Parts, "same seed, different thread counts")
			c, err := Partition(g, k, PartitionOptions{Seed: 4})
			require.NoError(t, err)
			assert.NotEqual(t, a.Parts, c.Parts, "another seed explores another partition")
		})
	}
}

// TestPartitionDeterministicDeep: on a graph whose coarsest level is split
// by halves that spawn halves of their own (above 2,000 vertices two
// levels down), the parts are the same on 1 and 8 threads, run after run.
// A half used to be copied out before its own spawned halves had written
// it, and the parts then depended on the goroutines' timing.
func TestPartitionDeterministicDeep(t *testing.T) {
	if testing.Short() {
		t.Skip("partitions a 300,000-node graph 4 times")
	}
	g, _, err := PlantedPartition(300000, 300, 8, 0.2, 5)
	require.NoError(t, err)
	a, err := Partition(g, 300, PartitionOptions{Seed: 1, Threads: 1})
	require.NoError(t, err)
	for range 3 {
		b, err := Partition(g, 300, PartitionOptions{Seed: 1, Threads: 8})
		require.NoError(t, err)
		require.Equal(t, a.Parts, b.Parts, "1 and 8 threads")
	}
}

// TestPartitionRecoversPlanted checks quality where the optimum is known
// closely: communities planted with 10% mixing should come out whole, so
// the cut is near the planted partition's.
func TestPartitionRecoversPlanted(t *testing.T) {
	for _, tc := range []struct{ n, comm, k int }{{20000, 20, 20}, {20000, 40, 20}, {30000, 300, 100}} {
		t.Run(fmt.Sprintf("n=%d/comm=%d/k=%d", tc.n, tc.comm, tc.k), func(t *testing.T) {
			g, comm, err := PlantedPartition(tc.n, tc.comm, 12, 0.1, 9)
			require.NoError(t, err)
			planted := &Partitioning{K: tc.k, Parts: make([]int32, tc.n)}
			for v, c := range comm {
				planted.Parts[v] = c % int32(tc.k) // communities paired into parts when comm > k
			}
			ps, err := planted.Stats(g)
			require.NoError(t, err)
			// One seed may split a community or two (gpmetis too, about 1%
			// over the planted cut on these graphs); the mean over three
			// seeds must stay within 8%.
			var cuts []int64
			for seed := uint64(1); seed <= 3; seed++ {
				p, err := Partition(g, tc.k, PartitionOptions{Seed: seed})
				require.NoError(t, err)
				s, err := p.Stats(g)
				require.NoError(t, err)
				cuts = append(cuts, s.EdgeCut)
			}
			mean := float64(cuts[0]+cuts[1]+cuts[2]) / 3
			assert.LessOrEqual(t, mean, 1.08*float64(ps.EdgeCut), "ours %v, planted %d", cuts, ps.EdgeCut)
		})
	}
}

// bruteCut counts undirected cut edges over a set of unordered pairs.
func bruteCut(g *Graph, parts []int32) (edges, cut int64) {
	seen := map[[2]int32]bool{}
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			a, b := int32(v), u
			if a == b {
				continue
			}
			if a > b {
				a, b = b, a
			}
			if !seen[[2]int32{a, b}] {
				seen[[2]int32{a, b}] = true
				edges++
				if parts[a] != parts[b] {
					cut++
				}
			}
		}
	}
	return edges, cut
}

func TestStatsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 30; trial++ {
		n := 1 + r.IntN(200)
		m := r.IntN(4 * n)
		src, dst := make([]int32, m), make([]int32, m)
		for i := range src {
			src[i], dst[i] = int32(r.IntN(n)), int32(r.IntN(n))
		}
		g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: trial%2 == 0})
		require.NoError(t, err)
		k := 1 + r.IntN(n)
		p := &Partitioning{K: k, Parts: make([]int32, n)}
		for v := range p.Parts {
			p.Parts[v] = int32(r.IntN(k))
		}
		t.Run(fmt.Sprintf("trial=%d/n=%d/k=%d", trial, n, k), func(t *testing.T) {
			s, err := p.Stats(g)
			require.NoError(t, err)
			edges, cut := bruteCut(g, p.Parts)
			assert.Equal(t, edges, s.Edges)
			assert.Equal(t, cut, s.EdgeCut)
			if edges > 0 {
				assert.InDelta(t, float64(edges-cut)/float64(edges), s.KeptFraction, 1e-12)
			}
			// The partitioner's own cut on its working graph agrees.
			wg := fromGraph(g, 2)
			assert.Equal(t, cut, wcut(wg, p.Parts))
		})
	}
}

func TestPartitionErrors(t *testing.T) {
	g := mustGraph(t, 10, []int32{0, 1, 2}, []int32{1, 2, 3})
	for _, tc := range []struct {
		name string
		g    *Graph
		k    int
		opt  PartitionOptions
	}{
		{"k=0", g, 0, PartitionOptions{}},
		{"k>n", g, 11, PartitionOptions{}},
		{"imbalance<1", g, 2, PartitionOptions{Imbalance: 0.5}},
		{"imbalance NaN", g, 2, PartitionOptions{Imbalance: math.NaN()}},
		{"empty graph", &Graph{Indptr: []int32{0}}, 1, PartitionOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Partition(tc.g, tc.k, tc.opt)
			assert.ErrorIs(t, err, ErrPartition)
		})
	}
	bad := &Partitioning{K: 2, Parts: []int32{0, 1, 2, 0, 0, 0, 0, 0, 0, 0}}
	assert.ErrorIs(t, bad.Check(g), ErrPartition)
	short := &Partitioning{K: 2, Parts: []int32{0}}
	_, err := short.Stats(g)
	assert.ErrorIs(t, err, ErrPartition)
}

func TestPartitionRealGraph(t *testing.T) {
	d, err := Load("cora")
	require.NoError(t, err)
	for _, k := range []int{2, 50} {
		t.Run(fmt.Sprintf("cora/k=%d", k), func(t *testing.T) {
			p, err := Partition(d.Graph, k, PartitionOptions{})
			require.NoError(t, err)
			s, err := p.Stats(d.Graph)
			require.NoError(t, err)
			assert.LessOrEqual(t, s.MaxPart, allowedMax(d.Graph.N(), k, DefaultImbalance))
			assert.Zero(t, s.EmptyParts)
			// Far better than a random assignment, which keeps about 1/K.
			assert.Greater(t, s.KeptFraction, map[int]float64{2: 0.9, 50: 0.6}[k], "kept fraction %.3f", s.KeptFraction)
		})
	}
}

func TestMETISRoundTrip(t *testing.T) {
	for name, g := range testGraphs(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, WriteMETIS(&buf, g))
			h, err := ReadMETIS(&buf)
			require.NoError(t, err)
			w := fromGraph(g, 2)
			assert.Equal(t, w.xadj, h.Indptr)
			assert.True(t, slices.Equal(w.adjncy, h.Indices), "adjacency differs")
		})
	}
}

func TestReadMETISErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"bad header":   "x y\n",
		"short":        "3 1\n2\n1\n",
		"asymmetric":   "3 1\n2\n\n\n",
		"out of range": "2 1\n3\n1\n",
		"self loop":    "2 1\n1\n1\n",
		"weighted":     "2 1 1\n2 5\n1 5\n",
		"edge count":   "2 2\n2\n1\n",
		"extra lines":  "1 0\n\n5\n",
		"repeated":     "2 1\n2 2\n1 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadMETIS(bytes.NewBufferString(in))
			assert.ErrorIs(t, err, ErrMETIS)
		})
	}
	_, err := ReadMETISPartition(bytes.NewBufferString("0\n1\n2\n"), 3, 2)
	assert.ErrorIs(t, err, ErrMETIS)
	_, err = ReadMETISPartition(bytes.NewBufferString("0\n1\n"), 3, 2)
	assert.ErrorIs(t, err, ErrMETIS)
	p, err := ReadMETISPartition(bytes.NewBufferString("0\n1\n1\n"), 3, 2)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1, 1}, p.Parts)
}

func FuzzReadMETIS(f *testing.F) {
	f.Add([]byte("3 2\n2\n1 3\n2\n"))
	f.Add([]byte("% comment\n2 1 0\n2\n1\n"))
	f.Add([]byte("1 0\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadMETIS(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrMETIS) {
				t.Fatalf("error %v is not ErrMETIS", err)
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("accepted an invalid graph: %v", err)
		}
		var buf bytes.Buffer
		if err := WriteMETIS(&buf, g); err != nil {
			t.Fatal(err)
		}
		h, err := ReadMETIS(&buf)
		if err != nil || len(h.Indices) != len(g.Indices) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func TestContractParallelMatchesSerial(t *testing.T) {
	g, _, err := PlantedPartition(30000, 30, 10, 0.3, 3)
	require.NoError(t, err)
	w := fromGraph(g, 2)
	r := rng64(1, 1)
	var c coarsener
	for level := 0; level < 3; level++ {
		cmap, cn := c.matchLevel(w, 1<<20, 2, r)
		serial := contract(w, cmap, cn, c.match, &c.htable)
		for _, threads := range []int{2, 3, 7} {
			par := contractParallel(w, cmap, cn, c.match, threads)
			require.Equal(t, serial, par, "level %d, %d threads", level, threads)
		}
		w = serial
	}
}

// TestPartitionSmallComponents: on CiteSeer (438 components, most tiny)
// packing the small components whole and giving the large component only
// its share of the parts cuts less than plain multilevel partitioning, and
// Partition keeps the better of the two.
func TestPartitionSmallComponents(t *testing.T) {
	d, err := Load("citeseer")
	require.NoError(t, err)
	g := d.Graph
	const k = 50
	opt := PartitionOptions{Imbalance: DefaultImbalance, Seed: 1, Threads: 1, Iterations: 10}
	wg := fromGraph(g, 2)
	packed := make([]int32, g.N())
	require.True(t, packSmallComponents(wg, k, opt, packed))
	plain := make([]int32, g.N())
	kwayPartition(wg, k, opt, plain)
	_, packedCut := countCut(g, packed)
	_, plainCut := countCut(g, plain)
	assert.Less(t, packedCut, plainCut)

	// Every small component (at most N/(2K) nodes) is whole.
	comp, count := g.Components()
	sizes := make([]int, count)
	for _, c := range comp {
		sizes[c]++
	}
	partOf := map[int32]int32{}
	for v, c := range comp {
		if sizes[c] > g.N()/(2*k) {
			continue
		}
		if q, ok := partOf[c]; ok {
			require.Equal(t, q, packed[v], "small component %d split", c)
		}
		partOf[c] = packed[v]
	}
	p, err := Partition(g, k, PartitionOptions{Seed: 1})
	require.NoError(t, err)
	s, err := p.Stats(g)
	require.NoError(t, err)
	assert.Equal(t, min(packedCut, plainCut), s.EdgeCut)
	assert.LessOrEqual(t, s.MaxPart, allowedMax(g.N(), k, DefaultImbalance))
	assert.Zero(t, s.EmptyParts)

	// A single connected graph is left to the plain path.
	one, _, err := PlantedPartition(2000, 10, 8, 0.1, 1)
	require.NoError(t, err)
	assert.False(t, packSmallComponents(fromGraph(one, 1), 10, opt, make([]int32, 2000)))
}

func TestPartitioningMembers(t *testing.T) {
	p := &Partitioning{K: 4, Parts: []int32{2, 0, 1, 0, 2, 2, 1}}
	starts, nodes := p.Members()
	require.Equal(t, []int32{1, 3, 2, 6, 0, 4, 5}, nodes, "part by part, each in node order")
	require.Equal(t, []int32{0, 2, 4, 7, 7}, starts, "part 3 is empty")
}
