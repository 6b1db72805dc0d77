package layers

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// uploadLog is the generic backend noting every tensor uploaded.
type uploadLog struct {
	bmm.Backend
	bits []*bittensor.Tensor
}

func (u *uploadLog) UploadBits(t *bittensor.Tensor) (bmm.Bits, error) {
	u.bits = append(u.bits, t)
	return u.Backend.UploadBits(t)
}

// TestColdPassPacksOnce: a pass that uploads its batches each time (not
// resident) uploads, from the second pass on, the very tensors of the
// first: the packed feature planes each batch (or the merged batch) made
// once and kept, never packed again, whatever the merge.
func TestColdPassPacksOnce(t *testing.T) {
	for _, kind := range []string{GCN, SAGE} {
		m, d, in := unequalData(t, kind, 4, 4, false)
		for _, merge := range []MergeMode{MergeOn, MergeOff} {
			for _, agg := range []AggMode{AggDense, AggSparse} {
				t.Run(fmt.Sprintf("%s/merge=%v/agg=%v", kind, merge, agg), func(t *testing.T) {
					be := &uploadLog{Backend: bmm.NewGenericBackend()}
					p, err := m.Compile(be)
					require.NoError(t, err)
					defer p.Close()
					p.Merge, p.Agg = merge, agg
					var passes [3][]*bittensor.Tensor
					for i := range passes {
						be.bits = nil
						run, err := p.Run(d, in, false, nil)
						require.NoError(t, err)
						require.False(t, run.Replayed)
						passes[i] = be.bits
					}
					var feats int
					for _, x := range passes[0] {
						if x.Cols() == in.Cols && x.Bits() == in.Params.Bits {
							feats++
						}
					}
					require.Positive(t, feats, "the first pass uploads packed features")
					for i := 1; i < len(passes); i++ {
						require.Len(t, passes[i], len(passes[0]), "pass %d", i)
						for j := range passes[0] {
							require.Same(t, passes[0][j], passes[i][j], "pass %d, upload %d (%d×%d): packed again", i, j, passes[i][j].Rows(), passes[i][j].Cols())
						}
					}
				})
			}
		}
	}
}
