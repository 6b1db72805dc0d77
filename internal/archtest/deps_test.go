package archtest

import (
	"go/build"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/qgtc/qgtc/"

// moduleRoot is two folders up from this file.
func moduleRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// deps returns the module packages pkg imports, directly or not, from its
// non-test Go files (all build tags' files are read).
func deps(t *testing.T, root, pkg string) []string {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		ctx := build.Default
		ctx.UseAllFiles = false
		bp, err := ctx.ImportDir(filepath.Join(root, p), 0)
		require.NoError(t, err, p)
		for _, imp := range bp.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok && !seen[rel] {
				seen[rel] = true
				walk(rel)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestDependencyDirection enforces the layering: each package may reach
// only the module packages listed for it.
func TestDependencyDirection(t *testing.T) {
	root := moduleRoot(t)
	allowed := map[string][]string{
		"bittensor":   {"internal/par"},
		"quantize":    {"bittensor", "internal/par"},
		"bmm":         {"bittensor", "internal/par", "quantize"},
		"bmm/bmmtest": {"bittensor", "bmm", "internal/par", "quantize"},
		// cpu shares the templates' CSR type so one graph feeds both paths.
		"cpu":                  {"bittensor", "bmm", "internal/par", "quantize", "templates"},
		"templates":            {"internal/par"},
		"tcu":                  {"bittensor", "bmm", "internal/par", "quantize", "templates"}, // fp kernels: the templates' spec and CSR
		"datasets":             {},
		"subgraph":             {"bittensor", "datasets", "internal/par"},
		"internal/nn":          {"internal/par", "templates"},
		"internal/plot":        {},
		"internal/cputime":     {},
		"internal/par":         {},
		"internal/atomicfile":  {},
		"internal/progress":    {},
		"internal/safetensors": {},
		"internal/learn":       {},
		"internal/npy":         {},
		"layers/fp":            {"bittensor", "bmm", "datasets", "internal/learn", "internal/nn", "internal/par", "internal/safetensors", "quantize", "subgraph", "templates"},
		// gpufp puts the fp models on the GPU: the one package that joins them.
		"gpufp": {"bittensor", "bmm", "datasets", "internal/learn", "internal/nn", "internal/par", "internal/safetensors", "layers/fp", "quantize", "subgraph", "tcu", "templates"},
		// layers runs its plans on whatever bmm.Backend its caller compiles
		// them for: it reaches neither backend (nor the fp32 templates).
		"layers": {"bittensor", "bmm", "datasets", "internal/learn", "internal/par", "internal/safetensors", "quantize", "subgraph"},
		// pipeline runs on the backend its caller passes in: no backend, no
		// templates, even through layers.
		"pipeline": {"bittensor", "bmm", "datasets", "internal/atomicfile", "internal/learn", "internal/npy", "internal/par",
			"internal/progress", "internal/safetensors", "layers", "quantize", "subgraph"},
	}
	for pkg, ok := range allowed {
		t.Run(pkg, func(t *testing.T) {
			okSet := map[string]bool{}
			for _, p := range ok {
				okSet[p] = true
			}
			for _, d := range deps(t, root, pkg) {
				assert.True(t, okSet[d], "%s must not depend on %s", pkg, d)
			}
		})
	}
}

// TestPipelineBackendFree: the pipeline imports neither backend itself;
// the CLI (or any caller) picks the device and passes its backend in.
func TestPipelineBackendFree(t *testing.T) {
	ctx := build.Default
	bp, err := ctx.ImportDir(filepath.Join(moduleRoot(t), "pipeline"), 0)
	require.NoError(t, err)
	for _, imp := range bp.Imports {
		assert.NotContains(t, []string{module + "cpu", module + "tcu"}, imp, "pipeline must not import %s", imp)
	}
}
