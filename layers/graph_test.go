package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/subgraph"
)

// tinyGraphSet is three graphs: a path 0-1-2, a lone node, an edge 4-5.
func tinyGraphSet(t *testing.T) *subgraph.GraphSet {
	g, err := subgraph.FromEdges(6, []int32{0, 1, 4}, []int32{1, 2, 5}, subgraph.BuildOptions{Symmetrize: true})
	require.NoError(t, err)
	f := &subgraph.Features{Rows: 6, Cols: 2, Indptr: []int32{0, 1, 2, 3, 4, 5, 6}, Indices: []int32{0, 1, 0, 1, 1, 0}}
	return &subgraph.GraphSet{Graph: g, Offsets: []int32{0, 3, 4, 6}, Labels: []int32{0, 1, 0}, NumClasses: 2,
		Tags: f.Indices, NumTags: 2, Features: f}
}

func TestGraphBatches(t *testing.T) {
	set := tinyGraphSet(t)
	bs, err := NewGraphBatches(set, []int32{2, 0, 1}, 2, true)
	require.NoError(t, err)
	require.Len(t, bs, 2)
	b := bs[0]
	assert.Equal(t, []int32{4, 5, 0, 1, 2}, b.Nodes)
	assert.Equal(t, []int32{0, 2, 4, 6, 9, 11}, b.Indptr)
	assert.Equal(t, []int32{0, 1, 0, 1, 2, 3, 2, 3, 4, 3, 4}, b.Indices, "block-diagonal, self-loops sorted in")
	assert.Equal(t, []int32{2, 0}, b.Graphs)
	assert.Equal(t, []int32{0, 2, 5}, b.Pool.Indptr)
	assert.Equal(t, []int32{0, 1, 2, 3, 4}, b.Pool.Indices)
	assert.Equal(t, []float32{2, 3}, b.Sizes)
	assert.Equal(t, []float32{2, 2, 2, 3, 2}, b.Deg)
	for r := range b.N() {
		for c := range b.N() {
			want := uint32(0)
			for _, u := range b.Indices[b.Indptr[r]:b.Indptr[r+1]] {
				if int(u) == c {
					want = 1
				}
			}
			assert.Equal(t, want, b.Adj.At(r, c), "adjacency bit (%d, %d)", r, c)
		}
	}
	assert.Equal(t, []int32{3}, bs[1].Nodes)
	assert.Equal(t, []int32{0}, bs[1].Indices, "a lone node keeps its self-loop")

	_, err = NewGraphBatches(set, []int32{3}, 1, false)
	assert.ErrorIs(t, err, ErrModel)
	_, err = NewGraphBatches(set, []int32{0}, 0, false)
	assert.ErrorIs(t, err, ErrModel)
	cross := tinyGraphSet(t)
	cross.Offsets = []int32{0, 2, 4, 6} // the edge 1-2 now joins two graphs
	_, err = NewGraphBatches(cross, []int32{0}, 1, false)
	assert.ErrorIs(t, err, ErrModel)
}

// proteinsGraphs loads PROTEINS and a small trained-and-calibrated GIN
// graph classifier on its first graphs.
func proteinsGraphs(t *testing.T, bits int) (*subgraph.GraphSet, []int32, *GraphModel, *Input) {
	t.Helper()
	set, err := subgraph.LoadGraphSet(filepath.Join("..", "testdata", "proteins"))
	require.NoError(t, err)
	graphs := make([]int32, 48)
	for i := range graphs {
		graphs[i] = int32(i * 23) // both classes, small and large graphs
	}
	in, err := QuantizeInput(set.Features, bits)
	require.NoError(t, err)
	gm, err := NewGraphModel(set.NumTags, 8, set.NumClasses, 2, bits, bits, NormBatch, 1)
	require.NoError(t, err)
	gm.Scale = 1.0 / 39
	_, err = gm.TrainGraphs(set, graphs, in, false, GraphTrainConfig{Epochs: 2, LR: 0.01, Dropout: 0.5, PerBatch: 16, Seed: 1})
	require.NoError(t, err)
	bs, err := NewGraphBatches(set, graphs, 16, true)
	require.NoError(t, err)
	require.NoError(t, gm.CalibrateGraphs(bs, in, 1))
	require.Len(t, gm.Bias, 2)
	require.True(t, gm.Bias[0] != 0 && gm.Bias[1] != 0, "the readout bias trains (and the plans below add it)")
	return set, graphs, gm, in
}

// TestGraphPlanMatchesSimulation: the graph logits a plan computes on the
// generic and the cpu backend, with dense or edge-list aggregations and
// either first product, are the simulation's bit for bit, the readout
// included; QAT keeps it so.
func TestGraphPlanMatchesSimulation(t *testing.T) {
	for _, bits := range []int{2, 4} {
		set, graphs, gm, in := proteinsGraphs(t, bits)
		_, err := gm.TrainGraphs(set, graphs, in, true, GraphTrainConfig{Epochs: 1, LR: 0.001, PerBatch: 16, Seed: 2})
		require.NoError(t, err)
		bs, err := NewGraphBatches(set, graphs, 20, true)
		require.NoError(t, err)
		want, err := gm.GraphLogits(bs, in, true)
		require.NoError(t, err)
		var first [][]float32
		for _, be := range []bmm.Backend{bmm.NewGenericBackend(), cpu.NewBackend(nil)} {
			for _, agg := range []AggMode{AggDense, AggSparse} {
				for _, sparse := range []bool{false, true} {
					t.Run(fmt.Sprintf("bits=%d/%s/agg=%v/sparse=%v", bits, be.Name(), agg, sparse), func(t *testing.T) {
						gp, err := gm.CompileGraphs(be)
						require.NoError(t, err)
						defer gp.Close()
						gp.Agg = agg
						var all [][]float32
						for i, b := range bs {
							got, err := gp.Forward(b, in, sparse)
							require.NoError(t, err)
							require.Len(t, got, len(want[i]))
							for k := range got {
								require.Equal(t, math.Float32bits(want[i][k]), math.Float32bits(got[k]), "batch %d logit %d", i, k)
							}
							all = append(all, got)
						}
						if first == nil {
							first = all
						}
						assert.Equal(t, first, all, "every backend and mode gives the same logits")
						pred, err := gp.Predict(bs, in, sparse, set.NumGraphs())
						require.NoError(t, err)
						acc, err := gm.GraphAccuracy(bs, in, set.Labels, true)
						require.NoError(t, err)
						var hit int
						for _, g := range graphs {
							if pred[g] == set.Labels[g] {
								hit++
							}
						}
						assert.InDelta(t, acc, float64(hit)/float64(len(graphs)), 1e-12)
					})
				}
			}
		}
	}
}

// TestGraphGradient checks the graph classifier's backward pass against
// central differences of the fp32 graph loss in two weights of each linear
// (the heads' included), the biases and the readout's bias: without batch
// norm, with the MLPs' batch norms in training (the batch's statistics,
// whose backward also gives Gamma's and Beta's gradients) and frozen (the
// running statistics folded in, as QAT and frozen epochs run).
func TestGraphGradient(t *testing.T) {
	set, err := subgraph.LoadGraphSet(filepath.Join("..", "testdata", "proteins"))
	require.NoError(t, err)
	in, err := QuantizeInput(set.Features, 8)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		norm  string
		train bool // the batch's statistics
		// h is the step: with the batch's statistics many values sit near
		// the ReLU's kink, and a larger step carries them across it.
		h float64
	}{
		{"no batch norm", NormNone, false, 1e-2},
		{"batch norm training", NormBatch, true, 1e-3},
		{"batch norm frozen", NormBatch, false, 1e-2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gm, err := NewGraphModel(set.NumTags, 6, set.NumClasses, 2, 8, 8, tc.norm, 3)
			require.NoError(t, err)
			gm.Scale = 0.25
			gm.Bias = []float32{0.3, -0.2}
			var bns []*BatchNorm
			for i := range gm.Layers {
				if bn := gm.Layers[i].BN; bn != nil {
					bns = append(bns, bn)
				}
			}
			if tc.norm == NormBatch {
				require.Len(t, bns, 2)
			}
			for i, bn := range bns { // away from the identity, so that a wrong term shows
				for j := range bn.Gamma {
					f := float32(i*len(bn.Gamma) + j)
					bn.Gamma[j], bn.Beta[j] = 0.8+0.05*f, 0.1-0.03*f
					bn.Mean[j], bn.Var[j] = 0.2-0.04*f, 0.5+0.1*f
				}
			}
			bs, err := NewGraphBatches(set, []int32{1, 50, 400, 900}, 4, false)
			require.NoError(t, err)
			b := bs[0]
			lins := gm.linears()
			for l := range gm.Heads {
				lins = append(lins, &gm.Heads[l])
			}
			require.Len(t, gm.Heads, 2)
			loss := func() (float64, *simGrads, []float32) {
				var rng *rand.Rand
				if tc.train {
					rng = rand.New(rand.NewPCG(1, 1)) // the batch's statistics; no dropout draws
				}
				gp, err := gm.graphForward(b, in, false, 0, rng, nil)
				require.NoError(t, err)
				idx := []int{0, 1, 2, 3}
				l, dl := crossEntropy(gp.logits, gm.Classes, set.Labels, b.Graphs, idx)
				g, _, _, _ := newSimGrads(lins, gm.Layers)
				gb := make([]float32, len(gm.Bias))
				gm.graphBackward(b, gp, dl, false, g, gb)
				return l, g, gb
			}
			snap := make([]*BatchNorm, len(bns))
			for i, bn := range bns {
				snap[i] = bn.clone()
			}
			_, g, gb := loss()
			// central is the loss's central difference in the parameter at p.
			central := func(p *float32) float64 {
				p0 := *p
				*p = p0 + float32(tc.h)
				up, _, _ := loss()
				*p = p0 - float32(tc.h)
				down, _, _ := loss()
				*p = p0
				return (up - down) / (2 * tc.h)
			}
			near := func(p *float32, got float32, what string, args ...any) {
				num := central(p)
				assert.InDelta(t, num, float64(got), 2e-3+0.02*math.Abs(num), fmt.Sprintf(what, args...))
			}
			for li, lin := range lins {
				for _, k := range []int{len(lin.W) / 2, len(lin.W) / 3} {
					near(&lin.W[k], g.w[lin][k], "linear %d weight %d", li, k)
				}
				// With the batch's statistics a bias before a batch norm
				// cancels: both sides are zero.
				for j := range lin.B {
					near(&lin.B[j], g.b[lin][j], "linear %d bias %d", li, j)
				}
			}
			for j := range gm.Bias {
				near(&gm.Bias[j], gb[j], "readout bias %d", j)
			}
			for i, bn := range bns {
				if !tc.train {
					// A frozen pass neither moves the running statistics
					// nor trains Gamma and Beta (they are folded in).
					assert.Equal(t, snap[i], bn, "batch norm %d", i)
					assert.Equal(t, make([]float32, len(bn.Gamma)), g.gamma[bn], "batch norm %d: no Gamma gradient", i)
					assert.Equal(t, make([]float32, len(bn.Beta)), g.beta[bn], "batch norm %d: no Beta gradient", i)
					continue
				}
				var sum float64
				for j := range bn.Gamma {
					sum += math.Abs(float64(g.gamma[bn][j])) + math.Abs(float64(g.beta[bn][j]))
					near(&bn.Gamma[j], g.gamma[bn][j], "batch norm %d gamma %d", i, j)
					near(&bn.Beta[j], g.beta[bn][j], "batch norm %d beta %d", i, j)
				}
				assert.Greater(t, sum, 1e-3, "batch norm %d takes a gradient", i)
			}
		})
	}
}

// TestGraphFrozen: frozen epochs train with the batch norms' running
// statistics (left as they are), others update them.
func TestGraphFrozen(t *testing.T) {
	set := tinyGraphSet(t)
	in, err := QuantizeInput(set.Features, 8)
	require.NoError(t, err)
	for _, frozen := range []int{0, 2} {
		gm, err := NewGraphModel(set.NumTags, 4, set.NumClasses, 2, 8, 8, NormBatch, 1)
		require.NoError(t, err)
		before := slices.Clone(gm.Layers[0].BN.Mean)
		w := slices.Clone(gm.Layers[0].Lin1.W)
		_, err = gm.TrainGraphs(set, []int32{0, 1, 2}, in, false, GraphTrainConfig{Epochs: 2, LR: 0.01, PerBatch: 3, Frozen: frozen})
		require.NoError(t, err)
		assert.Equal(t, frozen > 0, slices.Equal(before, gm.Layers[0].BN.Mean), "frozen %d: running means kept", frozen)
		assert.NotEqual(t, w, gm.Layers[0].Lin1.W, "frozen %d: the weights train", frozen)
	}
}
