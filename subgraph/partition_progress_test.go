package subgraph

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartitionProgress checks that every multilevel phase reports, that
// each phase's count only grows and ends at its total, and that watching
// changes nothing.
func TestPartitionProgress(t *testing.T) {
	g, err := RMAT(14, 8, 0.57, 0.19, 0.19, 5)
	require.NoError(t, err)
	for _, threads := range []int{1, 2} {
		type call struct {
			phase       string
			done, total int
		}
		var calls []call
		opt := PartitionOptions{Seed: 2, Threads: threads, Progress: func(phase string, done, total int) {
			calls = append(calls, call{phase, done, total})
		}}
		p, err := Partition(g, 64, opt)
		require.NoError(t, err)
		opt.Progress = nil
		plain, err := Partition(g, 64, opt)
		require.NoError(t, err)
		assert.Equal(t, plain.Parts, p.Parts, "threads %d: progress changed the partition", threads)

		require.NotEmpty(t, calls)
		assert.Less(t, len(calls), 1000, "a modest rate")
		last := map[string]call{}
		for _, c := range calls {
			assert.LessOrEqual(t, c.done, c.total, c)
			assert.GreaterOrEqual(t, c.done, 0, c)
			if prev, ok := last[c.phase]; ok && prev.total == c.total {
				assert.GreaterOrEqual(t, c.done, prev.done, "%v after %v", c, prev)
			}
			last[c.phase] = c
		}
		for _, phase := range []string{PhaseCoarsen, PhaseInitial, PhaseRefine} {
			c, ok := last[phase]
			if assert.True(t, ok, "threads %d: no %q", threads, phase) {
				assert.Equal(t, c.total, c.done, "threads %d: %q ends short", threads, phase)
			}
		}
		assert.Equal(t, 64, last[PhaseInitial].total)
	}
}

// TestSavePartitionFile checks the saved file's mode (0644, like every
// other output, not the temporary file's 0600) and that no temporary file
// is left behind, whether the save works or fails.
func TestSavePartitionFile(t *testing.T) {
	g := mustGraph(t, 40, []int32{0, 1, 2, 3, 10, 20}, []int32{1, 2, 3, 4, 11, 30})
	p, err := Partition(g, 4, PartitionOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "g.part")
	require.NoError(t, SavePartition(path, g, p, PartitionOptions{}))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	_, err = LoadPartition(path, g, 4, PartitionOptions{})
	require.NoError(t, err)

	// The rename fails (a folder is in the way), then the content is bad.
	busy := filepath.Join(dir, "busy")
	require.NoError(t, os.MkdirAll(filepath.Join(busy, "x"), 0o755))
	assert.Error(t, SavePartition(busy, g, p, PartitionOptions{}))
	bad := &Partitioning{K: 4, Parts: p.Parts[:10]}
	assert.ErrorIs(t, SavePartition(filepath.Join(dir, "bad.part"), g, bad, PartitionOptions{}), ErrPartition)
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range names {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, []string{"g.part", "busy"}, left)
}
