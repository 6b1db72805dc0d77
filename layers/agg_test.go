package layers

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// TestQAggModesMatchSimulation runs every aggregation mode (the packed
// 1-bit adjacency, and the edge list over byte codes) with the CPU backend
// and the generic one, with packed and sparse first products, and checks
// each against the float64 simulation: the codes between ops and every
// logit bit. Inputs of more than 8 bits fall back to the dense product.
func TestQAggModesMatchSimulation(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, tc := range []struct {
			bits   [2]int
			binary bool
		}{{[2]int{1, 1}, true}, {[2]int{2, 3}, false}, {[2]int{4, 4}, true}, {[2]int{4, 4}, false}, {[2]int{8, 8}, true}, {[2]int{12, 4}, false}, {[2]int{3, 12}, true}} {
			bits := tc.bits
			m, d, in := qPrepared(t, kind, bits[0], bits[1], 3, tc.binary)
			for _, k := range testBackends() {
				for _, mode := range []AggMode{AggDense, AggSparse} {
					name := fmt.Sprintf("%s/a=%d/w=%d/binary=%v/%s/%s", kind, bits[0], bits[1], tc.binary, k.Name(), mode)
					t.Run(name, func(t *testing.T) {
						plan, err := m.Compile(k)
						require.NoError(t, err)
						defer plan.Close()
						plan.Agg = mode
						for _, b := range d.Eval {
							st, want, err := m.simForward(b, in, true, -1, 0, nil)
							require.NoError(t, err)
							check := func(what string) Trace {
								return func(op int, codes *bittensor.Tensor) {
									if codes != nil {
										require.Equal(t, st.codes[op], codes.Ints(), "%s: codes of op %d", what, op)
									}
								}
							}
							x, err := in.Pack(b.Nodes)
							require.NoError(t, err)
							got, _, err := plan.Forward(b, x, check("packed"))
							require.NoError(t, err)
							sp, _, err := plan.ForwardSparse(b, in, check("sparse first"))
							require.NoError(t, err)
							require.Len(t, got, len(want))
							require.Len(t, sp, len(want))
							for i := range want {
								require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "logit %d", i)
								require.Equal(t, math.Float32bits(want[i]), math.Float32bits(sp[i]), "sparse first: logit %d", i)
							}
						}
					})
				}
			}
		}
	}
}

// TestQAggAuto checks the automatic choice, the backend's: a backend
// whose cost model prefers the dense product stays dense, and on the CPU a
// sparse batch runs from its edge list.
func TestQAggAuto(t *testing.T) {
	m, d, _ := qPrepared(t, GCN, 4, 4, 3, false)
	plan, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	b := d.Eval[0]
	assert.True(t, plan.edges(b), "%d edges in %d tiles", len(b.Indices), b.tiles)
	other, err := m.Compile(denseBackend{cpu.NewBackend(nil)})
	require.NoError(t, err)
	assert.False(t, other.edges(b))
	other.Agg = AggSparse
	assert.True(t, other.edges(b))
	plan.Agg = AggDense
	assert.False(t, plan.edges(b))

	for _, s := range []string{"auto", "dense", "sparse"} {
		mode, err := ParseAggMode(s)
		require.NoError(t, err)
		assert.Equal(t, s, mode.String())
	}
	_, err = ParseAggMode("edges")
	assert.ErrorIs(t, err, ErrModel)
}

// denseBackend is a backend whose cost model always prefers the dense
// product, as a GPU's may.
type denseBackend struct{ bmm.Backend }

func (denseBackend) PreferEdges(bmm.AggCost) bool { return false }
