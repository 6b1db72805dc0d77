package subgraph

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlantedFeaturesRoundTrip: a planted graph with class-correlated
// features, written by WriteBenchmarkNPZ, loads back (the gnn-benchmark
// reader) as the same graph, features and labels; the features are the
// same whatever GOMAXPROCS draws them, and lean towards the class band.
func TestPlantedFeaturesRoundTrip(t *testing.T) {
	const n, k, classes, cols, nnz = 40000, 50, 7, 128, 16
	g, comm, err := PlantedPartition(n, k, 8, 0.1, 3)
	require.NoError(t, err)
	labels := make([]int32, n)
	for v, c := range comm {
		labels[v] = c % classes
	}
	f, err := PlantedFeatures(labels, classes, cols, nnz, 3)
	require.NoError(t, err)
	func() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		f1, err := PlantedFeatures(labels, classes, cols, nnz, 3)
		require.NoError(t, err)
		assert.Equal(t, f, f1, "one goroutine draws the same features")
	}()
	inBand := 0
	stride := cols / classes
	for v := range n {
		row := f.Indices[f.Indptr[v]:f.Indptr[v+1]]
		require.Len(t, row, nnz)
		for i, c := range row {
			if i > 0 {
				require.Less(t, row[i-1], c, "row %d sorted, distinct", v)
			}
			if (int(c)-int(labels[v])*stride+cols)%cols < nnz {
				inBand++
			}
		}
	}
	assert.Greater(t, float64(inBand)/float64(n*nnz), 3*float64(nnz)/cols, "features lean towards the class band (uniform: nnz/cols)")

	path := filepath.Join(t.TempDir(), "planted.npz")
	w, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, WriteBenchmarkNPZ(w, g, f, labels))
	require.NoError(t, w.Close())
	d, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, g.Indptr, d.Graph.Indptr)
	assert.Equal(t, g.Indices, d.Graph.Indices)
	assert.Equal(t, labels, d.Labels)
	assert.Equal(t, classes, d.NumClasses)
	require.NotNil(t, d.Features)
	assert.Equal(t, f.Indptr, d.Features.Indptr)
	assert.Equal(t, f.Indices, d.Features.Indices)
	assert.Equal(t, f.Values, d.Features.Values)

	_, err = PlantedFeatures(labels, classes, 8, 9, 1)
	assert.ErrorIs(t, err, ErrSynth)
	assert.ErrorIs(t, WriteBenchmarkNPZ(w, g, f, labels[1:]), ErrInconsistent)
}
