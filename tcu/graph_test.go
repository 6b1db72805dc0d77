package tcu

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// TestGraphPlanOnDevice runs the GIN graph classifier (batched graphs,
// sum readout) on the resident backend and on bmm's generic one over
// PROTEINS graphs, at widths 1 to 8, every aggregation mode and both forms
// of the first product: every graph logit agrees bit for bit.
func TestGraphPlanOnDevice(t *testing.T) {
	k := gpuKernel(t)
	set, err := subgraph.LoadGraphSet("proteins")
	require.NoError(t, err)
	graphs := make([]int32, 96)
	for i := range graphs {
		graphs[i] = int32(i * 11)
	}
	bs, err := layers.NewGraphBatches(set, graphs, 32, true)
	require.NoError(t, err)
	for _, bits := range []int{1, 2, 4, 8} {
		in, err := layers.QuantizeInput(set.Features, bits)
		require.NoError(t, err)
		gm, err := layers.NewGraphModel(set.NumTags, 16, set.NumClasses, 3, bits, bits, layers.NormBatch, 5)
		require.NoError(t, err)
		gm.Scale = 1.0 / 39
		_, err = gm.TrainGraphs(set, graphs, in, false, layers.GraphTrainConfig{Epochs: 2, LR: 0.01, PerBatch: 16, Seed: 1})
		require.NoError(t, err)
		require.NoError(t, gm.CalibrateGraphs(bs, in, 0))
		for _, agg := range []layers.AggMode{layers.AggAuto, layers.AggDense, layers.AggSparse} {
			for _, sparse := range []bool{false, true} {
				t.Run(fmt.Sprintf("bits=%d/agg=%v/sparse=%v", bits, agg, sparse), func(t *testing.T) {
					be, err := NewBackend(k)
					require.NoError(t, err)
					defer be.Close()
					ref := bmm.NewGenericBackend()
					defer ref.Close()
					var logits [2][][]float32
					for i, b := range []bmm.Backend{be, ref} {
						p, err := gm.CompileGraphs(b)
						require.NoError(t, err)
						p.Agg = agg
						for _, gb := range bs {
							lg, err := p.Forward(gb, in, sparse)
							require.NoError(t, err)
							logits[i] = append(logits[i], lg)
						}
						require.NoError(t, p.Close())
					}
					for bi := range logits[1] {
						for j := range logits[1][bi] {
							require.Equal(t, math.Float32bits(logits[1][bi][j]), math.Float32bits(logits[0][bi][j]), "batch %d logit %d", bi, j)
						}
					}
				})
			}
		}
	}
}
