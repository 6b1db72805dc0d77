package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/childtest"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDataInfoCora(t *testing.T) {
	code, out, errs := runCLI("data", "info", "cora")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"nodes       2708", "5278 undirected", "features    1433", "classes     7", "140 train / 500 val / 1000 test (shipped)", "min 1, mean 3.90, median 3, max 168"} {
		assert.Contains(t, out, want)
	}
	code, out, errs = runCLI("data", "info", "--json", "citeseer")
	require.Equal(t, 0, code, errs)
	var s dataSummary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, 3327, s.Nodes)
	assert.Equal(t, 4552, s.UndirectedEdges)
	assert.Equal(t, 15, s.Unlabelled)
	assert.Equal(t, 120, s.Train)
}

func TestDataList(t *testing.T) {
	code, out, _ := runCLI("data", "list")
	require.Equal(t, 0, code)
	for _, name := range []string{"cora", "citeseer", "pubmed_partial", "amazon_computers", "amazon_photo", "coauthor_cs", "coauthor_physics", "ppi_node2vec", "blogcatalog", "proteins"} {
		assert.Contains(t, out, name)
	}
	for _, goName := range []string{"RandomSplit", "GraphSet"} {
		assert.NotContains(t, out, goName, "the list speaks the user's words, not the Go API's")
	}
}

func TestDataBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.npz")
	require.NoError(t, os.WriteFile(bad, []byte("not a zip"), 0o644))
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"data"}, 2, "missing data subcommand"},
		{[]string{"data", "frob"}, 2, "unknown data subcommand"},
		{[]string{"data", "info"}, 2, "one dataset name or path"},
		{[]string{"data", "info", "no_such_set"}, 1, `dataset "no_such_set" not found; looked in`},
		{[]string{"data", "info", bad}, 1, "bad.npz: not a zip archive"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			code, _, errs := runCLI(tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errs, tt.msg)
		})
	}
}

func TestDataSynthRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args   []string
		file   string
		labels bool
	}{
		{[]string{"--model", "rmat", "--scale", "8", "--edge-factor", "4"}, "r.npz", false},
		{[]string{"--model", "rmat", "--scale", "8", "--edge-factor", "4"}, "r.txt", false},
		{[]string{"--model", "planted", "--nodes", "300", "--communities", "3", "--avg-degree", "6"}, "p.npz", true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			code, out, errs := runCLI(append([]string{"data", "synth", "-o", p}, tt.args...)...)
			require.Equal(t, 0, code, errs)
			assert.Contains(t, out, "wrote "+p)
			code, out, errs = runCLI("data", "info", "--json", p)
			require.Equal(t, 0, code, errs)
			var s dataSummary
			require.NoError(t, json.Unmarshal([]byte(out), &s))
			if tt.labels {
				assert.Equal(t, 300, s.Nodes)
				assert.Equal(t, 3, s.Classes)
			} else {
				assert.Equal(t, 256, s.Nodes)
			}
			assert.Positive(t, s.UndirectedEdges)
		})
	}
	code, _, errs := runCLI("data", "synth", "-o", filepath.Join(dir, "x.bin"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "want a .npz")
	code, _, errs = runCLI("data", "synth", "--model", "planted", "--features", "8", "-o", filepath.Join(dir, "f.txt"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "want --model planted and a .npz output")
}

// TestDataSynthFeatures: a planted graph with features loads back with
// them and with the classes asked for, and the same flags write the same
// file.
func TestDataSynthFeatures(t *testing.T) {
	dir := t.TempDir()
	args := []string{"data", "synth", "--quiet", "--model", "planted", "--nodes", "3000", "--communities", "12",
		"--features", "40", "--feature-nnz", "5", "--classes", "4"}
	for _, f := range []string{"a.npz", "b.npz"} {
		code, out, errs := runCLI(append(args, "-o", filepath.Join(dir, f))...)
		require.Equal(t, 0, code, errs)
		assert.Contains(t, out, "4 class labels, 40 features (5 per node)")
	}
	a, err := os.ReadFile(filepath.Join(dir, "a.npz"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "b.npz"))
	require.NoError(t, err)
	assert.Equal(t, a, b, "seeded: the same file")
	code, out, errs := runCLI("data", "info", "--json", filepath.Join(dir, "a.npz"))
	require.Equal(t, 0, code, errs)
	var s dataSummary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, 3000, s.Nodes)
	assert.Equal(t, 4, s.Classes)
	assert.Equal(t, 40, s.Features)
	assert.Equal(t, 3000*5, s.FeatureNonzeros)
}

// oneLine asserts that the CLI printed exactly one line on stderr.
func oneLine(t *testing.T, errs string) {
	t.Helper()
	assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
}

func TestDataSynthBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "g.npz")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"--scale", "99"}, "--scale 99: want 1..30"},
		{[]string{"--scale", "0"}, "--scale 0: want 1..30"},
		{[]string{"--edge-factor", "0"}, "--edge-factor 0: want at least 1"},
		{[]string{"--scale", "26", "--edge-factor", "32"}, "--scale 26 --edge-factor 32 draws 2147483648 edges"},
		{[]string{"--a", "-0.1"}, "--a -0.1: want a probability in [0, 1]"},
		{[]string{"--b", "NaN"}, "--b NaN: want a probability"},
		{[]string{"--a", "0.6", "--b", "0.3", "--c", "0.3"}, "sum to 1.2, more than 1"},
		{[]string{"--nodes", "100"}, "--nodes does not apply to --model rmat"},
		{[]string{"--model", "planted", "--scale", "3"}, "--scale does not apply to --model planted"},
		{[]string{"--model", "planted", "--nodes", "1"}, "--nodes 1: want 2..2^30"},
		{[]string{"--model", "planted", "--communities", "0"}, "--communities 0: want 1..10000"},
		{[]string{"--model", "planted", "--nodes", "5", "--communities", "6"}, "--communities 6: want 1..5"},
		{[]string{"--model", "planted", "--avg-degree", "-2"}, "--avg-degree -2: want more than 0"},
		{[]string{"--model", "planted", "--avg-degree", "+Inf"}, "--avg-degree +Inf"},
		{[]string{"--model", "planted", "--mixing", "1.5"}, "--mixing 1.5: want a fraction in [0, 1]"},
		{[]string{"--model", "planted", "--communities", "1"}, "--mixing 0.1 with one community"},
		{[]string{"--model", "sbm"}, `--model "sbm": want rmat or planted`},
		{[]string{"--features", "16"}, "--features, --feature-nnz and --classes want --model planted"},
		{[]string{"--model", "planted", "--classes", "3"}, "--feature-nnz and --classes want --features"},
		{[]string{"--model", "planted", "--features", "-1"}, "--features -1: want 1.."},
		{[]string{"--model", "planted", "--features", "8", "--feature-nnz", "9"}, "--feature-nnz 9: want 1..8"},
		{[]string{"--model", "planted", "--features", "8", "--feature-nnz", "4", "--classes", "11"}, "--classes 11: want 0..10"},
		{[]string{"--max-memory", "lots"}, `--max-memory "lots": want a positive size`},
		{[]string{"--max-memory", "-1G"}, `--max-memory "-1G"`},
		{[]string{"--scale", "16", "--max-memory", "1M"}, "--scale 16 --edge-factor 16 needs about"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			code, _, errs := runCLI(append([]string{"data", "synth", "--quiet", "-o", out}, tt.args...)...)
			assert.Equal(t, 2, code)
			assert.Contains(t, errs, tt.msg)
			oneLine(t, errs)
			assert.NoFileExists(t, out)
		})
	}
}

// TestDataSynthMemoryCap: scale 26 at edge factor 16 passed the old 2^30
// edge check and died in the runtime; the estimate now refuses it up front
// without allocating.
func TestDataSynthMemoryCap(t *testing.T) {
	defer func(f func() (int64, string)) { machineMemory = f }(machineMemory)
	machineMemory = func() (int64, string) { return 16 << 30, "available on this machine" }
	dir := t.TempDir()
	for _, ext := range []string{".npz", ".txt"} {
		t.Run(ext, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code, _, errs := runCLI("data", "synth", "--scale", "26", "--edge-factor", "16", "-o", filepath.Join(dir, "big"+ext))
			runtime.ReadMemStats(&after)
			assert.Equal(t, 2, code)
			assert.Contains(t, errs, "--scale 26 --edge-factor 16 needs about")
			assert.Contains(t, errs, "more than the 16.0 GiB available on this machine")
			oneLine(t, errs)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "refused before any large allocation")
		})
	}
	assert.Empty(t, entries(t, dir))
	// An explicit cap above the need lets a small graph through.
	code, _, errs := runCLI("data", "synth", "--quiet", "--scale", "8", "--max-memory", "1GiB", "-o", filepath.Join(dir, "s.txt"))
	assert.Equal(t, 0, code, errs)
}

// TestDataSynthChecksOutFirst: an -o that cannot be written fails before
// the graph is generated (the old code generated it, then failed to
// create the file).
func TestDataSynthChecksOutFirst(t *testing.T) {
	defer func(w io.Writer) { dataStderr = w }(dataStderr)
	var progressOut bytes.Buffer
	dataStderr = &progressOut
	dir := t.TempDir()
	folder := filepath.Join(dir, "g.npz") // a folder where the file would go
	require.NoError(t, os.Mkdir(folder, 0o755))
	for _, out := range []string{filepath.Join(dir, "missing", "g.txt"), folder} {
		t.Run(out, func(t *testing.T) {
			progressOut.Reset()
			code, stdout, errs := runCLI("data", "synth", "--scale", "20", "-o", out)
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, "--out: cannot write "+out)
			oneLine(t, errs)
			assert.Empty(t, stdout)
			assert.Empty(t, progressOut.String(), "nothing generated")
		})
	}
}

// TestDataSynthAddressLimit: under `ulimit -v 4000000` the machine's free
// memory is not what data synth may use. Scale 26 at edge factor 16 passed
// the check there and died in the runtime; it is refused naming the limit,
// and a graph that fits is still written.
func TestDataSynthAddressLimit(t *testing.T) {
	if os.Getenv(craftedChildEnv) != "" {
		t.Skip("child process")
	}
	dir := t.TempDir()
	code, errs := runLimited(t, t.TempDir(), "data", "synth", "--quiet", "--scale", "26", "--edge-factor", "16", "-o", filepath.Join(dir, "big.txt"))
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "--scale 26 --edge-factor 16 needs about")
	assert.Contains(t, errs, "usable under this process's address-space limit (ulimit -v;")
	oneLine(t, errs)
	code, errs = runLimited(t, t.TempDir(), "data", "synth", "--quiet", "--scale", "12", "-o", filepath.Join(dir, "s.npz"))
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, []string{"s.npz"}, entries(t, dir))
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1000": 1000, "512M": 512 << 20, "8GiB": 8 << 30, "1.5G": 3 << 29, "2k": 2048, "1TB": 1 << 40} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "G", "0", "-5M", "5X", "NaN"} {
		_, err := parseBytes(in)
		assert.Error(t, err, in)
	}
	assert.Equal(t, "46.5 GiB", fmtBytes(93<<29))
	assert.Equal(t, "512 B", fmtBytes(512))
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// failingWriter fails once more than n bytes have gone through.
type failingWriter struct {
	w io.Writer
	n int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full (injected)")
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// TestDataSynthWriteFails: a write that fails halfway leaves neither a
// truncated output nor a temporary file, and an older file at the path is
// untouched.
func TestDataSynthWriteFails(t *testing.T) {
	defer func(f func(io.Writer) io.Writer) { synthOut = f }(synthOut)
	synthOut = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 50000} }
	for _, name := range []string{"g.txt", "g.npz", "old.txt"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			if name == "old.txt" {
				require.NoError(t, os.WriteFile(path, []byte("0 1\n"), 0o644))
			}
			code, _, errs := runCLI("data", "synth", "--quiet", "--scale", "12", "-o", path)
			assert.Equal(t, 1, code)
			assert.Contains(t, errs, "writing "+path+": disk full (injected)")
			oneLine(t, errs)
			if name == "old.txt" {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "0 1\n", string(b))
				assert.Equal(t, []string{name}, entries(t, dir))
			} else {
				assert.Empty(t, entries(t, dir))
			}
		})
	}
}

// slowWriter sleeps after every write so that a signal lands mid-write.
type slowWriter struct{ w io.Writer }

func (s slowWriter) Write(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	return s.w.Write(p)
}

// TestDataSynthInterrupted runs data synth in a child process, interrupts
// it while it writes, and finds neither the output nor a temporary file.
func TestDataSynthInterrupted(t *testing.T) {
	if path := os.Getenv("QGTC_SYNTH_CHILD"); path != "" {
		synthOut = func(w io.Writer) io.Writer { return slowWriter{w} }
		os.Exit(run([]string{"data", "synth", "--quiet", "--scale", "12", "-o", path}, io.Discard, os.Stderr))
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT on windows")
	}
	for _, name := range []string{"g.txt", "g.npz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestDataSynthInterrupted$")
			cmd.Env = append(os.Environ(), "QGTC_SYNTH_CHILD="+filepath.Join(dir, name))
			require.NoError(t, cmd.Start())
			childtest.WaitWriting(t, dir) // the temporary file has bytes in it: mid-write
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, 130, exit.ExitCode())
			assert.Empty(t, entries(t, dir), "no output and no temporary file")
		})
	}
}

func TestPlainPercent(t *testing.T) {
	for x, want := range map[float64]string{1: "100.0", 0.123: "12.3", 0.0144: "1.44", 0.00144: "0.144", 1.23e-7: "0.0000123", 0: "0.0"} {
		assert.Equal(t, want, plainPercent(x), "%g", x)
	}
	code, out, errs := runCLI("data", "info", "cora")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "density     0.144% (2E / N(N-1))")
	assert.Contains(t, out, "1.27% dense")
	assert.NotContains(t, out, "e-0")
}

// TestDataInfoPlainWords: data info names what the user sees, not Go types.
func TestDataInfoPlainWords(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.npz")
	code, _, errs := runCLI("data", "synth", "--quiet", "--model", "planted", "--nodes", "300", "--communities", "3", "-o", p)
	require.Equal(t, 0, code, errs)
	for _, ds := range []string{p, "proteins"} {
		code, out, errs := runCLI("data", "info", ds)
		require.Equal(t, 0, code, errs)
		for _, goName := range []string{"RandomSplit", "GraphSet"} {
			assert.NotContains(t, out, goName)
		}
		if ds == p {
			assert.Contains(t, out, "a random split (20 train and 30 val per class, seed 0) gives 60 train / 90 val / 150 test")
		} else {
			assert.Contains(t, out, "one label per graph")
		}
	}
	code, out, _ := runCLI("data", "info", "--help")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "RandomSplit")
}

// TestDataSynthProgress: data synth and data info print plain progress
// lines on a writer that is not a terminal, none with --quiet.
func TestDataSynthProgress(t *testing.T) {
	defer func(w io.Writer) { dataStderr = w }(dataStderr)
	var buf bytes.Buffer
	dataStderr = &buf
	p := filepath.Join(t.TempDir(), "g.txt")
	code, _, errs := runCLI("data", "synth", "--scale", "8", "-o", p)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, buf.String(), "data synth: generating --scale 8 --edge-factor 16\n")
	assert.Contains(t, buf.String(), "data synth: writing "+p+": ")
	assert.NotContains(t, buf.String(), "\r")
	buf.Reset()
	code, _, errs = runCLI("data", "synth", "--quiet", "--scale", "8", "-o", p)
	require.Equal(t, 0, code, errs)
	assert.Empty(t, buf.String())

	code, _, errs = runCLI("data", "info", "cora")
	require.Equal(t, 0, code, errs)
	assert.Equal(t, "data info: loading cora\n", buf.String())
	buf.Reset()
	code, _, errs = runCLI("data", "info", "--quiet", "cora")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, buf.String())
}

// TestDataSynthPeakWithinEstimate runs data synth in a child process and
// checks that its peak resident memory stays under the need it refuses by.
func TestDataSynthPeakWithinEstimate(t *testing.T) {
	args := []string{"data", "synth", "--quiet", "--scale", "17"}
	if path := os.Getenv("QGTC_SYNTH_PEAK"); path != "" {
		os.Exit(run(append(args, "-o", path), io.Discard, os.Stderr))
	}
	if runtime.GOOS != "linux" {
		t.Skip("Maxrss is in KiB on linux only")
	}
	for _, name := range []string{"g.npz", "g.txt"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			cmd := exec.Command(os.Args[0], "-test.run=^TestDataSynthPeakWithinEstimate$")
			cmd.Env = append(os.Environ(), "QGTC_SYNTH_PEAK="+path)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
			fs := newFlags("data synth", io.Discard)
			size, _, err := synthPlan(fs, "rmat", 17, 16, 0.57, 0.19, 0.19, 0, 0, 0, 0)
			require.NoError(t, err)
			need := synthNeed(size, filepath.Ext(name), false)
			t.Logf("peak RSS %s, estimate %s", fmtBytes(rss), fmtBytes(need))
			assert.LessOrEqual(t, rss, need)
		})
	}
}
