package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crafted files of issue #17 (subgraph's fuzz corpora, crafted-*)
// through the CLI, each in a child process limited to 4 GB of address
// space as `ulimit -v 4000000` would: one line on stderr, exit code 1, no
// Go panic or runtime "fatal error". The old loaders accepted most of
// these files, and infer then died with "fatal error: out of memory" on
// some of them. (How fast each one fails is measured, not asserted:
// bench/trust/crafted.sh.)

const craftedChildEnv = "QGTC_CRAFTED_CHILD" // args, \x1f-separated

// TestCraftedChild is the child of runLimited: it only runs when the
// parent sets craftedChildEnv, and leaves through syscall.Exit so that the
// testing package adds nothing to its output.
func TestCraftedChild(t *testing.T) {
	args := os.Getenv(craftedChildEnv)
	if args == "" {
		t.Skip("runs as runLimited's child process")
	}
	lim := syscall.Rlimit{Cur: 4_000_000 << 10, Max: 4_000_000 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		os.Stderr.WriteString("setrlimit: " + err.Error() + "\n")
		syscall.Exit(99)
	}
	syscall.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// runLimited runs the CLI with args in a child process limited to 4 GB of
// address space (`ulimit -v 4000000`), caching under cache, and returns its
// exit code and stderr.
func runLimited(t *testing.T, cache string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCraftedChild$")
	cmd.Env = append(os.Environ(), craftedChildEnv+"="+strings.Join(args, "\x1f"), "QGTC_CACHE="+cache)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

// readCorpusFile decodes a one-[]byte fuzz corpus file.
func readCorpusFile(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "go test fuzz v1\n[]byte(")
	require.True(t, ok, path)
	v, err := strconv.Unquote(strings.TrimSuffix(s, ")"))
	require.NoError(t, err, path)
	return []byte(v)
}

func TestCraftedCLI(t *testing.T) {
	if os.Getenv(craftedChildEnv) != "" {
		t.Skip("child process")
	}
	corpus := filepath.Join("..", "..", "subgraph", "testdata", "fuzz")
	ext := map[string]string{"FuzzNPZ": ".npz", "FuzzMAT": ".mat", "FuzzEdgeList": ".txt"}
	var files []string
	for target := range ext {
		m, err := filepath.Glob(filepath.Join(corpus, target, "crafted-*"))
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.GreaterOrEqual(t, len(files), 10, "crafted files in %s", corpus)
	dir := t.TempDir()
	cache := t.TempDir()
	for _, p := range files {
		name := filepath.Base(p) + ext[filepath.Base(filepath.Dir(p))]
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, readCorpusFile(t, p), 0o644))
		for _, args := range [][]string{
			{"data", "info", path, "--quiet"},
			{"infer", "--dataset", path, "--quiet"},
			{"train", "--dataset", path, "--epochs", "1", "--quiet"},
		} {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				code, stderr := runLimited(t, cache, args...)
				msg := strings.TrimSuffix(stderr, "\n")
				assert.Equal(t, 1, code, "exit code; stderr:\n%s", msg)
				assert.NotContains(t, msg, "\n", "want one line on stderr")
				assert.True(t, strings.HasPrefix(msg, "qgtc "+args[0]+": "), "stderr: %s", msg)
				assert.NotContains(t, msg, "goroutine")
				assert.Less(t, len(msg), 400, "stderr: %s", msg)
			})
		}
	}
}
