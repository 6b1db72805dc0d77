package bmmtest_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
)

// mutant is bmm.Generic with one deliberate bug; the suite must catch each.
type mutant struct {
	bmm.Generic
	bug string
}

func (k mutant) MulInt(dst []int32, a, b *bittensor.Tensor) error {
	if err := k.Generic.MulInt(dst, a, b); err != nil {
		return err
	}
	n := len(dst)
	switch {
	case k.bug == "skiplast" && n > 0:
		dst[n-1] = -0x21524111 // what the suite poisons with: the element "was not written"
	case k.bug == "wrongbig" && a.Cols() > 256 && n > 0:
		dst[n/2]++
	}
	return nil
}

func (k mutant) MulFloat(dst []float32, a, b *bittensor.Tensor, ep *bmm.Epilogue) error {
	if err := k.Generic.MulFloat(dst, a, b, ep); err != nil {
		return err
	}
	if k.bug == "fused" && ep != nil && ep.RowTerm != nil {
		// Recompute with float64 intermediates: differs in the last bit now and then.
		c := make([]int32, len(dst))
		_ = k.Generic.MulInt(c, a, b)
		n := b.Cols()
		for i := range dst {
			m, j := i/n, i%n
			v := float64(c[i])
			if ep.ColScale != nil {
				v *= float64(ep.ColScale[j])
			}
			v += float64(ep.RowTerm[m]) * float64(ep.ColTerm[j])
			dst[i] = float32(v)
		}
	}
	return nil
}

func (k mutant) MulBit(dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant) error {
	if err := k.Generic.MulBit(dst, a, b, ep, rq); err != nil {
		return err
	}
	if k.bug == "padding" && dst.Lines() < dst.PaddedLines() {
		dst.Words()[len(dst.Words())-1] |= 1 << 63
	}
	if k.bug == "highplane" && dst.Bits() > 8 && dst.Rows()*dst.Cols() > 0 {
		clear(dst.Plane(dst.Bits() - 1))
	}
	if k.bug == "scribble" && len(a.Words()) > 0 {
		a.Words()[len(a.Words())-1] ^= 1 << 63 // a padding bit of A
	}
	return nil
}

// TestMutantsAreCaught runs the suite on each mutant in a child process
// and requires it to fail, naming the kernel and the seed.
func TestMutantsAreCaught(t *testing.T) {
	if bug := os.Getenv("BMMTEST_MUTANT"); bug != "" {
		bmmtest.Conformance(t, mutant{bug: bug})
		return
	}
	if testing.Short() {
		t.Skip("runs the suite six more times in child processes; not in -short")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, bug := range []string{"skiplast", "wrongbig", "fused", "padding", "highplane", "scribble"} {
		t.Run(bug, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestMutantsAreCaught$", "-test.short")
			cmd.Env = append(os.Environ(), "BMMTEST_MUTANT="+bug)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the suite passed a kernel with bug %q:\n%s", bug, out)
			assert.Contains(t, string(out), `bmmtest: kernel "generic" failed with seed`)
		})
	}
}

// TestGenericPasses is the control: the unmodified reference passes.
func TestGenericPasses(t *testing.T) {
	bmmtest.Conformance(t, mutant{})
}

func TestPaddingClear(t *testing.T) {
	x, err := bittensor.New(3, 70, 2, bittensor.ByRows, bittensor.Padding{Lines: 4, Bits: 128})
	require.NoError(t, err)
	require.NoError(t, bmmtest.PaddingClear(x))
	x.Set(2, 69, 3)
	require.NoError(t, bmmtest.PaddingClear(x))
	x.Line(1, 2)[1] |= 1 << 6 // column 70: past K
	err = bmmtest.PaddingClear(x)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plane 1, line 2")
	x.Line(1, 2)[1] &^= 1 << 6
	x.Line(0, 3)[0] = 1 // a padding line
	assert.ErrorContains(t, bmmtest.PaddingClear(x), "plane 0, line 3")
}

func TestBackendGeneric(t *testing.T) {
	bmmtest.TestBackend(t, func(*testing.T) bmm.Backend { return bmm.NewGenericBackend() })
}
