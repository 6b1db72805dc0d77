package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The GPU rows of `qgtc bench bmm` multiply the A the CPU rows do: the
// shape's density of non-zero values, inside the diagonal blocks only.
func TestGPUBenchOperands(t *testing.T) {
	for _, tc := range []struct {
		name string
		sh   benchShape
	}{
		{"dense", benchShape{M: 256, K: 256, N: 32, ABits: 1, BBits: 4, Density: 0.5}},
		{"blockdiag", benchShape{M: 256, K: 256, N: 16, ABits: 1, BBits: 2, Density: 0.32, BlockDiag: 16}},
		{"wide", benchShape{M: 64, K: 128, N: 8, ABits: 3, BBits: 16, Density: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sh
			a, b, err := gpuBenchOperands(rand.New(rand.NewPCG(3, 4)), s)
			require.NoError(t, err)
			assert.Equal(t, benchA(s, rand.New(rand.NewPCG(3, 4))), a.Ints(), "A is benchA's")
			require.Equal(t, []int{s.K, s.N, s.BBits}, []int{b.Rows(), b.Cols(), b.Bits()})
			nz, in := 0, 0
			for i, v := range a.Ints() {
				row, col := i/s.K, i%s.K
				if s.BlockDiag > 0 && row/s.BlockDiag != col/s.BlockDiag {
					require.Zero(t, v, "A[%d][%d] lies outside the diagonal blocks", row, col)
					continue
				}
				in++
				if v != 0 {
					nz++
				}
			}
			assert.InDelta(t, s.Density, float64(nz)/float64(in), 0.05, "non-zero fraction of A")
			for i, v := range b.Ints() {
				require.True(t, v >= 0 && v < 1<<s.BBits, "B value %d: %d", i, v)
			}
		})
	}
	_, _, err := gpuBenchOperands(rand.New(rand.NewPCG(1, 1)), benchShape{M: 4, K: 4, N: 4, ABits: 1, BBits: 17})
	assert.ErrorIs(t, err, errUsage)
}
