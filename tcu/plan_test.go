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

// TestPlanOnDevice runs whole quantized models on the resident backend and
// on bmm's generic one: GCN, GIN with its batch norm and SAGE on Cora in
// four batches, at widths 1 to 8, every aggregation mode and both forms of
// the first product. The predictions and every logit agree bit for bit.
func TestPlanOnDevice(t *testing.T) {
	k := gpuKernel(t)
	ds, err := subgraph.Load("cora")
	require.NoError(t, err)
	parts := make([]int32, ds.Graph.N())
	for v := range parts {
		parts[v] = int32(v * 4 / len(parts))
	}
	d, err := layers.NewData(ds, parts, 4, 1)
	require.NoError(t, err)
	for _, c := range []struct{ kind, norm string }{{layers.GCN, layers.NormNone}, {layers.GIN, layers.NormBatch}, {layers.SAGE, layers.NormNone}} {
		for _, bits := range []int{1, 2, 4, 8} {
			in, err := layers.QuantizeInput(ds.Features, bits)
			require.NoError(t, err)
			m, err := layers.NewModel(c.kind, ds.Features.Cols, 16, ds.NumClasses, 2, bits, bits, 3)
			require.NoError(t, err)
			require.NoError(t, m.SetNorm(c.norm))
			_, err = m.TrainFP32(d, in, layers.TrainConfig{Epochs: 3, LR: 0.01, Seed: 1})
			require.NoError(t, err)
			require.NoError(t, m.Calibrate(d, in, 0))
			for _, agg := range []layers.AggMode{layers.AggAuto, layers.AggDense, layers.AggSparse} {
				for _, sparse := range []bool{false, true} {
					name := fmt.Sprintf("%s/bits=%d/agg=%v/sparse=%v", c.kind, bits, agg, sparse)
					t.Run(name, func(t *testing.T) {
						be, err := NewBackend(k)
						require.NoError(t, err)
						defer be.Close()
						ref := bmm.NewGenericBackend()
						defer ref.Close()
						var runs [2]*layers.Result
						var logits [2][]float32
						for i, b := range []bmm.Backend{be, ref} {
							p, err := m.Compile(b)
							require.NoError(t, err)
							p.Agg = agg
							runs[i], err = p.Run(d, in, sparse, nil)
							require.NoError(t, err)
							logits[i], _, err = p.ForwardSparse(d.Eval[1], in, nil)
							require.NoError(t, err)
							require.NoError(t, p.Close())
						}
						require.Equal(t, runs[1].Pred, runs[0].Pred, "predictions")
						for j := range logits[1] {
							require.Equal(t, math.Float32bits(logits[1][j]), math.Float32bits(logits[0][j]), "logit %d", j)
						}
					})
				}
			}
		}
	}
}
