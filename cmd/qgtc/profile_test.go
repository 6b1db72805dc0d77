package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProfilesFromEnv: QGTC_CPUPROFILE and QGTC_TRACE write a profile and
// a trace of the command; a path that cannot be written fails it with one
// line naming the variable.
func TestProfilesFromEnv(t *testing.T) {
	dir := t.TempDir()
	prof, tr := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "run.trace")
	t.Setenv("QGTC_CPUPROFILE", prof)
	t.Setenv("QGTC_TRACE", tr)
	code, _, stderr := runCLI("data", "list")
	require.Equal(t, 0, code, stderr)
	for _, p := range []string{prof, tr} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, st.Size(), p)
	}
	t.Setenv("QGTC_TRACE", filepath.Join(dir, "no", "such", "dir", "run.trace"))
	code, _, stderr = runCLI("data", "list")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "QGTC_TRACE")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, stderr)
}
