package bittensor_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
)

// TestTileMask checks Set, NonZero, Count and Coarsen against a
// tile-by-tile scan of the entries, over awkward sizes and tiles, on sparse
// random matrices (most tiles empty, some not).
func TestTileMask(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, 65, 257, 300} {
		for _, m := range []int{1, 64, 255, 513} {
			for _, tile := range [][2]int{{1, 256}, {16, 256}, {3, 64}, {64, 256}} {
				t.Run(fmt.Sprintf("%dx%d/tile=%dx%d", n, m, tile[0], tile[1]), func(t *testing.T) {
					got := bittensor.NewTileMask(n, m, tile[0], tile[1])
					rt, ct := (n+tile[0]-1)/tile[0], (m+tile[1]-1)/tile[1]
					require.Equal(t, rt, got.RowTiles)
					require.Equal(t, ct, got.ColTiles)
					want := make([]bool, rt*ct)
					count := 0
					for i := 0; i < n; i++ {
						for j := 0; j < m; j++ {
							if r.IntN(97) != 0 {
								continue
							}
							got.Set(i, j)
							k := (i/tile[0])*ct + j/tile[1]
							if !want[k] {
								count++
							}
							want[k] = true
						}
					}
					for a := 0; a < rt; a++ {
						for b := 0; b < ct; b++ {
							assert.Equal(t, want[a*ct+b], got.NonZero(a, b), "tile (%d, %d)", a, b)
						}
					}
					assert.Equal(t, count, got.Count())
					c := got.Coarsen(4)
					for a := 0; a < c.RowTiles; a++ {
						for b := 0; b < ct; b++ {
							any := false
							for k := 4 * a; k < min(rt, 4*a+4); k++ {
								any = any || want[k*ct+b]
							}
							assert.Equal(t, any, c.NonZero(a, b), "coarse tile (%d, %d)", a, b)
						}
					}
				})
			}
		}
	}
}

func TestTileMaskPanics(t *testing.T) {
	assert.Panics(t, func() { bittensor.NewTileMask(4, 4, 0, 64) })
	m := bittensor.NewTileMask(4, 4, 1, 64)
	assert.Panics(t, func() { m.Coarsen(0) })
}
