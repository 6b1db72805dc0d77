package npy

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeader: the headers NumPy writes for these shapes (np.save, format
// 1.0), byte for byte, each a multiple of 64 long.
func TestHeader(t *testing.T) {
	for _, c := range []struct {
		descr string
		dims  []int
		dict  string
	}{
		{"<i4", []int{5}, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }"},
		{"<f4", []int{3, 7}, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 7), }"},
		{"<i4", []int{0}, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }"},
	} {
		h := Header(c.descr, c.dims...)
		require.Zero(t, len(h)%64, "%v", c.dims)
		require.Equal(t, "\x93NUMPY\x01\x00", string(h[:8]))
		require.Equal(t, len(h)-10, int(binary.LittleEndian.Uint16(h[8:])))
		require.Equal(t, c.dict, string(bytes.TrimRight(h[10:], " \n")))
		require.Equal(t, byte('\n'), h[len(h)-1])
	}
}

func TestWrite(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	h := Header("<f4", 2, 3)
	require.Equal(t, h, b.Bytes()[:len(h)])
	require.Equal(t, 4*6, b.Len()-len(h))
	require.Error(t, Write(&b, []int32{1, 2}, 3))
	require.Error(t, Write(&b, []int64{1}, 1))
}
