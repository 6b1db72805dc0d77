package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/subgraph"
)

func TestPartitionCommand(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cora.part")
	code, out, errs := runCLI("partition", "--quiet", "--dataset", "cora", "--parts", "20", "--seed", "3", "--cache", cache, "--batch", "4", "--json")
	require.Equal(t, 0, code, errs)
	var rep partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 20, rep.Parts)
	assert.Equal(t, "computed", rep.Source)
	assert.Equal(t, int64(5278), rep.Edges)
	assert.InDelta(t, float64(rep.Edges-rep.EdgeCut)/float64(rep.Edges), rep.KeptFraction, 1e-12)
	assert.LessOrEqual(t, rep.Imbalance, 1.03+20.0/2708)
	require.NotNil(t, rep.Batching)
	assert.Equal(t, 5, rep.Batching.Batches)
	assert.Equal(t, 5, rep.Batching.AdjacencyChecks)

	// The cache is reused; another K is a clear error.
	code, out, errs = runCLI("partition", "--quiet", "--dataset", "cora", "--parts", "20", "--seed", "3", "--cache", cache, "--json")
	require.Equal(t, 0, code, errs)
	var again partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &again))
	assert.Equal(t, "cache", again.Source)
	assert.Equal(t, rep.EdgeCut, again.EdgeCut)
	code, _, errs = runCLI("partition", "--quiet", "--dataset", "cora", "--parts", "21", "--seed", "3", "--cache", cache)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "does not match")

	// METIS export and evaluation of a partition file.
	graph := filepath.Join(dir, "cora.graph")
	code, _, errs = runCLI("partition", "--quiet", "--dataset", "cora", "--write-metis", graph)
	require.Equal(t, 0, code, errs)
	parts := filepath.Join(dir, "cora.graph.part.2")
	f, err := os.Create(parts)
	require.NoError(t, err)
	for v := 0; v < 2708; v++ {
		fmt.Fprintln(f, v%2)
	}
	require.NoError(t, f.Close())
	code, out, errs = runCLI("partition", "--quiet", "--dataset", graph, "--metis-graph", "--parts", "2", "--eval", parts, "--json")
	require.Equal(t, 0, code, errs)
	var ev partitionReport
	require.NoError(t, json.Unmarshal([]byte(out), &ev))
	assert.Equal(t, int64(5278), ev.Edges)
	assert.Equal(t, 1.0, ev.Imbalance)
}

func TestPartitionCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"partition"}, 2},
		{[]string{"partition", "--dataset", "cora"}, 2},
		{[]string{"partition", "--dataset", "cora", "--parts", "0"}, 2},
		{[]string{"partition", "--dataset", "cora", "--parts", "99999"}, 1},
		{[]string{"partition", "--dataset", "nonexistent-dataset", "--parts", "4"}, 1},
		{[]string{"partition", "--dataset", "cora", "--parts", "4", "--eval", "/nonexistent/file"}, 1},
	} {
		t.Run(fmt.Sprint(tc.args[1:]), func(t *testing.T) {
			code, _, errs := runCLI(append(tc.args, "--quiet")...)
			assert.Equal(t, tc.code, code, errs)
			assert.NotContains(t, errs, "panic")
			assert.NotEmpty(t, errs)
		})
	}
}

// TestPartitionFlagErrors: a flag out of range is one usage line and exit
// code 2, before any data is read (the dataset named does not exist).
func TestPartitionFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--parts", "-3"}, "--parts -3"},
		{[]string{"--parts", "4", "--threads", "-1"}, "--threads -1"},
		{[]string{"--parts", "4", "--batch", "-1"}, "--batch -1"},
		{[]string{"--parts", "4", "--batch", "5"}, "--batch 5 is more than --parts 4"},
		{[]string{"--write-metis", "g.graph", "--batch", "2"}, "--batch needs --parts"},
		{[]string{"--parts", "4", "--imbalance", "0.5"}, "--imbalance 0.5"},
		{[]string{"--parts", "4", "--imbalance", "101"}, "--imbalance 101"},
		{[]string{"--parts", "4", "--imbalance", "NaN"}, "--imbalance NaN"},
		{[]string{"--parts", "4", "--feature-bits", "0"}, "--feature-bits 0"},
		{[]string{"--parts", "4", "--feature-bits", "40"}, "--feature-bits 40"},
		{[]string{"--parts", "4", "--eval", "p.txt", "--cache", "c.part"}, "--eval and --cache"},
		{[]string{"--parts", "four"}, "--parts"},
		{[]string{"--parts", "4", "--lcc=no"}, `--lcc "no": want true, false or auto`},
		{[]string{"--parts", "4", "--lcc", "false"}, `unexpected argument "false": --lcc takes its value after '='`},
		{[]string{"--parts", "4", "--metis-graph", "--lcc"}, "--lcc applies to datasets, not to a METIS graph file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"partition", "--dataset", "no-such-dataset"}, tc.args...)
			code, out, errs := runCLI(args...)
			assert.Equal(t, 2, code, errs)
			assert.Empty(t, out)
			assert.Contains(t, errs, tc.want)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
		})
	}
}

// TestPartitionChecksOutputsFirst: an output that cannot be written stops
// the command before it loads or partitions anything.
func TestPartitionChecksOutputsFirst(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "x.part")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"out folder missing", []string{"--out", missing}, missing},
		{"out is a folder", []string{"--out", dir}, dir + ": it is a folder"},
		{"cache folder missing", []string{"--cache", missing}, missing},
		{"write-metis folder missing", []string{"--write-metis", missing}, missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"--dataset", "coauthor_physics", "--parts", "64"}, tc.args...)
			err := partitionCmd(args, &out, &errs)
			require.ErrorIs(t, err, atomicfile.ErrNotWritable)
			assert.Contains(t, err.Error(), tc.want)
			assert.Empty(t, errs.String(), "no progress: nothing was loaded or partitioned")
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing left behind")
	code, _, errs := runCLI("partition", "--dataset", "cora", "--parts", "4", "--out", missing)
	assert.Equal(t, 1, code)
	assert.Equal(t, "qgtc partition: cannot write "+missing+": folder "+filepath.Dir(missing)+" does not exist\n", errs)
}

// TestPartitionOutputFiles: every file the command writes is 0644, and no
// temporary file stays next to it.
func TestPartitionOutputFiles(t *testing.T) {
	dir := t.TempDir()
	out, cache, graph := filepath.Join(dir, "out.part"), filepath.Join(dir, "cache.part"), filepath.Join(dir, "cora.graph")
	code, _, errs := runCLI("partition", "--dataset", "cora", "--parts", "8", "--out", out, "--cache", cache, "--write-metis", graph, "--quiet")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs, "--quiet")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), e.Name())
	}
	assert.ElementsMatch(t, []string{"out.part", "cache.part", "cora.graph"}, names)
	a, err := os.ReadFile(out)
	require.NoError(t, err)
	b, err := os.ReadFile(cache)
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

// TestWriteOutputFailures: a write that fails part-way, or a rename that
// fails, leaves no temporary file and the destination as it was.
func TestWriteOutputFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.graph")
	require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o644))
	boom := errors.New("disk full")
	err := writeOutput(nil, path, func(w io.Writer) error {
		fmt.Fprint(w, strings.Repeat("x", 1<<20))
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), path)
	busy := filepath.Join(dir, "busy")
	require.NoError(t, os.MkdirAll(filepath.Join(busy, "x"), 0o755))
	require.Error(t, writeOutput(nil, busy, func(w io.Writer) error { _, err := w.Write([]byte("data")); return err }))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"g.graph", "busy"}, names)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(got))
}

// TestPartitionProgress: off a terminal, progress comes as plain lines,
// one per phase at least; --quiet silences them.
func TestPartitionProgress(t *testing.T) {
	defer func(d time.Duration) { progress.Interval = d }(progress.Interval)
	progress.Interval = time.Millisecond
	var out, errs bytes.Buffer
	args := []string{"--dataset", "coauthor_physics", "--parts", "256", "--batch", "8", "--seed", "1"}
	require.NoError(t, partitionCmd(args, &out, &errs))
	lines := strings.Split(strings.TrimSpace(errs.String()), "\n")
	count := map[string]int{}
	for _, l := range lines {
		assert.NotContains(t, l, "\r", "no redraws off a terminal")
		for _, phase := range []string{"loading", subgraph.PhaseCoarsen, subgraph.PhaseInitial, subgraph.PhaseRefine, "batching"} {
			if strings.HasPrefix(l, "partition: "+phase) {
				count[phase]++
			}
		}
	}
	for _, phase := range []string{"loading", subgraph.PhaseCoarsen, subgraph.PhaseInitial, subgraph.PhaseRefine, "batching"} {
		assert.NotZero(t, count[phase], "no %q line in\n%s", phase, errs.String())
	}
	assert.Greater(t, count[subgraph.PhaseRefine], 1, "periodic lines within a phase:\n%s", errs.String())
	assert.Contains(t, errs.String(), "partition: refinement, 100%")

	errs.Reset()
	out.Reset()
	require.NoError(t, partitionCmd(append(args, "--quiet"), &out, &errs))
	assert.Empty(t, errs.String())
}

// TestPartitionSignalRemovesTemp interrupts a child process while it writes
// --out: the temporary file is removed and no output appears.
func TestPartitionSignalRemovesTemp(t *testing.T) {
	if dir := os.Getenv("QGTC_TEST_SIGNAL_DIR"); dir != "" {
		err := partitionCmd([]string{"--dataset", "cora", "--parts", "8", "--out", filepath.Join(dir, "cora.part")}, io.Discard, interruptOnWrite{})
		t.Fatalf("not interrupted: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPartitionSignalRemovesTemp$")
	cmd.Env = append(os.Environ(), "QGTC_TEST_SIGNAL_DIR="+dir)
	outb, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, string(outb))
	assert.Equal(t, 128+int(syscall.SIGINT), exit.ExitCode(), string(outb))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// interruptOnWrite is a progress writer that interrupts its own process
// once the output file is being written, then waits to be stopped.
type interruptOnWrite struct{}

func (interruptOnWrite) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("partition: writing")) {
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(time.Minute)
	}
	return len(b), nil
}
