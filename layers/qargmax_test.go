package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQArgmaxFirstLargest checks Argmax against the running-best scan it
// replaced: ties go to the first, NaNs are never taken, a NaN first is kept.
func TestQArgmaxFirstLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	nan := float32(math.NaN())
	for it := 0; it < 20000; it++ {
		c := 1 + r.IntN(12)
		row := make([]float32, c)
		for j := range row {
			row[j] = float32(r.IntN(5))
			if r.IntN(8) == 0 {
				row[j] = nan
			}
		}
		bv, want := row[0], 0
		for j, x := range row {
			if x > bv {
				bv, want = x, j
			}
		}
		pred := make([]int32, 1)
		Argmax(pred, row, c, []int32{0})
		require.Equal(t, int32(want), pred[0], "%v", row)
	}
}
