package bmm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupKernels: segments that launched the same kernels in the same
// order form one group with each kernel's median; a segment of other
// kernels (a first pass, with its uploads between) is a group of its own,
// after the repeated one; empty segments count nowhere.
func TestGroupKernels(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * 1e6) }
	pass := func(a, b float64) []KernelTime {
		return []KernelTime{
			{Op: "MulCodes", Kernel: "bmm_mma 64x32", Grid: 430, Block: 128, Dur: ms(a)},
			{Op: "AggFloat", Kernel: "agg", Grid: 1713, Block: 256, Dur: ms(b)},
		}
	}
	first := []KernelTime{{Op: "MulCodes", Kernel: "bmm_mma 64x32", Grid: 430, Block: 128, Dur: ms(9)}}
	other := pass(1, 1)
	other[1].Grid = 7 // another batch's shape
	g := GroupKernels([][]KernelTime{first, pass(0.1, 0.3), {}, pass(0.3, 0.2), other, pass(0.2, 0.1), pass(0.4, 0.4)})
	require.Len(t, g, 3)
	assert.Equal(t, 4, g[0].Segments)
	require.Len(t, g[0].Kernels, 2)
	assert.InDelta(t, 0.25, g[0].Kernels[0].MS, 1e-9, "median of 0.1 0.2 0.3 0.4")
	assert.InDelta(t, 0.25, g[0].Kernels[1].MS, 1e-9)
	assert.InDelta(t, 0.5, g[0].MS, 1e-9)
	assert.Equal(t, "AggFloat", g[0].Kernels[1].Op)
	assert.Equal(t, 1713, g[0].Kernels[1].Grid)
	// The two single segments, the longer first.
	assert.Equal(t, 1, g[1].Segments)
	assert.InDelta(t, 9, g[1].MS, 1e-9)
	assert.Equal(t, 7, g[2].Kernels[1].Grid)
	assert.Empty(t, GroupKernels(nil))
}
