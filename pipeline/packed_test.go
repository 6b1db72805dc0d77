package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/subgraph"
)

// packedFixture trains a model on dataset (6 parts, 2 per batch: 3
// batches), writes the packed batch file of the same partition and returns
// its path and the model.
func packedFixture(t *testing.T, dataset string) (string, *Weights, Config) {
	cache := t.TempDir()
	j, _ := fastJob(dataset, cache)
	j.Parts, j.Batch = 6, 2
	infer(t, j)
	w, err := ReadWeights(modelFile(t, cache, "a4w4"))
	require.NoError(t, err)
	wj := &Job{Config: j.Config, Backend: cpu.NewBackend(nil), CacheDir: cache, Weights: w}
	wj.Adopt(w)
	d, err := wj.Load()
	require.NoError(t, err)
	require.NoError(t, wj.Partition(d))
	in, err := wj.Input(d, w.Model.ABits)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), dataset+".qgpb")
	nb, err := wj.WritePacked(path, d, in)
	require.NoError(t, err)
	require.Equal(t, 3, nb)
	pf, err := subgraph.OpenPackedBatches(path)
	require.NoError(t, err)
	defer pf.Close()
	assert.Equal(t, fingerprint16(PlanFingerprint(d.Batches)), pf.Info.Partition, "the file's batches are Infer's")
	assert.Equal(t, fingerprint16(d.Fingerprint), pf.Info.Data)
	return path, w, j.Config
}

func TestInferPacked(t *testing.T) {
	for _, ds := range []string{"cora", "citeseer"} {
		t.Run(ds, func(t *testing.T) {
			path, w, c := packedFixture(t, ds)
			for _, sparse := range []string{SparseAuto, SparseOn, SparseOff} {
				c.SparseInput = sparse
				want, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).Infer()
				require.NoError(t, err)
				got, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).InferPacked(path)
				require.NoError(t, err)
				assert.Equal(t, want.PredictionsSHA256, got.PredictionsSHA256, "sparse input %s", sparse)
				assert.Equal(t, want.SparseInput, got.SparseInput, "sparse input %s", sparse)
				assert.Equal(t, 3, got.Batches)
				assert.Equal(t, want.Nodes, got.BatchNodes)
			}
		})
	}
}

// TestInferPackedStream runs the streamed pass (host workers preparing,
// devices computing) on one CPU backend and spread over two, three passes
// each, with the automatic host workers and with one: every pass predicts
// what the lanes do.
func TestInferPackedStream(t *testing.T) {
	path, w, c := packedFixture(t, "cora")
	want, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).InferPacked(path)
	require.NoError(t, err)
	require.Equal(t, "lanes", want.Mode)
	c.Passes = 3
	for _, tc := range []struct{ devices, workers int }{{1, 0}, {2, 0}, {2, 1}} {
		devices := tc.devices
		j := &Job{Config: c, Weights: w}
		if devices == 1 {
			j.Backend = cpu.NewBackend(nil)
		} else {
			j.Devices = []bmm.Backend{cpu.NewBackend(nil), cpu.NewBackend(nil)}
		}
		got, err := j.InferPackedWith(path, PackedOptions{Stream: true, Workers: tc.workers})
		require.NoError(t, err)
		assert.Equal(t, "stream", got.Mode)
		if tc.workers > 0 {
			assert.Equal(t, tc.workers, got.Workers)
		}
		assert.Positive(t, got.WarmupMS)
		assert.Equal(t, want.PredictionsSHA256, got.PredictionsSHA256, "%d devices", devices)
		assert.Equal(t, want.BatchNodes, got.BatchNodes)
		assert.True(t, got.SameAsFirst)
		assert.Len(t, got.MorePassMS, 2)
		require.Len(t, got.Devices, devices)
		batches := 0
		for _, d := range got.Devices {
			batches += d.Batches
		}
		assert.Equal(t, 3, batches, "each batch on one device")
	}
	t.Run("other data", func(t *testing.T) {
		o := *w.Origin
		o.Data = "00112233445566778899aabbccddeeff"
		other := *w
		other.Origin = &o
		got, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: &other}).InferPackedWith(path, PackedOptions{OtherData: true})
		require.NoError(t, err)
		assert.Equal(t, want.PredictionsSHA256, got.PredictionsSHA256)
	})
}

// TestInferPackedResident: --resident streams the file once onto the
// devices (backends that copy what they are given, as GPUs do), and the
// later passes, run from their memory, predict what the lanes do; on the
// CPU's own backend, which reads the host's arrays in place, it is refused
// in one line.
func TestInferPackedResident(t *testing.T) {
	path, w, c := packedFixture(t, "cora")
	want, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).InferPacked(path)
	require.NoError(t, err)
	c.Passes = 3
	for _, devices := range []int{1, 2} {
		j := &Job{Config: c, Weights: w}
		for range devices {
			j.Devices = append(j.Devices, bmmtest.Copying(cpu.NewBackend(nil)))
		}
		got, err := j.InferPackedWith(path, PackedOptions{Resident: true})
		require.NoError(t, err)
		assert.Equal(t, "resident", got.Mode)
		assert.Equal(t, want.PredictionsSHA256, got.PredictionsSHA256, "%d devices", devices)
		assert.True(t, got.SameAsFirst)
		assert.Len(t, got.MorePassMS, 2)
		require.Len(t, got.Devices, devices)
		for _, d := range got.Devices {
			assert.Len(t, d.ResidentMS, 2, "%s", d.Device)
		}
	}
	_, err = (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).InferPackedWith(path, PackedOptions{Resident: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in place")
	assert.NotContains(t, err.Error(), "\n")
}

func TestInferPackedRefuses(t *testing.T) {
	path, w, c := packedFixture(t, "cora")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	run := func(t *testing.T, file string, w *Weights) error {
		_, err := (&Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}).InferPacked(file)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "\n")
		return err
	}
	t.Run("truncated", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "t.qgpb")
		require.NoError(t, os.WriteFile(file, data[:len(data)/2], 0o644))
		assert.ErrorIs(t, run(t, file, w), subgraph.ErrPackFile)
	})
	t.Run("other data", func(t *testing.T) {
		o := *w.Origin
		o.Data = "00112233445566778899aabbccddeeff"
		other := *w
		other.Origin = &o
		assert.Contains(t, run(t, path, &other).Error(), "was trained on data 00112233")
	})
	t.Run("other scale", func(t *testing.T) {
		o := *w.Origin
		o.FeatureScale = "none"
		other := *w
		other.Origin = &o
		assert.Contains(t, run(t, path, &other).Error(), `model`)
	})
	t.Run("no model", func(t *testing.T) {
		assert.ErrorIs(t, run(t, path, nil), ErrData)
	})
}
