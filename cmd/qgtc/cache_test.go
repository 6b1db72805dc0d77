package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/qgtc/qgtc/subgraph"
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

// qCoraNPZ copies the gnn-benchmark cora.npz into dir/cora/cora.npz, with
// each label mapped by relabel (nil: unchanged), and returns the folder.
func qCoraNPZ(t *testing.T, dir string, relabel func(int8) int8) string {
	t.Helper()
	src, err := subgraph.Locate("cora")
	require.NoError(t, err)
	zr, err := zip.OpenReader(filepath.Join(src, "cora.npz"))
	require.NoError(t, err)
	defer zr.Close()
	folder := filepath.Join(dir, "cora")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		if f.Name == "labels.npy" && relabel != nil {
			// .npy v1: magic, version, header length (uint16), header, data.
			require.Contains(t, string(b[:128]), "'|i1'", "labels are int8")
			data := 10 + int(binary.LittleEndian.Uint16(b[8:]))
			for i := data; i < len(b); i++ {
				b[i] = byte(relabel(int8(b[i])))
			}
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: f.Method})
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(folder, "cora.npz"), buf.Bytes(), 0o644))
	return folder
}

// TestInferCacheStaleLabels: labels edited in place (same file name, same
// shapes) train a new model; the old code reused the cached one.
func TestInferCacheStaleLabels(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	dir := t.TempDir()
	folder := qCoraNPZ(t, dir, nil)
	args := append([]string{"--dataset", folder, "--quiet"}, qFast...)
	assert.True(t, qTrained(qInferJSON(t, args...)), "first run trains")
	assert.False(t, qTrained(qInferJSON(t, args...)), "same data: cached")
	qCoraNPZ(t, dir, func(l int8) int8 { return (l + 1) % 7 })
	assert.True(t, qTrained(qInferJSON(t, args...)), "edited labels: trains again")
}

// TestInferCacheOtherDataset: a folder named cora holding the gnn-benchmark
// copy does not reuse the Planetoid Cora model.
func TestInferCacheOtherDataset(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	assert.True(t, qTrained(qInferJSON(t, append([]string{"--dataset", "cora", "--quiet"}, qFast...)...)))
	folder := qCoraNPZ(t, t.TempDir(), nil)
	assert.True(t, qTrained(qInferJSON(t, append([]string{"--dataset", folder, "--quiet"}, qFast...)...)),
		"same name, other data: trains")
}

// TestInferCacheFlags: every training flag is part of the key.
func TestInferCacheFlags(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	base := []string{"--dataset", "cora", "--quiet", "--epochs", "5", "--qat-epochs", "1"}
	require.True(t, qTrained(qInferJSON(t, base...)))
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"epochs", []string{"--epochs", "3", "--qat-epochs", "0"}},
		{"qat-epochs", []string{"--qat-epochs", "2"}},
		{"seed", []string{"--seed", "1"}},
		{"hidden", []string{"--hidden", "32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.True(t, qTrained(qInferJSON(t, append(slicesClone(base), tc.extra...)...)), "new flags: trains")
			assert.False(t, qTrained(qInferJSON(t, append(slicesClone(base), tc.extra...)...)), "again: cached")
		})
	}
	assert.False(t, qTrained(qInferJSON(t, base...)), "the first model is still cached")
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

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

// TestInferCacheCorrupt: a cached 4-bit model with flipped weight bytes is
// reported, removed and retrained to the clean run's accuracy; the old
// code used it and stayed wrong.
func TestInferCacheCorrupt(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	stderr := qCapture(t)
	args := append([]string{"--dataset", "cora", "--quiet"}, qFast...)
	clean := qInferJSON(t, args...)
	require.True(t, qTrained(clean))
	path := qModelFile(t, cache, "a4w4")
	qFlipTensorByte(t, path)

	r := qInferJSON(t, args...)
	assert.True(t, qTrained(r), "retrained")
	assert.Equal(t, clean["accuracy"], r["accuracy"])
	assert.Contains(t, stderr.String(), "qgtc: warning: cached model "+path+" is corrupt (")
	assert.Contains(t, stderr.String(), "checksum")
	assert.Contains(t, stderr.String(), "removed, training again")
	assert.Equal(t, 1, strings.Count(stderr.String(), "warning"), stderr.String())

	stderr.Reset()
	r = qInferJSON(t, args...)
	assert.False(t, qTrained(r), "the rebuilt entry is sound")
	assert.Equal(t, clean["accuracy"], r["accuracy"])
	assert.Empty(t, stderr.String())
}

// TestInferPartitionCache: infer uses subgraph's checksummed partition
// file; a corrupt one is reported and recomputed.
func TestInferPartitionCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("QGTC_CACHE", cache)
	stderr := qCapture(t)
	args := append([]string{"--dataset", "cora", "--parts", "3", "--quiet"}, qFast...)
	first := qInferJSON(t, args...)
	assert.Equal(t, false, first["partition_cached"])
	files, err := filepath.Glob(filepath.Join(cache, "partitions", "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	_, err = subgraph.ReadPartitionFile(f)
	f.Close()
	require.NoError(t, err, "a subgraph partition file")
	assert.Equal(t, true, qInferJSON(t, args...)["partition_cached"])

	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	b[60] ^= 1 // node 1's part: still below K, only the checksum tells
	require.NoError(t, os.WriteFile(files[0], b, 0o644))
	stderr.Reset()
	r := qInferJSON(t, args...)
	assert.Equal(t, false, r["partition_cached"])
	assert.Equal(t, first["accuracy"], r["accuracy"])
	assert.Contains(t, stderr.String(), "qgtc: warning: cached partition "+files[0]+" is unusable")
	assert.Contains(t, stderr.String(), "checksum")
	assert.Equal(t, true, qInferJSON(t, args...)["partition_cached"], "rewritten")
}

// TestInferWeights: --weights flags that disagree with the file are usage
// errors naming both values; a model applied to other data says so; a file
// without the new metadata still loads and predicts the same.
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
		{"feature-scale", []string{"--feature-scale", "rows"}, []string{"--feature-scale rows", "feature scale sqrt"}},
		{"epochs", []string{"--epochs", "3"}, []string{"--epochs only applies when training"}},
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

	t.Run("other data", func(t *testing.T) {
		stderr.Reset()
		folder := qCoraNPZ(t, t.TempDir(), nil)
		qInferJSON(t, "--dataset", folder, "--weights", file, "--quiet")
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		require.Len(t, lines, 1, stderr.String())
		assert.Regexp(t, `^qgtc: warning: --weights .* was trained on cora \(data [0-9a-f]{16}\), applied to `+regexp.QuoteMeta(folder)+` \(data [0-9a-f]{16}\)`, lines[0])
	})

	t.Run("old file", func(t *testing.T) {
		// As the code before model origins wrote it: no qgtc.origin, no checksum.
		f, err := os.Open(file)
		require.NoError(t, err)
		ts, meta, err := safetensors.Read(f)
		f.Close()
		require.NoError(t, err)
		require.Contains(t, meta, "qgtc.origin")
		delete(meta, "qgtc.origin")
		delete(meta, "qgtc.sha256")
		old := filepath.Join(t.TempDir(), "old.safetensors")
		var buf bytes.Buffer
		require.NoError(t, safetensors.Write(&buf, ts, meta))
		require.NoError(t, os.WriteFile(old, buf.Bytes(), 0o644))
		stderr.Reset()
		r := qInferJSON(t, "--dataset", "cora", "--weights", old, "--quiet")
		assert.Equal(t, trained["accuracy"], r["accuracy"])
		assert.Empty(t, stderr.String())
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

// TestInferLatencyLine: the printed parts add up to the total, a run that
// packs nothing does not print "pack 0.0 ms", and more memory between
// layers is not called less.
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
				assert.Contains(t, line, "pack none (sparse codes)")
				assert.NotContains(t, line, "pack 0.0 ms")
			} else {
				assert.Regexp(t, `pack [0-9.]+ ms`, line)
			}
		})
	}
	var b bytes.Buffer
	printInfer(&b, &inferReport{Dataset: "x", Model: "gcn", InterBytes: 1000, UnfusedBytes: 800, Batches: 1})
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
