package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binary as `go install` builds it, run from an empty folder outside
// the repository.
func TestInstalledBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to build the binary")
	}
	bin := filepath.Join(t.TempDir(), "qgtc")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	t.Run("outside repo", func(t *testing.T) { testOutsideRepo(t, bin) })
	t.Run("quiet", func(t *testing.T) { testQuiet(t, bin) })
	t.Run("info without driver", func(t *testing.T) { testInfoNoDriver(t, bin) })
}

// sandbox returns a function that runs bin from an empty folder (also
// returned) with HOME, QGTC_DATA and the caches in fresh temporary folders
// and no CUDA driver (QGTC_CUDA_DRIVER names a missing file).
func sandbox(t *testing.T, bin string) (run func(args ...string) (code int, stdout, stderr string), cwd string) {
	cwd, home, data, cache := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "QGTC_DATA=" + data,
		"QGTC_CACHE=" + cache, "QGTC_CACHE_DIR=" + filepath.Join(cache, "kernels"),
		"QGTC_CUDA_DRIVER=" + filepath.Join(home, "libcuda.so.1"), "PATH=" + os.Getenv("PATH")}
	return func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = cwd, env, &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, o.String(), e.String()
	}, cwd
}

// A go-installed qgtc finds cora from any folder: it is built in.
func testOutsideRepo(t *testing.T, bin string) {
	qgtc, cwd := sandbox(t, bin)

	code, out, errs := qgtc("data", "info", "cora")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{"nodes       2708", "5278 undirected", "140 train / 500 val / 1000 test (shipped)"} {
		assert.Contains(t, out, want)
	}
	code, out, errs = qgtc("data", "list")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "(embedded:cora)")

	code, out, errs = qgtc("infer", "--dataset", "cora", "--bits", "4", "--epochs", "2", "--qat-epochs", "0", "--quiet")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "accuracy")
	assert.Empty(t, errs, "--quiet: nothing on stderr")

	code, _, errs = qgtc("data", "info", "citeseer")
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "the copies built into qgtc (cora)")

	ents, err := os.ReadDir(cwd)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing written to the working folder")
}

// Progress goes to stderr as plain lines off a terminal; --quiet silences
// it and leaves stdout as it was.
func testQuiet(t *testing.T, bin string) {
	qgtc, _ := sandbox(t, bin)
	for _, args := range [][]string{
		{"bench", "bmm", "--n", "64", "--d", "8", "--bits", "1,2", "--time", "0s", "--no-fp32"},
		{"bmm", "demo", "--n", "64", "--d", "8"},
		{"info"},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, out, errs := qgtc(args...)
			require.Equal(t, 0, code, errs)
			assert.NotEmpty(t, out)
			assert.NotEmpty(t, errs, "progress lines without --quiet")
			code, quietOut, errs := qgtc(append(args, "--quiet")...)
			require.Equal(t, 0, code, errs)
			assert.Empty(t, errs, "--quiet")
			assert.Equal(t, len(strings.Split(out, "\n")), len(strings.Split(quietOut, "\n")))
		})
	}
}

// Without a CUDA driver, `qgtc info` says why in one line that names the
// library once and "unavailable" once.
func testInfoNoDriver(t *testing.T, bin string) {
	qgtc, _ := sandbox(t, bin)
	code, out, errs := qgtc("info", "--quiet")
	require.Equal(t, 0, code, errs)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "unavailable") {
			line = l
		}
	}
	require.NotEmpty(t, line, out)
	assert.Equal(t, 1, strings.Count(line, "libcuda.so.1"), line)
	assert.Equal(t, 1, strings.Count(line, "unavailable"), line)
	assert.Contains(t, line, "no CUDA driver")
}
