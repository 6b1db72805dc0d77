package subgraph

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awayFromRepo makes the test run as a `go install`ed qgtc does: from an
// empty folder outside the module, with QGTC_DATA naming an empty folder.
func awayFromRepo(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("QGTC_DATA", t.TempDir())
	require.Empty(t, moduleRoot(), "the test must run outside the module")
}

// Cora is built into the binary, so Load("cora") works from any folder,
// and it is the same graph as the copy on disk.
func TestLoadEmbeddedFromAnyFolder(t *testing.T) {
	onDisk, err := Load("cora")
	require.NoError(t, err)
	require.NotContains(t, mustLocate(t, "cora"), EmbeddedPrefix, "inside the repo the folder on disk comes first")

	awayFromRepo(t)
	assert.Equal(t, EmbeddedPrefix+"cora", mustLocate(t, "cora"))
	for _, name := range []string{"cora", "embedded:cora"} {
		t.Run(name, func(t *testing.T) {
			d, err := Load(name)
			require.NoError(t, err)
			assert.Equal(t, "cora", d.Name)
			assert.Equal(t, 2708, d.Graph.N())
			assert.Equal(t, 5278, d.Graph.NumUndirectedEdges())
			assert.Equal(t, 7, d.NumClasses)
			assert.Equal(t, []int{140, 500, 1000}, []int{len(d.Train), len(d.Val), len(d.Test)})
			assert.Equal(t, onDisk.Graph.Indptr, d.Graph.Indptr)
			assert.Equal(t, onDisk.Graph.Indices, d.Graph.Indices)
			assert.Equal(t, onDisk.Labels, d.Labels)
			assert.Equal(t, onDisk.Features.NNZ(), d.Features.NNZ())
		})
	}
	npz, err := Load(filepath.Join("cora", "cora.npz"))
	require.NoError(t, err)
	assert.Equal(t, 2708, npz.Graph.N())
	assert.Equal(t, "cora", npz.Name)
}

// A name found nowhere lists every place looked, the built-in copies last;
// an unknown embedded: name, a TU load of cora and paths escaping the
// embedded folder fail with ErrNotFound or ErrFormat, not a panic.
func TestEmbeddedLookupErrors(t *testing.T) {
	awayFromRepo(t)
	_, err := Load("citeseer")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "the copies built into qgtc (cora)")
	for _, name := range []string{"embedded:citeseer", "embedded:../cora", "embedded:", "cora/../../cora", "cora/nothing.npz"} {
		_, err := Load(name)
		assert.ErrorIs(t, err, ErrNotFound, name)
	}
	_, err = LoadGraphSet("cora")
	assert.ErrorIs(t, err, ErrFormat)
}

// A folder in QGTC_DATA still wins over the built-in copy.
func TestQGTCDataBeatsEmbedded(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("..", "testdata", "fixtures", "tiny-edges.txt"))
	require.NoError(t, err)
	awayFromRepo(t)
	dir := os.Getenv("QGTC_DATA")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cora"), 0o755))
	b, err := os.ReadFile(fixture)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cora", "edges.txt"), b, 0o644))
	d, err := Load("cora")
	require.NoError(t, err)
	assert.Equal(t, 6, d.Graph.N())
}

func mustLocate(t *testing.T, name string) string {
	t.Helper()
	p, err := Locate(name)
	require.NoError(t, err)
	return p
}
