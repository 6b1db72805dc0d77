package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
)

// --profile-kernels reports the repeated groups only (the steady passes),
// all of them when nothing repeats, and is refused on the CPU with a usage
// error before anything is trained.
func TestInferKernels(t *testing.T) {
	g := []bmm.KernelGroup{{Segments: 19, MS: 0.3}, {Segments: 2}, {Segments: 1, MS: 5}}
	assert.Equal(t, g[:2], repeatedKernels(g))
	assert.Equal(t, g[2:], repeatedKernels(g[2:]))
	assert.Empty(t, repeatedKernels(nil))
	var out bytes.Buffer
	printKernels(&out, []bmm.KernelGroup{{Segments: 19, MS: 0.25, Kernels: []bmm.KernelStat{{Op: "AggFloat", Kernel: "agg", Grid: 1713, Block: 256, MS: 0.25}}}})
	assert.Contains(t, out.String(), "0.250 ms  AggFloat  agg (1713×256)")
	err := runInfer([]string{"--dataset", "cora", "--device", "cpu", "--profile-kernels", "--quiet"}, &out)
	require.Error(t, err)
	assert.ErrorIs(t, err, errUsage)
}
