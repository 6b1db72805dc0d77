package tcu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckOrder(t *testing.T) {
	require.NoError(t, checkOrder(4, []int32{2, 0, 3, 1}))
	require.NoError(t, checkOrder(0, nil))
	for _, c := range []struct {
		order []int32
		want  string
	}{{[]int32{0, 1, 2}, "a visiting order of 3 rows for a graph of 4"}, {[]int32{0, 1, 1, 3}, "entry 2 is row 1"},
		{[]int32{0, 4, 2, 3}, "entry 1 is row 4"}, {[]int32{0, 1, -1, 3}, "entry 2 is row -1"}} {
		err := checkOrder(4, c.order)
		require.ErrorIs(t, err, ErrShape)
		require.ErrorContains(t, err, c.want)
	}
}

// randOrder is a random visiting order of n rows.
func randOrder(r *rand.Rand, n int) []int32 {
	order := make([]int32, n)
	for i, v := range r.Perm(n) {
		order[i] = int32(v)
	}
	return order
}

// TestFPOrderedSpMM runs every message × reduction on square graphs
// uploaded with a random visiting order (UploadCSROrder) against
// templates.SpMM (relative 1e-5) at every conformance width.
func TestFPOrderedSpMM(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(24, 9))
	for _, ids := range []bool{false, true} {
		g := skewedCSR(r, fpSpMMSources, fpSpMMSources, ids)
		n := g.Rows()
		dg, err := d.UploadCSROrder(g, randOrder(r, n))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		hr, _ := dg.HeavyRows()
		require.Positive(t, hr, "the graph has rows past the heavy limit")
		require.True(t, dg.Ordered())
		for _, f := range fpWidths {
			spmmWidth(t, d, r, fmt.Sprintf("ids=%v/f=%d", ids, f), g, n, f, dg)
		}
	}
}
