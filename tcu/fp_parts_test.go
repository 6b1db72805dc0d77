package tcu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartOrder(t *testing.T) {
	parts := []int32{2, 0, 1, 0, 2, 2, 1}
	order, starts, err := partOrder(len(parts), parts, 4)
	require.NoError(t, err)
	require.Equal(t, []int32{1, 3, 2, 6, 0, 4, 5}, order, "part by part, each in node order")
	require.Equal(t, []int32{0, 2, 4, 7, 7}, starts, "part 3 is empty")
	for _, c := range []struct {
		parts []int32
		k     int
		want  string
	}{{parts[:6], 4, "partition of 6 nodes for a graph of 7 rows"}, {parts, 0, "0 parts"}, {parts, 8, "8 parts for 7 nodes"},
		{[]int32{0, 1, 0, 3, 0, 0, 0}, 3, "node 3 is in part 3"}, {[]int32{0, -1, 0, 0, 0, 0, 0}, 3, "node 1 is in part -1"}} {
		_, _, err := partOrder(7, c.parts, c.k)
		require.ErrorIs(t, err, ErrShape)
		require.ErrorContains(t, err, c.want)
	}
}

// TestFPPartsSpMM runs every message × reduction on partitioned square
// graphs (UploadCSRParts, rows in part order) against templates.SpMM
// (relative 1e-5) at every conformance width.
func TestFPPartsSpMM(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(24, 9))
	for _, ids := range []bool{false, true} {
		g := skewedCSR(r, fpSpMMSources, fpSpMMSources, ids)
		n := g.Rows()
		const k = 5
		parts := make([]int32, n)
		for v := range parts {
			parts[v] = int32(r.IntN(k))
		}
		dg, err := d.UploadCSRParts(g, parts, k)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		hr, _ := dg.HeavyRows()
		require.Positive(t, hr, "the graph has rows past the heavy limit")
		require.Equal(t, k, dg.Parts())
		for _, f := range fpWidths {
			spmmWidth(t, d, r, fmt.Sprintf("ids=%v/f=%d", ids, f), g, n, f, dg)
		}
	}
}
