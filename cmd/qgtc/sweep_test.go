package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/layers"
)

// TestSweepNorm runs a short GIN sweep with batch norm and checks the
// report and that the cached models carry the norm; then the same without.
func TestSweepNorm(t *testing.T) {
	for _, norm := range []string{layers.NormBatch, layers.NormNone} {
		t.Run(norm, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("QGTC_CACHE", dir)
			var out, errb bytes.Buffer
			args := []string{"sweep", "--dataset", "cora", "--model", "gin", "--norm", norm, "--bits", "4", "--epochs", "3",
				"--qat-epochs", "1", "--out", filepath.Join(dir, "sw"), "--json", "--quiet"}
			require.Equal(t, 0, run(args, &out, &errb), errb.String())
			var rep sweepReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
			require.Len(t, rep.Rows, 2)
			assert.Equal(t, 0, rep.Rows[0].Bits)
			assert.Equal(t, 4, rep.Rows[1].Bits)
			for _, name := range []string{"fp32", "a4w4"} {
				files, err := filepath.Glob(filepath.Join(dir, "models", "cora-gin-n"+norm+"-*-"+name+".safetensors"))
				require.NoError(t, err)
				require.Len(t, files, 1, name)
				f, err := os.Open(files[0])
				require.NoError(t, err)
				m, err := layers.ReadModel(f)
				f.Close()
				require.NoError(t, err)
				assert.Equal(t, norm, m.Norm(), name)
			}
		})
	}
}

func TestSweepNormErrors(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unknown norm", []string{"sweep", "--dataset", "cora", "--model", "gin", "--norm", "layer"}},
		{"gcn batch norm", []string{"sweep", "--dataset", "cora", "--model", "gcn", "--norm", "batch"}},
		{"unknown gin-aggr", []string{"sweep", "--dataset", "cora", "--model", "gin", "--gin-aggr", "max"}},
		{"gcn gin-aggr", []string{"sweep", "--dataset", "cora", "--model", "gcn", "--gin-aggr", "mean"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), tc.args[len(tc.args)-2])
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
		})
	}
}

// TestSweepChecksOutFirst: an --out that cannot be a folder fails at once,
// before any data is partitioned or any model trained.
func TestSweepChecksOutFirst(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	for _, out := range []string{blocker, filepath.Join(blocker, "sub")} {
		t.Run(out, func(t *testing.T) {
			var stdout, errb bytes.Buffer
			args := []string{"sweep", "--dataset", "cora", "--bits", "4", "--epochs", "2", "--qat-epochs", "1", "--out", out, "--quiet"}
			assert.Equal(t, 1, run(args, &stdout, &errb))
			assert.Contains(t, errb.String(), "cannot write "+out)
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
			assert.Empty(t, stdout.String())
			entries, err := os.ReadDir(cache)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing cached: nothing was trained")
		})
	}
}

// TestSweepOutNamedLikeTheDataset: an --out folder named like the bundled
// dataset, in the working folder, does not stand in the dataset's way (its
// check made the folder first, and the name then found the empty folder).
func TestSweepOutNamedLikeTheDataset(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	t.Chdir(t.TempDir())
	var stdout, errb bytes.Buffer
	args := []string{"sweep", "--dataset", "cora", "--bits", "4", "--epochs", "2", "--qat-epochs", "1", "--out", "cora", "--quiet"}
	require.Equal(t, 0, run(args, &stdout, &errb), errb.String())
	assert.FileExists(t, filepath.Join("cora", "sweep.json"))
}

func sweepFixture(seeds int) *sweepReport {
	return &sweepReport{Dataset: "cora", Model: "gcn", Nodes: 2708, Parts: 20, Batches: 5, Seeds: seeds, Rows: []sweepRow{
		{Bits: 0, Accuracy: 0.815, AccuracyStd: 0.004, PTQAccuracy: 0.815, WeightBytes: 92000},
		{Bits: 2, Accuracy: 0.70, AccuracyStd: 0.03, PTQAccuracy: 0.4, ComputeMS: 1.25, PackMS: 0.0000123, NodesPerSec: 2210612.34, Kernel: "cpu"},
		{Bits: 4, Accuracy: 0.79, AccuracyStd: 0.01, PTQAccuracy: 0.7, ComputeMS: 2.5, PackMS: 0.5, NodesPerSec: 902666.7, Kernel: "cpu"},
	}}
}

// TestSweepOutputFiles writes a sweep's four files: plain decimals in the
// CSV, "3 seeds" and the std band in the figure, mode 0644, no temporaries.
func TestSweepOutputFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sw")
	require.NoError(t, qWriteSweep(dir, sweepFixture(3)))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), e.Name())
	}
	assert.ElementsMatch(t, []string{"sweep.csv", "sweep.json", "sweep.svg", "sweep.png"}, names)

	csvText, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	require.NoError(t, err)
	assert.NotRegexp(t, `\de[+-]?\d`, string(csvText), "no exponent notation")
	assert.Contains(t, string(csvText), "cora,gcn,2,0.7,0.03,0.4,1.25,0.0000123,2210612,0,0,cpu,0\n")
	assert.Contains(t, string(csvText), ",902667,")

	svg, err := os.ReadFile(filepath.Join(dir, "sweep.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "qgtc sweep: gcn on cora (3 seeds)")
	assert.Equal(t, 1, strings.Count(string(svg), `<polygon class="band"`), "the QAT accuracy's std band")

	// One seed: no band, and "1 seed".
	require.NoError(t, qWriteSweep(dir, sweepFixture(1)))
	svg, err = os.ReadFile(filepath.Join(dir, "sweep.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "(1 seed)")
	assert.NotContains(t, string(svg), "band")
}

func TestQDecimal(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{2210612.34, "2210612"}, {2.21061e6, "2210610"}, {1e21, "1000000000000000000000"}, {0.815, "0.815"},
		{0.8149999, "0.815"}, {12.3456789, "12.3457"}, {0.0000123, "0.0000123"}, {1e-9, "0.000000001"},
		{0, "0"}, {-3.5, "-3.5"}, {100, "100"}, {math.NaN(), "NaN"},
	} {
		assert.Equal(t, tc.want, qDecimal(tc.v), "%v", tc.v)
	}
}

// TestSweepSummaryLines runs a two-seed sweep into "dir/sw/": the summary
// names the seeds in words and the files with one slash.
func TestSweepSummaryLines(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("QGTC_CACHE", filepath.Join(dir, "cache"))
	var out, errb bytes.Buffer
	args := []string{"sweep", "--dataset", "cora", "--bits", "4", "--seeds", "2", "--epochs", "2", "--qat-epochs", "1",
		"--out", dir + "/sw/", "--quiet"}
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "2708 nodes in 1 batch, 2 seeds, kernel ")
	assert.Contains(t, out.String(), "wrote "+filepath.Join(dir, "sw", "sweep.{csv,json,svg,png}")+"\n")
	assert.NotContains(t, out.String(), "//")
	svg, err := os.ReadFile(filepath.Join(dir, "sw", "sweep.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), `class="band"`)
}
