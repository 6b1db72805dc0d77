package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	code, _, errs = runCLI("data", "synth", "--model", "rmat", "--scale", "99", "-o", filepath.Join(dir, "x.npz"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "scale 99")
}
