package pipeline

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/layers"
)

var proteinsDir = filepath.Join("..", "testdata", "proteins")

func TestGraphDataset(t *testing.T) {
	assert.True(t, GraphDataset(proteinsDir))
	assert.True(t, GraphDataset(filepath.Join(proteinsDir, "PROTEINS.txt")))
	assert.False(t, GraphDataset("cora"))
	assert.False(t, GraphDataset(filepath.Join("..", "testdata", "citeseer")))
	assert.False(t, GraphDataset("no-such-dataset"))
}

// TestGraphClassify runs one fold briefly and checks the report's shape,
// then the settings it refuses.
func TestGraphClassify(t *testing.T) {
	c := DefaultGraphConfig(proteinsDir)
	c.Hidden, c.Layers, c.Epochs, c.QATEpochs = 8, 2, 2, 1
	j := &Job{Config: c, Backend: cpu.NewBackend(nil)}
	r, err := j.GraphClassify([]int{4}, [][2]int{{2, 2}, {8, 4}})
	require.NoError(t, err)
	assert.Equal(t, []int{4}, r.Folds)
	assert.Equal(t, 1113, r.Graphs)
	require.Len(t, r.FP32.PerFold, 1)
	require.Len(t, r.Curve, 1)
	require.Len(t, r.Curve[0], c.Epochs)
	assert.Equal(t, r.FP32.PerFold[0], r.Curve[0][c.Epochs-1], "the curve's last epoch is the model reported")
	require.True(t, r.XuEpoch >= 1 && r.XuEpoch <= c.Epochs, "epoch %d", r.XuEpoch)
	assert.Equal(t, slices.Max(r.Curve[0]), r.XuBest.Mean, "one fold: its best epoch")
	assert.Equal(t, r.Curve[0][r.XuEpoch-1], r.XuBest.Mean)
	require.Len(t, r.Widths, 2)
	assert.Equal(t, [2]int{8, 4}, [2]int{r.Widths[1].ABits, r.Widths[1].WBits})
	for _, w := range r.Widths {
		require.Len(t, w.Accuracy.PerFold, 1)
		assert.InDelta(t, 0.6, w.Accuracy.Mean, 0.3)
	}

	_, err = j.GraphClassify([]int{11}, nil)
	assert.ErrorIs(t, err, ErrData)
	gcn := *j
	gcn.Model = layers.GCN
	_, err = gcn.GraphClassify(nil, nil)
	var ce *ConfigError
	assert.ErrorAs(t, err, &ce)
	none := *j
	none.Backend = nil
	_, err = none.GraphClassify(nil, nil)
	assert.ErrorIs(t, err, ErrNoBackend)
	cora := *j
	cora.Dataset = "cora"
	_, err = cora.GraphClassify(nil, nil)
	assert.Error(t, err)
}

func TestXuProtocol(t *testing.T) {
	e, s := XuProtocol([][]float64{{0.5, 0.7, 0.6, 0.75}, {0.6, 0.6, 0.9, 0.75}})
	assert.Equal(t, 3, e, "means 0.55, 0.65, 0.75, 0.75: the first best")
	assert.Equal(t, []float64{0.6, 0.9}, s.PerFold)
	assert.InDelta(t, 0.75, s.Mean, 1e-12)
	assert.InDelta(t, 0.15, s.Std, 1e-12)
	e, s = XuProtocol(nil)
	assert.Equal(t, 0, e)
	assert.Empty(t, s.PerFold)
}

func TestGraphStat(t *testing.T) {
	var s GraphStat
	for _, v := range []float64{0.7, 0.8, 0.75} {
		s.add(v)
	}
	assert.InDelta(t, 0.75, s.Mean, 1e-12)
	assert.InDelta(t, 0.0408248, s.Std, 1e-6) // population std
	assert.Equal(t, []float64{0.7, 0.8, 0.75}, s.PerFold)
}
