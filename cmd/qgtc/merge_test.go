package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
