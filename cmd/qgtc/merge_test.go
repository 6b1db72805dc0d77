package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/pipeline"
)

// TestInferShardsMerge: what the README's job array runs. The shards of a
// partition file merge into the unsharded --out byte for byte; a missing
// or repeated shard fails in one line naming it; bad --shard flags are
// usage errors.
func TestInferShardsMerge(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("QGTC_CACHE", filepath.Join(dir, "cache"))
	part := filepath.Join(dir, "cora-k5.part")
	code, _, errs := runCLI("partition", "--quiet", "--dataset", "cora", "--parts", "5", "--out", part)
	require.Equal(t, 0, code, errs)
	infer := func(args ...string) string {
		code, out, errs := runCLI(append([]string{"infer", "--dataset", "cora", "--partition", part, "--epochs", "5", "--qat-epochs", "1", "--quiet"}, args...)...)
		require.Equal(t, 0, code, errs)
		return out
	}
	whole := filepath.Join(dir, "preds.npy")
	assert.Contains(t, infer("--out", whole), "predictions  written to "+whole)
	var shards []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("preds-%d", i))
		assert.Contains(t, infer("--shard", fmt.Sprintf("%d/3", i), "--out", f), fmt.Sprintf("shard        %d/3: batches ", i))
		shards = append(shards, f)
	}
	merged := filepath.Join(dir, "merged.npy")
	code, out, errs := runCLI(append([]string{"merge", "--out", merged}, shards...)...)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "3 shards merged into "+merged)
	want, err := os.ReadFile(whole)
	require.NoError(t, err)
	got, err := os.ReadFile(merged)
	require.NoError(t, err)
	assert.Equal(t, want, got, "merged = unsharded, byte for byte")

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"merge", "--out", merged, shards[0], shards[2]}, 1, "shard 1/3 (batches 1-2) is missing"},
		{[]string{"merge", "--out", merged, shards[0], shards[1], shards[1], shards[2]}, 1, "shard file " + shards[1] + " repeats shard 1/3"},
		{[]string{"merge", "--out", merged, shards[0], whole, shards[2]}, 1, "shard file " + whole + ": "},
		{[]string{"merge", shards[0]}, 2, "--out is required"},
		{[]string{"merge", "--out", merged}, 2, "merge wants the shard files"},
		{[]string{"infer", "--dataset", "cora", "--shard", "3/3", "--out", merged}, 2, `--shard "3/3" is not i/n`},
		{[]string{"infer", "--dataset", "cora", "--shard", "1/3"}, 2, "--shard 1/3 needs --out"},
	} {
		code, _, errs := runCLI(c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Contains(t, errs, c.want, "%v", c.args)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	}
}

// TestInferSeveralGPUs: --device gpu:all and gpu:I,J open one backend per
// GPU and share the batches; CPU backends stand in for the GPUs here (the
// GPU host runs bench/multigpu/run.sh). The predictions are the CPU run's.
func TestInferSeveralGPUs(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	open, count := openGPUBackend, gpuCount
	t.Cleanup(func() { openGPUBackend, gpuCount = open, count })
	var opened []int
	openGPUBackend = func(i int) (bmm.Backend, io.Closer, error) {
		if i == 5 {
			return nil, nil, errors.New("no such device")
		}
		opened = append(opened, i)
		be := cpu.NewBackend(nil)
		return be, be, nil
	}
	gpuCount = func() (int, error) { return 3, nil }
	infer := func(device string) pipeline.Report {
		code, out, errs := runCLI("infer", "--dataset", "cora", "--parts", "4", "--epochs", "2", "--qat-epochs", "0", "--passes", "2", "--resident", "--json", "--quiet", "--device", device)
		require.Equal(t, 0, code, errs)
		var r pipeline.Report
		require.NoError(t, json.Unmarshal([]byte(out), &r))
		return r
	}
	want := infer("cpu")
	for _, c := range []struct {
		device string
		names  []string
	}{
		{"gpu:all", []string{"gpu:0", "gpu:1", "gpu:2"}},
		{"gpu:2,0", []string{"gpu:2", "gpu:0"}},
	} {
		opened = nil
		r := infer(c.device)
		assert.Equal(t, want.PredictionsSHA256, r.PredictionsSHA256, c.device)
		var names []string
		batches := 0
		for _, d := range r.Devices {
			names, batches = append(names, d.Device), batches+d.Batches
		}
		assert.Equal(t, c.names, names, c.device)
		assert.Equal(t, 4, batches, c.device)
		assert.Len(t, opened, len(c.names))
		assert.Positive(t, r.PassMedianMS)
	}
	r := infer("gpu:1")
	assert.Empty(t, r.Devices, "one GPU runs as --device gpu does")
	assert.Equal(t, want.PredictionsSHA256, r.PredictionsSHA256)
	code, out, errs := runCLI("infer", "--dataset", "cora", "--parts", "4", "--epochs", "2", "--qat-epochs", "0", "--quiet", "--device", "gpu:0,1")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, `device +gpu:1: batches 2-3 \(2, [0-9]+ nodes\)`, out)
	for _, c := range []struct {
		device string
		code   int
		want   string
	}{
		{"gpu:0,0", 2, `--device "gpu:0,0": want gpu:all or distinct GPU numbers`},
		{"gpu:x", 2, `--device "gpu:x"`},
		{"gpu:", 2, `--device "gpu:"`},
		{"gpu:0,5", 1, "opening GPU 5: no such device"},
	} {
		code, _, errs := runCLI("infer", "--dataset", "cora", "--quiet", "--device", c.device)
		assert.Equal(t, c.code, code, c.device)
		assert.Contains(t, errs, c.want, c.device)
	}
}
