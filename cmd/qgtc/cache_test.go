package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/pipeline"
)

// qCapture sends infer's and sweep's stderr lines (progress, warnings,
// notes) to a buffer for the rest of the test.
func qCapture(t *testing.T) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	old := qStderr
	qStderr = &b
	t.Cleanup(func() { qStderr = old })
	return &b
}

// qFast are training flags that keep a run under a second on Cora.
var qFast = []string{"--epochs", "5", "--qat-epochs", "1"}

// qInferJSON runs infer with --json and returns its report; it must succeed.
func qInferJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	all := append([]string{"infer", "--json"}, args...)
	require.Equal(t, 0, run(all, &out, &errb), "%v: %s", all, errb.String())
	var r map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	return r
}

func qTrained(r map[string]any) bool { return r["train_ms"].(float64) > 0 }

// qModelFile returns the one cached model file of stage (fp32, a4w4, ...).
func qModelFile(t *testing.T, cache, stage string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "models", "*-"+stage+".safetensors"))
	require.NoError(t, err)
	require.Len(t, files, 1, stage)
	return files[0]
}

// qFlipTensorByte flips the high byte of the first float in a safetensors
// file's data (what a bad disk or a crafted file does).
func qFlipTensorByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	hlen := binary.LittleEndian.Uint64(b)
	b[8+hlen+3] ^= 0x7f
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestInferWeights: --weights flags that disagree with the file are usage
// errors naming both values; agreeing ones run the file's model; a corrupt
// file exits 1 naming the checksum. (What the pipeline does with weights,
// other data and old files, is pipeline's TestWeights.)
func TestInferWeights(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	stderr := qCapture(t)
	trained := qInferJSON(t, append([]string{"--dataset", "cora", "--quiet"}, qFast...)...)
	file := qModelFile(t, cache, "a4w4")

	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"bits", []string{"--bits", "8"}, []string{"--bits 8", "4-bit activations and 4-bit weights"}},
		{"abits", []string{"--abits", "2"}, []string{"--abits 2", "4-bit activations"}},
		{"wbits", []string{"--wbits", "8", "--abits", "4"}, []string{"--wbits 8", "4-bit weights"}},
		{"model", []string{"--model", "gin"}, []string{"--model gin", "a gcn model"}},
		{"layers", []string{"--layers", "3"}, []string{"--layers 3", "2 layers"}},
		{"hidden", []string{"--hidden", "16"}, []string{"--hidden 16", "hidden width 64"}},
		{"gin-aggr", []string{"--gin-aggr", "mean"}, []string{"--gin-aggr mean", "a gcn model whose aggregation is fixed"}},
		{"feature-scale", []string{"--feature-scale", "rows"}, []string{"--feature-scale rows", "feature scale sqrt"}},
		{"epochs", []string{"--epochs", "3"}, []string{"--epochs only applies when training"}},
		{"last-bits", []string{"--last-bits", "8"}, []string{"--last-bits only applies when training"}},
		{"last-bits value", []string{"--last-bits", "wide"}, []string{"--last-bits", "want auto, off or a width 1..32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"infer", "--dataset", "cora", "--weights", file}, tc.args...)
			assert.Equal(t, 2, run(args, &out, &errb))
			for _, w := range tc.wants {
				assert.Contains(t, errb.String(), w)
			}
			assert.Equal(t, 1, strings.Count(errb.String(), "\n"), errb.String())
		})
	}

	t.Run("agreeing flags", func(t *testing.T) {
		stderr.Reset()
		r := qInferJSON(t, "--dataset", "cora", "--weights", file, "--bits", "4", "--model", "gcn", "--quiet")
		assert.Equal(t, trained["accuracy"], r["accuracy"])
		assert.EqualValues(t, 4, r["bits"])
		assert.Empty(t, stderr.String(), "same data: no warning")
	})

	t.Run("corrupt file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.safetensors")
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bad, b, 0o644))
		qFlipTensorByte(t, bad)
		var out, errb bytes.Buffer
		assert.Equal(t, 1, run([]string{"infer", "--dataset", "cora", "--weights", bad}, &out, &errb))
		assert.Contains(t, errb.String(), "checksum")
	})
}

// TestInferCacheDir: infer caches its partition and models under
// $QGTC_CACHE and says so. (What the cache keys cover and how corrupt
// entries are replaced is pipeline's TestCache*.)
func TestInferCacheDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	args := append([]string{"--dataset", "cora", "--parts", "2", "--quiet"}, qFast...)
	first := qInferJSON(t, args...)
	assert.Equal(t, cache, first["cached_in"])
	assert.Equal(t, false, first["partition_cached"])
	again := qInferJSON(t, args...)
	assert.False(t, qTrained(again))
	assert.Equal(t, true, again["partition_cached"])
	assert.Equal(t, first["accuracy"], again["accuracy"])
	qModelFile(t, cache, "a4w4")
}

// TestInferCacheUnwritable: a cache that cannot be written costs one note,
// and the summary does not claim the model was cached.
func TestInferCacheUnwritable(t *testing.T) {
	t.Setenv("QGTC_CACHE", "/dev/null/x")
	stderr := qCapture(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append([]string{"infer", "--dataset", "cora", "--parts", "2", "--quiet"}, qFast...), &out, &errb), errb.String())
	assert.NotContains(t, out.String(), "now cached")
	assert.Contains(t, out.String(), "(fp32 + QAT, not cached)")
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	assert.Contains(t, stderr.String(), "qgtc: note: could not cache the")
	assert.NotContains(t, stderr.String(), "corrupt")
}

// TestInferProgressNotTerminal: without a terminal, training still prints
// plain progress lines (the old code printed nothing for minutes); --quiet
// silences them.
func TestInferProgressNotTerminal(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	stderr := qCapture(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(append([]string{"infer", "--dataset", "cora", "--parts", "2"}, qFast...), &out, &errb), errb.String())
	for _, w := range []string{"qgtc: loading cora\n", "qgtc: partitioning cora into 2 parts\n", "qgtc: training fp32 gcn on cora: epoch 1/5", "qgtc: QAT 4/4-bit gcn: epoch 1/1"} {
		assert.Contains(t, stderr.String(), w)
	}
	assert.NotContains(t, stderr.String(), "\r")

	stderr.Reset()
	require.Equal(t, 0, run(append([]string{"infer", "--dataset", "cora", "--quiet", "--seed", "1"}, qFast...), &out, &errb), errb.String())
	assert.Empty(t, stderr.String())
}

// TestInferLatencyLine: the printed parts add up to the total, a sparse
// first product's packing says it made the feature lists, and more memory
// between layers is not called less.
func TestInferLatencyLine(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	qCapture(t)
	num := regexp.MustCompile(`([a-z]+) ([0-9.]+) ms`)
	for _, sparse := range []string{"on", "off"} {
		t.Run(sparse, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, 0, run(append([]string{"infer", "--dataset", "cora", "--parts", "2", "--sparse-input", sparse, "--quiet"}, qFast...), &out, &errb), errb.String())
			var line string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, "latency") {
					line = l
				}
			}
			require.NotEmpty(t, line, out.String())
			var sum, total float64
			for _, m := range num.FindAllStringSubmatch(line, -1) {
				v, err := strconv.ParseFloat(m[2], 64)
				require.NoError(t, err)
				if m[1] == "total" {
					total = v
				} else {
					sum += v
				}
			}
			assert.Positive(t, total)
			assert.InDelta(t, total, sum, 0.051, line)
			if sparse == "on" {
				assert.Regexp(t, `pack [0-9.]+ ms \(feature lists\)`, line)
			} else {
				assert.Regexp(t, `pack [0-9.]+ ms`, line)
				// Packing is timed, not left at zero (the old line said
				// "pack 0.0 ms" whatever ran).
				r := qInferJSON(t, append([]string{"--dataset", "cora", "--parts", "2", "--sparse-input", "off", "--quiet"}, qFast...)...)
				assert.Positive(t, r["pack_ms"].(float64))
			}
		})
	}
	var b bytes.Buffer
	printInfer(&b, &pipeline.Report{Dataset: "x", Model: "gcn", InterBytes: 1000, UnfusedBytes: 800, Batches: 1})
	assert.Contains(t, b.String(), "(1.2x more)")
	assert.NotContains(t, b.String(), "less")
}

// TestSweepProgressNotTerminal: sweep's progress reaches a log too.
func TestSweepProgressNotTerminal(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("QGTC_CACHE", dir)
	stderr := qCapture(t)
	var out, errb bytes.Buffer
	args := append([]string{"sweep", "--dataset", "cora", "--bits", "2,4", "--out", filepath.Join(dir, "sw")}, qFast...)
	require.Equal(t, 0, run(args, &out, &errb), errb.String())
	for _, w := range []string{"qgtc: training fp32 gcn on cora: epoch 1/5", "qgtc: QAT 2/2-bit gcn: epoch 1/1", "qgtc: QAT 4/4-bit gcn: epoch 1/1",
		"qgtc: sweep seed 0: 4-bit inference\n"} {
		assert.Contains(t, stderr.String(), w)
	}
}
