package layers

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// TestQRunReusesOutputStorage: Plan.Run keeps each op's output storage
// from one batch to the next (opBufs). Over batches of unequal sizes (a
// smaller batch after a larger one reuses storage that still holds the
// larger one's values), every logit equals the one a forward with fresh
// storage computes, bit for bit, and Run's predictions are their argmax.
func TestQRunReusesOutputStorage(t *testing.T) {
	for _, kind := range []string{GCN, GIN} {
		for _, tc := range []struct {
			abits, wbits int
			binary       bool
		}{{1, 1, true}, {4, 4, false}, {4, 4, true}, {12, 4, false}} {
			ds := qSynth(t, 300, 4, 40, tc.binary, 3)
			parts := make([]int32, ds.Graph.N())
			for v := range parts {
				switch {
				case v < 170:
					parts[v] = 0
				case v < 200:
					parts[v] = 1
				default:
					parts[v] = 2
				}
			}
			d, err := NewData(ds, parts, 3, 1)
			require.NoError(t, err)
			in, err := QuantizeInput(ds.Features, tc.abits)
			require.NoError(t, err)
			m, err := NewModel(kind, 40, 16, 4, 2, tc.abits, tc.wbits, 5)
			require.NoError(t, err)
			_, err = m.TrainFP32(d, in, TrainConfig{Epochs: 2, LR: 0.01, Seed: 1})
			require.NoError(t, err)
			require.NoError(t, m.Calibrate(d, in, 0))
			for _, mode := range []AggMode{AggDense, AggSparse} {
				for _, sparse := range []bool{false, true} {
					name := fmt.Sprintf("%s/a=%d/w=%d/binary=%v/%s/sparse-input=%v", kind, tc.abits, tc.wbits, tc.binary, mode, sparse)
					t.Run(name, func(t *testing.T) {
						plan, err := m.Compile(bmm.Default())
						require.NoError(t, err)
						plan.Agg = mode
						bufs := make([]opBufs, len(plan.ops))
						want := make([]int32, ds.Graph.N())
						for i := range want {
							want[i] = -1
						}
						// Large, small, middle, then the large one again.
						for _, bi := range []int{0, 1, 2, 0} {
							b := d.Eval[bi]
							var x *bittensor.Tensor
							var sx *Input
							if sparse {
								sx = in
							} else {
								x, err = in.Pack(b.Nodes)
								require.NoError(t, err)
							}
							fresh, _, err := plan.forward(b, x, sx, nil, nil)
							require.NoError(t, err)
							reused, _, err := plan.forward(b, x, sx, nil, bufs)
							require.NoError(t, err)
							require.Len(t, reused, len(fresh))
							for i := range fresh {
								require.Equal(t, math.Float32bits(fresh[i]), math.Float32bits(reused[i]), "batch %d logit %d", bi, i)
							}
							Argmax(want, fresh, m.Classes, b.Nodes)
						}
						run, err := plan.Run(d, in, sparse, nil)
						require.NoError(t, err)
						require.Equal(t, want, run.Pred)
					})
				}
			}
		}
	}
}
