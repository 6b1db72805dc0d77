package pipeline

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/childtest"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// fastJob is a job on dataset whose training takes under a second on
// Cora, caching under cache, with its warnings in the returned buffer.
func fastJob(dataset, cache string) (*Job, *bytes.Buffer) {
	c := DefaultConfig(dataset)
	c.Epochs, c.QATEpochs = 5, 1
	var warn bytes.Buffer
	return &Job{Config: c, Backend: cpu.NewBackend(nil), CacheDir: cache, Warnings: &warn}, &warn
}

// infer runs a copy of j (fresh cache-note state, as a new process has)
// and returns its report; it must succeed.
func infer(t *testing.T, j *Job) *Report {
	t.Helper()
	c := *j
	r, err := c.Infer()
	require.NoError(t, err)
	return r
}

func trained(r *Report) bool { return r.TrainMS > 0 }

// coraNPZ copies the gnn-benchmark cora.npz into dir/cora/cora.npz, with
// each label mapped by relabel (nil: unchanged), and returns the folder.
func coraNPZ(t *testing.T, dir string, relabel func(int8) int8) string {
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

// coraPartial copies the Planetoid Cora files without allx into a folder
// named cora_partial: it loads, with the warning that most feature rows
// are zero.
func coraPartial(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cora_partial")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, ext := range []string{"x", "y", "tx", "ty", "ally", "graph", "test.index"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "cora", "ind.cora."+ext))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ind.cora."+ext), b, 0o644))
	}
	return dir
}

// modelFile returns the one cached model file of stage (fp32, a4w4, ...).
func modelFile(t *testing.T, cache, stage string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "models", "*-"+stage+".safetensors"))
	require.NoError(t, err)
	require.Len(t, files, 1, stage)
	return files[0]
}

// flipTensorByte flips the high byte of the first float in a safetensors
// file's data (what a bad disk or a crafted file does).
func flipTensorByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	hlen := binary.LittleEndian.Uint64(b)
	b[8+hlen+3] ^= 0x7f
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestCacheStaleLabels: labels edited in place (same file name, same
// shapes) train a new model; the code before fingerprints reused the
// cached one.
func TestCacheStaleLabels(t *testing.T) {
	dir := t.TempDir()
	j, _ := fastJob(coraNPZ(t, dir, nil), t.TempDir())
	assert.True(t, trained(infer(t, j)), "first run trains")
	assert.False(t, trained(infer(t, j)), "same data: cached")
	coraNPZ(t, dir, func(l int8) int8 { return (l + 1) % 7 })
	assert.True(t, trained(infer(t, j)), "edited labels: trains again")
}

// TestCacheOtherDataset: a folder named cora holding the gnn-benchmark
// copy does not reuse the Planetoid Cora model.
func TestCacheOtherDataset(t *testing.T) {
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	assert.True(t, trained(infer(t, j)))
	j2, _ := fastJob(coraNPZ(t, t.TempDir(), nil), cache)
	assert.True(t, trained(infer(t, j2)), "same name, other data: trains")
}

// TestCacheSettings: every training setting is part of the key, and other
// keys leave the first model in place.
func TestCacheSettings(t *testing.T) {
	cache := t.TempDir()
	base, _ := fastJob("cora", cache)
	require.True(t, trained(infer(t, base)))
	for _, tc := range []struct {
		name string
		set  func(c *Config)
	}{
		{"epochs", func(c *Config) { c.Epochs, c.QATEpochs = 3, 0 }},
		{"qat-epochs", func(c *Config) { c.QATEpochs = 2 }},
		{"seed", func(c *Config) { c.Seed = 1 }},
		{"hidden", func(c *Config) { c.Hidden = 32 }},
		{"lsq", func(c *Config) { c.LSQ = true }},
		{"feature-scale", func(c *Config) { c.FeatureScale = layers.ScaleRows }},
		{"lr", func(c *Config) { c.LR = 0.02 }},
		{"weight-decay", func(c *Config) { c.WeightDecay = 0 }},
		{"dropout", func(c *Config) { c.Dropout = 0.2 }},
		{"keep-input", func(c *Config) { c.KeepInput = true }},
		{"patience", func(c *Config) { c.Patience = 3 }},
		{"qat-lr", func(c *Config) { c.QATLR = 0.01 }},
		{"qat-weight-decay", func(c *Config) { c.QATWeightDecay = 0 }},
		{"qat-patience", func(c *Config) { c.QATPatience = 1 }},
		{"qat-distill", func(c *Config) { c.QATDistill = 0 }},
		{"channel-z", func(c *Config) { c.ChannelZ = ChannelOff }}, // auto is on at 4 bits
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := *base
			tc.set(&j.Config)
			assert.True(t, trained(infer(t, &j)), "new settings: trains")
			assert.False(t, trained(infer(t, &j)), "again: cached")
		})
	}
	assert.False(t, trained(infer(t, base)), "the first model is still cached")
}

// TestCacheKeyKeepInputOmitted: a key without KeepInput is the key as it
// was before the setting existed, so models cached then stay valid.
func TestCacheKeyKeepInputOmitted(t *testing.T) {
	js, err := json.Marshal(modelKey{Dropout: 0.5})
	require.NoError(t, err)
	assert.NotContains(t, string(js), "keep_input")
	js, err = json.Marshal(modelKey{Dropout: 0.5, KeepInput: true})
	require.NoError(t, err)
	assert.Contains(t, string(js), `"keep_input":true`)
}

// TestCacheGINAggr: GIN's aggregation is part of the key, its model
// averages when asked to, and a summing GIN's key is the key from before
// the setting existed.
func TestCacheGINAggr(t *testing.T) {
	js, err := json.Marshal(modelKey{Kind: layers.GIN})
	require.NoError(t, err)
	assert.NotContains(t, string(js), "aggr")
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	j.Model, j.GINAggr = layers.GIN, layers.AggrSum
	sum := infer(t, j)
	require.True(t, trained(sum))
	j.GINAggr = layers.AggrMean
	mean := infer(t, j)
	assert.True(t, trained(mean), "mean: another model")
	assert.Equal(t, layers.AggrSum, sum.GINAggr)
	assert.Equal(t, layers.AggrMean, mean.GINAggr)
	assert.False(t, trained(infer(t, j)), "mean again: cached")
	files, err := filepath.Glob(filepath.Join(cache, "models", "*-a4w4.safetensors"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	var aggrs []string
	for _, f := range files {
		w, err := ReadWeights(f)
		require.NoError(t, err)
		c := DefaultConfig("cora")
		c.Adopt(w)
		assert.Equal(t, w.Model.AggrOf(), c.GINAggr)
		aggrs = append(aggrs, c.GINAggr)
	}
	assert.ElementsMatch(t, []string{layers.AggrSum, layers.AggrMean}, aggrs)
	j.GINAggr = layers.AggrSum
	assert.False(t, trained(infer(t, j)), "sum again: cached")
}

// TestCacheCorrupt: a cached 4-bit model with flipped weight bytes is
// reported once, removed and retrained to the clean run's accuracy; the
// code before checksums used it and stayed wrong.
func TestCacheCorrupt(t *testing.T) {
	cache := t.TempDir()
	j, warn := fastJob("cora", cache)
	clean := infer(t, j)
	require.True(t, trained(clean))
	path := modelFile(t, cache, "a4w4")
	flipTensorByte(t, path)

	r := infer(t, j)
	assert.True(t, trained(r), "retrained")
	assert.Equal(t, *clean.Accuracy, *r.Accuracy)
	assert.Contains(t, warn.String(), "qgtc: warning: cached model "+path+" is corrupt (")
	assert.Contains(t, warn.String(), "checksum")
	assert.Contains(t, warn.String(), "removed, training again")
	assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())

	warn.Reset()
	r = infer(t, j)
	assert.False(t, trained(r), "the rebuilt entry is sound")
	assert.Equal(t, *clean.Accuracy, *r.Accuracy)
	assert.Empty(t, warn.String())
}

// TestPartitionCache: the partition is subgraph's checksummed file; a
// corrupt one is reported and recomputed, and its batches give the same
// predictions.
func TestPartitionCache(t *testing.T) {
	cache := t.TempDir()
	j, warn := fastJob("cora", cache)
	j.Parts = 3
	first := infer(t, j)
	assert.False(t, first.PartitionCached)
	assert.Equal(t, 3, first.Parts)
	files, err := filepath.Glob(filepath.Join(cache, "partitions", "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	_, err = subgraph.ReadPartitionFile(f)
	f.Close()
	require.NoError(t, err, "a subgraph partition file")
	assert.True(t, infer(t, j).PartitionCached)

	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	b[60] ^= 1 // node 1's part: still below K, only the checksum tells
	require.NoError(t, os.WriteFile(files[0], b, 0o644))
	warn.Reset()
	r := infer(t, j)
	assert.False(t, r.PartitionCached)
	assert.Equal(t, *first.Accuracy, *r.Accuracy)
	assert.Contains(t, warn.String(), "qgtc: warning: cached partition "+files[0]+" is unusable")
	assert.Contains(t, warn.String(), "checksum")
	assert.True(t, infer(t, j).PartitionCached, "rewritten")
}

// TestNoCacheDir: CacheDir "" writes nothing, trains every time and does
// not claim a cache in the report.
func TestNoCacheDir(t *testing.T) {
	t.Chdir(t.TempDir())
	j, warn := fastJob("cora", "")
	j.Parts = 2
	for range 2 {
		r := infer(t, j)
		assert.True(t, trained(r))
		assert.False(t, r.PartitionCached)
		assert.Empty(t, r.CachedIn)
	}
	assert.Empty(t, warn.String())
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// TestCacheUnwritable: a cache that cannot be written costs one note for
// the whole job, and the report does not claim the model was cached.
func TestCacheUnwritable(t *testing.T) {
	j, warn := fastJob("cora", "/dev/null/x")
	j.Parts = 2
	r := infer(t, j)
	assert.True(t, trained(r))
	assert.Empty(t, r.CachedIn)
	assert.Equal(t, 1, strings.Count(warn.String(), "\n"), warn.String())
	assert.Contains(t, warn.String(), "qgtc: note: could not cache the partition: ")
}

// TestWeights: a model file runs with the settings it fixes (Adopt), to
// the trained run's accuracy; applied to other data it says so once; a
// file written before origins still loads and predicts the same; a
// corrupt one fails its checksum.
func TestWeights(t *testing.T) {
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	want := infer(t, j)
	file := modelFile(t, cache, "a4w4")
	w, err := ReadWeights(file)
	require.NoError(t, err)
	require.NotNil(t, w.Origin)

	run := func(dataset string, w *Weights) (*Report, string) {
		c := DefaultConfig(dataset)
		c.ABits, c.WBits, c.Model = 8, 8, layers.GIN // overridden by Adopt
		if w.Origin != nil {
			c.FeatureScale = layers.ScaleNone // and so is this, from the file's origin
		}
		var warn bytes.Buffer
		r, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w, Warnings: &warn}).Infer()
		require.NoError(t, err)
		return r, warn.String()
	}
	t.Run("same data", func(t *testing.T) {
		r, warn := run("cora", w)
		assert.Equal(t, *want.Accuracy, *r.Accuracy)
		assert.Equal(t, 4, r.Bits)
		assert.Equal(t, layers.GCN, r.Model)
		assert.Equal(t, file, r.Weights)
		assert.False(t, trained(r))
		assert.Empty(t, warn)
	})
	t.Run("other data", func(t *testing.T) {
		folder := coraNPZ(t, t.TempDir(), nil)
		_, warn := run(folder, w)
		lines := strings.Split(strings.TrimSpace(warn), "\n")
		require.Len(t, lines, 1, warn)
		assert.Regexp(t, `^qgtc: warning: weights .* were trained on cora \(data [0-9a-f]{16}\), applied to `+regexp.QuoteMeta(folder)+` \(data [0-9a-f]{16}\)`, lines[0])
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
		ow, err := ReadWeights(old)
		require.NoError(t, err)
		assert.Nil(t, ow.Origin)
		r, warn := run("cora", ow)
		assert.Equal(t, *want.Accuracy, *r.Accuracy)
		assert.Empty(t, warn)
	})
	t.Run("corrupt file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.safetensors")
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bad, b, 0o644))
		flipTensorByte(t, bad)
		_, err = ReadWeights(bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "checksum")
	})
	t.Run("other widths of features", func(t *testing.T) {
		c := DefaultConfig("citeseer")
		_, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).Infer()
		require.Error(t, err)
		assert.ErrorIs(t, err, layers.ErrModel)
		assert.Contains(t, err.Error(), "model takes 1433 features")
	})
}

// TestLoadWarnings: the dataset's warnings reach the warning writer once,
// after loading, and the job still runs.
func TestLoadWarnings(t *testing.T) {
	j, warn := fastJob(coraPartial(t), "")
	j.Epochs, j.QATEpochs = 1, 0
	r := infer(t, j)
	assert.Equal(t, 2708, r.Nodes)
	lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
	require.Len(t, lines, 1, warn.String())
	assert.Regexp(t, `^qgtc: warning: .*cora_partial: partial dataset: .* 1568 of 2708 nodes have all-zero features`, lines[0])

	j.Warnings = nil // discarded
	_, err := j.Load()
	require.NoError(t, err)
}

// TestSteps runs the steps one by one as Infer does and gets its
// predictions; Sparse follows SparseInput.
func TestSteps(t *testing.T) {
	j, _ := fastJob("cora", t.TempDir())
	want := infer(t, j)
	// On the CPU a pass moves no bytes and the weights none either: its
	// operands are host memory. The ops are counted all the same.
	assert.Zero(t, want.H2DBytes+want.D2HBytes+want.WeightUploadBytes, "cpu backend traffic")
	assert.Positive(t, want.Ops)
	d, err := j.Load()
	require.NoError(t, err)
	assert.Nil(t, d.Batches)
	require.NoError(t, j.Partition(d))
	assert.Equal(t, 1, d.Parts, "Cora is one batch")
	in, err := j.Input(d, j.ABits)
	require.NoError(t, err)
	fp, dt, err := j.TrainFP32(d, in)
	require.NoError(t, err)
	assert.Zero(t, dt, "cached by Infer")
	m, _, err := j.Quantized(d, fp, nil, in)
	require.NoError(t, err)
	plan, err := j.Compile(m)
	require.NoError(t, err)
	defer plan.Close()
	nb := *j
	nb.Backend = nil
	_, err = nb.Compile(m)
	assert.ErrorIs(t, err, ErrNoBackend)
	run, err := j.Run(plan, d, in)
	require.NoError(t, err)
	assert.Equal(t, *want.Accuracy, layers.Accuracy(run.Pred, d.Dataset.Labels, d.Dataset.Test))
	for mode, want := range map[string]bool{SparseOn: true, SparseOff: false, SparseAuto: plan.SparseCheaper(in)} {
		j.SparseInput = mode
		assert.Equal(t, want, j.Sparse(plan, in), mode)
	}
}

// TestSweepSteps: a one-seed sweep gives the fp32 row first and per width
// the accuracy Infer gives for the same settings (same cached model).
func TestSweepSteps(t *testing.T) {
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	rep, err := j.Sweep([]int{2, 4}, 1)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 3)
	assert.Equal(t, []int{0, 2, 4}, []int{rep.Rows[0].Bits, rep.Rows[1].Bits, rep.Rows[2].Bits})
	r := infer(t, j)
	assert.False(t, trained(r), "the sweep cached the 4-bit model")
	assert.Equal(t, *r.Accuracy, rep.Rows[2].Accuracy)
	assert.Equal(t, *r.FP32Accuracy, rep.Rows[0].Accuracy)
	_, err = j.Sweep(nil, 1)
	assert.Error(t, err)
}

func TestConfigCheck(t *testing.T) {
	ok := DefaultConfig("cora")
	require.NoError(t, ok.Check())
	for _, tc := range []struct {
		field string
		set   func(c *Config)
	}{
		{"Dataset", func(c *Config) { c.Dataset = "" }},
		{"Model", func(c *Config) { c.Model = "gat" }},
		{"Norm", func(c *Config) { c.Norm = "layer" }},
		{"Norm", func(c *Config) { c.Norm = layers.NormBatch }},
		{"GINAggr", func(c *Config) { c.GINAggr = layers.AggrMean }}, // a GCN
		{"GINAggr", func(c *Config) { c.Model, c.GINAggr = layers.GIN, "max" }},
		{"FeatureScale", func(c *Config) { c.FeatureScale = "foo" }},
		{"SparseInput", func(c *Config) { c.SparseInput = "maybe" }},
		{"Agg", func(c *Config) { c.Agg = 7 }},
		{"ABits", func(c *Config) { c.ABits = 0 }},
		{"WBits", func(c *Config) { c.WBits = 33 }},
		{"Batch", func(c *Config) { c.Batch = 0 }},
		{"Hidden", func(c *Config) { c.Hidden = -1 }},
		{"Layers", func(c *Config) { c.Layers = 0 }},
		{"Parts", func(c *Config) { c.Parts = -5 }},
		{"Epochs", func(c *Config) { c.Epochs = -2 }},
		{"QATEpochs", func(c *Config) { c.QATEpochs = -1 }},
		{"LR", func(c *Config) { c.LR = 0 }},
		{"QATLR", func(c *Config) { c.QATLR = math.Inf(1) }},
		{"WeightDecay", func(c *Config) { c.WeightDecay = -1e-4 }},
		{"QATWeightDecay", func(c *Config) { c.QATWeightDecay = math.NaN() }},
		{"Dropout", func(c *Config) { c.Dropout = 1 }},
		{"Patience", func(c *Config) { c.Patience = -1 }},
		{"QATPatience", func(c *Config) { c.QATPatience = -3 }},
		{"QATDistill", func(c *Config) { c.QATDistill = math.NaN() }},
		{"ChannelZ", func(c *Config) { c.ChannelZ = "yes" }},
		{"SignWeights", func(c *Config) { c.SignWeights = "maybe" }},
		{"LCC", func(c *Config) { c.LCC = "on" }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := ok
			tc.set(&c)
			err := c.Check()
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.Contains(t, err.Error(), "Config."+tc.field)
		})
	}
	gin := ok
	gin.Model, gin.Norm = layers.GIN, layers.NormBatch
	assert.NoError(t, gin.Check())
	_, err := (&Job{Config: Config{}}).Infer()
	assert.Error(t, err, "Infer checks its Config")
}

// TestDataErrors: more parts than nodes is a Config error naming the
// graph's size; a dataset without features or labels is ErrData.
func TestDataErrors(t *testing.T) {
	j, _ := fastJob("cora", "")
	j.Parts = 3000
	_, err := j.Infer()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Parts", ce.Field)
	assert.Contains(t, err.Error(), "3000 is more than the 2708 nodes of cora")

	dir := t.TempDir()
	path := filepath.Join(dir, "edges.txt")
	require.NoError(t, os.WriteFile(path, []byte("0 1\n1 2\n"), 0o644))
	j.Dataset, j.Parts = path, 0
	_, err = j.Infer()
	assert.ErrorIs(t, err, ErrData)
	assert.Contains(t, err.Error(), "no node features")
}

// TestPartitionFile: Config.PartitionFile batches by a saved partition
// (its K becomes Parts, the batches are those of the same partition
// computed here), for infer and sweep; a file for another graph, a corrupt
// one or a Parts that disagrees with it is an error.
func TestPartitionFile(t *testing.T) {
	dir := t.TempDir()
	j, _ := fastJob("cora", filepath.Join(dir, "a"))
	j.Parts = 3
	d, err := j.Load()
	require.NoError(t, err)
	p, err := subgraph.Partition(d.Dataset.Graph, 3, subgraph.PartitionOptions{Seed: j.Seed})
	require.NoError(t, err)
	file := filepath.Join(dir, "cora.part")
	require.NoError(t, subgraph.SavePartition(file, d.Dataset.Graph, p, subgraph.PartitionOptions{Seed: j.Seed}))

	want := infer(t, j)
	k, _ := fastJob("cora", filepath.Join(dir, "b"))
	k.PartitionFile = file
	got := infer(t, k)
	assert.True(t, got.PartitionCached)
	assert.Equal(t, 3, got.Parts)
	assert.Equal(t, want.KeptEdges, got.KeptEdges)
	assert.Equal(t, *want.Accuracy, *got.Accuracy)
	assert.Equal(t, want.PredictionsSHA256, got.PredictionsSHA256, "the same predictions")
	rep, err := k.Sweep([]int{4}, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Parts)
	assert.Equal(t, *got.Accuracy, rep.Rows[1].Accuracy, "the sweep batches by the file too")

	k.Parts = 4
	_, err = k.Infer()
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Parts", ce.Field)
	k.Parts = 0
	k.Dataset = "citeseer"
	_, err = k.Infer()
	assert.ErrorIs(t, err, subgraph.ErrCacheMismatch)
	assert.ErrorContains(t, err, "made for a graph of 2708 nodes")
	k.Dataset, k.LCC = "cora", LCCOn
	_, err = k.Infer()
	assert.ErrorIs(t, err, subgraph.ErrCacheMismatch)
	assert.ErrorContains(t, err, "dataset cora, its largest component (--lcc)", "the whole graph's file")
	k.LCC = ""
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	b[60] ^= 1
	bad := filepath.Join(dir, "bad.part")
	require.NoError(t, os.WriteFile(bad, b, 0o644))
	k.Dataset, k.PartitionFile = "cora", bad
	_, err = k.Infer()
	assert.ErrorIs(t, err, subgraph.ErrCacheCorrupt)
}

// TestPredictionsHash: the report's hash is the predictions' own, so runs
// that answer alike (dense and edge-list aggregation, packed or sparse
// first product) report the same hash and a different model another.
func TestPredictionsHash(t *testing.T) {
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	var hashes []string
	for _, agg := range []layers.AggMode{layers.AggDense, layers.AggSparse} {
		for _, sparse := range []string{"on", "off"} {
			c := *j
			c.Agg, c.SparseInput = agg, sparse
			r := infer(t, &c)
			require.Len(t, r.PredictionsSHA256, 64)
			hashes = append(hashes, r.PredictionsSHA256)
		}
	}
	for _, h := range hashes[1:] {
		assert.Equal(t, hashes[0], h)
	}
	o := *j
	o.Seed = 7
	assert.NotEqual(t, hashes[0], infer(t, &o).PredictionsSHA256, "another model answers otherwise")
	assert.Equal(t, predictionsHash([]int32{-1, 2}), predictionsHash([]int32{-1, 2}))
	assert.NotEqual(t, predictionsHash([]int32{1, 2}), predictionsHash([]int32{2, 1}))
}

// TestPartitionProgress: infer's partitioning reports its phases (it
// printed one line for the minute a 1M-node graph takes), off a terminal
// as plain lines.
func TestPartitionProgress(t *testing.T) {
	defer func(d time.Duration) { progress.Interval = d }(progress.Interval)
	progress.Interval = time.Millisecond
	j, _ := fastJob("cora", t.TempDir())
	j.Parts = 3
	var buf bytes.Buffer
	j.Progress = progress.New(&buf, false)
	infer(t, j)
	for _, phase := range []string{subgraph.PhaseCoarsen, subgraph.PhaseInitial, subgraph.PhaseRefine} {
		assert.Contains(t, buf.String(), "qgtc: partitioning cora: "+phase+", ")
	}
	assert.NotContains(t, buf.String(), "\r")
}

// TestCacheWriteInterrupted: a cache entry being written when the process
// is interrupted leaves neither the entry nor its temporary file (the
// cache's partitions went through a temporary file that a signal left
// behind).
func TestCacheWriteInterrupted(t *testing.T) {
	if path := os.Getenv("QGTC_CACHE_WRITE_CHILD"); path != "" {
		writeCacheFile(path, func(w io.Writer) error {
			w.Write(make([]byte, 1<<17)) // past the buffer: the temporary file has bytes
			select {}                    // until the parent's signal
		})
		os.Exit(0)
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT on windows")
	}
	dir := filepath.Join(t.TempDir(), "partitions")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCacheWriteInterrupted$")
	cmd.Env = append(os.Environ(), "QGTC_CACHE_WRITE_CHILD="+filepath.Join(dir, "g.qgpart"))
	require.NoError(t, cmd.Start())
	childtest.WaitWriting(t, dir)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &exit)
	assert.Equal(t, 130, exit.ExitCode())
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, es, "no entry and no temporary file")
}

// TestSetupReported: on the CPU the plan's setup for the batches (graph
// checks, feature lists) runs before the first pass and is reported as
// setup_ms, a part of prepare_ms; later passes predict what the first did.
func TestSetupReported(t *testing.T) {
	j, _ := fastJob("cora", t.TempDir())
	j.Passes = 3
	r := infer(t, j)
	assert.Positive(t, r.SetupMS)
	assert.LessOrEqual(t, r.SetupMS, r.PrepareMS)
	assert.Equal(t, 2, r.MorePasses)
}

// TestLastBits: a 1-bit model's last layer is 8 bits wide by default, as a
// 2-bit model's is
// (LastBits auto), cached as its own model (a1w1l8) beside the plain one
// (LastBits −1); loaded back with --weights it keeps the width and
// predicts the same; a width it does not widen changes nothing.
func TestLastBits(t *testing.T) {
	cache := t.TempDir()
	j, _ := fastJob("cora", cache)
	j.ABits, j.WBits, j.LastBits = 1, 1, -1
	plain := infer(t, j)
	j.LastBits = 0
	wide := infer(t, j)
	assert.Equal(t, 8, wide.LastBits)
	assert.Zero(t, plain.LastBits)
	assert.NotEqual(t, plain.PredictionsSHA256, wide.PredictionsSHA256)
	path := modelFile(t, cache, "a1w1l8")
	modelFile(t, cache, "a1w1")
	w, err := ReadWeights(path)
	require.NoError(t, err)
	assert.Equal(t, 8, w.Model.LastBits)
	again := &Job{Config: DefaultConfig("cora"), Backend: cpu.NewBackend(nil), Weights: w}
	again.Adopt(w)
	assert.Equal(t, 8, again.LastBits)
	r := infer(t, again)
	assert.Equal(t, wide.PredictionsSHA256, r.PredictionsSHA256)

	j.ABits, j.WBits, j.LastBits = 8, 8, 4
	assert.Zero(t, j.lastBits(), "a width it does not widen")
	j.LastBits = 0
	assert.Zero(t, j.lastBits(), "auto widens 1- and 2-bit models only")
	j.ABits, j.WBits = 2, 2
	assert.Equal(t, 8, j.lastBits())
	j.WBits = 4
	assert.Zero(t, j.lastBits(), "4-bit weights")
	j.ABits, j.WBits, j.LastBits = 2, 2, 6
	assert.Equal(t, 6, j.lastBits())
	j.LastBits = -1
	assert.Zero(t, j.lastBits(), "off")
	for _, bad := range []int{-2, 33} {
		j.LastBits = bad
		assert.Error(t, j.Config.Check(), "%d", bad)
	}
}

// TestComponent: LCC keeps the largest component (nodes 0-2 of 0-1-2 and
// 3-4) when it is on, or auto on data without a split; the split of data
// that ships one follows its nodes; a connected graph stays as it is.
func TestComponent(t *testing.T) {
	g, err := subgraph.FromEdges(5, []int32{0, 1, 3}, []int32{1, 2, 4}, subgraph.BuildOptions{Symmetrize: true})
	require.NoError(t, err)
	ds := &subgraph.Dataset{Name: "two", Graph: g, NumClasses: 2, Labels: []int32{0, 1, 0, 1, 1},
		Features: &subgraph.Features{Rows: 5, Cols: 1, Dense: []float32{0, 1, 2, 3, 4}}}
	split := *ds
	split.Train, split.Test = []int32{0, 3}, []int32{2, 4}
	for _, tt := range []struct {
		lcc  string
		ds   *subgraph.Dataset
		kept []int32
	}{
		{"", ds, []int32{0, 1, 2}},
		{LCCAuto, ds, []int32{0, 1, 2}},
		{LCCOn, ds, []int32{0, 1, 2}},
		{LCCOff, ds, nil},
		{LCCAuto, &split, nil},
		{LCCOn, &split, []int32{0, 1, 2}},
	} {
		out, kept := (&Config{LCC: tt.lcc}).Component(tt.ds)
		assert.Equal(t, tt.kept, kept, "LCC %q, split %v", tt.lcc, tt.ds.Train)
		if kept == nil {
			assert.Same(t, tt.ds, out)
			continue
		}
		assert.Equal(t, 3, out.Graph.N())
		assert.Equal(t, []int32{0, 1, 0}, out.Labels)
		assert.Equal(t, []float32{0, 1, 2}, out.Features.Dense)
		if tt.ds == &split {
			assert.Equal(t, []int32{0}, out.Train)
			assert.Equal(t, []int32{2}, out.Test)
		}
	}
	line, err := subgraph.FromEdges(3, []int32{0, 1}, []int32{1, 2}, subgraph.BuildOptions{Symmetrize: true})
	require.NoError(t, err)
	one := &subgraph.Dataset{Graph: line}
	out, kept := (&Config{LCC: LCCOn}).Component(one)
	assert.Nil(t, kept)
	assert.Same(t, one, out)
}
