package cpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// TestBackendConformance runs the backend suite on every bit-kernel path
// this CPU has, each with the vector aggregation kernel on and off.
func TestBackendConformance(t *testing.T) {
	for _, k := range kernels(t) {
		for _, vec := range aggPaths() {
			name := k.Name() + map[bool]string{true: "/aggvec", false: "/agggo"}[vec]
			t.Run(name, func(t *testing.T) {
				withAggAsm(t, vec, func() {
					bmmtest.TestBackend(t, func(*testing.T) bmm.Backend { return NewBackend(k) })
				})
			})
		}
	}
}

// TestBackendZeroCopy: operands are the caller's memory, outputs included.
func TestBackendZeroCopy(t *testing.T) {
	b := NewBackend(nil)
	assert.Equal(t, "cpu/"+Path(), b.Name())
	x, err := bittensor.PackRows([]int32{1, 2, 3, 0, 1, 2}, 2, 3, 2)
	require.NoError(t, err)
	w, err := bittensor.PackCols([]int32{1, 1, 1, 2, 0, 1}, 3, 2, 2)
	require.NoError(t, err)
	d, err := bittensor.New(2, 2, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	xo, err := b.UploadBits(x)
	require.NoError(t, err)
	wo, err := b.UploadBits(w)
	require.NoError(t, err)
	do, err := b.UploadBits(d)
	require.NoError(t, err)
	require.NoError(t, b.MulBit(do, xo, wo, nil, bmm.Requant{Scale: 1}))
	assert.Equal(t, []int32{3, 8, 1, 4}, d.Ints(), "MulBit wrote the uploaded tensor")

	logits := make([]float32, 4)
	lo, err := b.UploadVector(logits)
	require.NoError(t, err)
	require.NoError(t, b.MulFloat(lo, xo, wo, nil))
	assert.Equal(t, []float32{3, 8, 1, 4}, logits, "MulFloat wrote the uploaded slice")

	vals := make([]uint8, 2*CodesAlign)
	vals[3] = 5
	co, err := b.UploadCodes(vals, 2, CodesAlign, 3)
	require.NoError(t, err)
	assert.Same(t, &vals[0], &co.(*codesOperand).c.data[0], "whole-group rows are wrapped, not copied")
	assert.Equal(t, int64(2), b.Traffic().Ops)
	assert.Zero(t, b.Traffic().HostToDevice+b.Traffic().DeviceToHost)
}

// TestBackendPreferEdges pins the cost model that QAggAuto used before
// the backend: edges against non-zero tiles × 64·256 bit-MACs × width.
func TestBackendPreferEdges(t *testing.T) {
	b := NewBackend(nil)
	perEdge := 1.0
	if AggVectorized() {
		perEdge = 1.0 / 16
	}
	tiles, bits := 10, 4
	even := int(float64(tiles) * 64 * 256 * float64(bits) / 200 / perEdge) // where both cost the same
	assert.True(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: even - 8, DenseTiles: tiles, Bits: bits}))
	assert.False(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: even + 8, DenseTiles: tiles, Bits: bits}))
	assert.False(t, b.PreferEdges(bmm.AggCost{Rows: 640, Cols: 64, Edges: 1, DenseTiles: 0, Bits: bits}), "no tile: nothing to multiply")
}
