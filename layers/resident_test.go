package layers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/bmm/bmmtest"
	"github.com/qgtc/qgtc/cpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poisoned returns a copy of pb whose Release overwrites its features and
// feature scales, as a packed loader reuses its buffers for later batches.
func poisoned(pb *PackedBatch) *PackedBatch {
	c := *pb
	c.Feat = pb.Feat.Clone()
	c.FeatScale = slices.Clone(pb.FeatScale)
	c.Nodes = slices.Clone(pb.Nodes)
	c.Release = func() {
		w := c.Feat.Words()
		for i := range w {
			w[i] = ^uint64(0)
		}
		for i := range c.FeatScale {
			c.FeatScale[i] = -7
		}
		for i := range c.Nodes {
			c.Nodes[i] = 0
		}
	}
	return &c
}

// TestKeepPackedStream: a stream that keeps its batches on copying
// backends predicts what Run predicts, and so does every later pass from
// the kept inputs alone (for GCN, GIN and SAGE, dense or edge-list
// aggregations, sparse or dense first products, one device or three),
// though each batch's host arrays were overwritten once it was queued;
// those passes load and upload nothing. Free leaves nothing kept.
func TestKeepPackedStream(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		m, d, in := manyBatches(t, kind, 4, 4, false)
		ref, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(t, err)
		defer ref.Close()
		packed := make([]*PackedBatch, len(d.Eval))
		for i, b := range d.Eval {
			packed[i] = packedOf(t, b, in)
		}
		for _, mode := range []AggMode{AggDense, AggSparse} {
			for _, sparse := range []bool{false, true} {
				for _, devices := range []int{1, 3} {
					t.Run(fmt.Sprintf("%s/%s/sparse=%v/devices=%d", kind, mode, sparse, devices), func(t *testing.T) {
						ref.Agg = mode
						want, err := ref.Run(d, in, sparse, nil)
						require.NoError(t, err)
						plans := make([]*Plan, devices)
						bes := make([]bmm.Backend, devices)
						for i := range plans {
							bes[i] = bmmtest.Copying(cpu.NewBackend(nil))
							plans[i], err = m.Compile(bes[i])
							require.NoError(t, err)
							plans[i].Agg, plans[i].Resident = mode, true
							defer plans[i].Close()
						}
						loads := 0
						load := func(i int) (*PackedBatch, error) { loads++; return poisoned(packed[i]), nil }
						got := fill(d.Graph.N())
						shares, _, err := KeepPackedStream(plans, 1, 2, len(packed), load, nil, in.Params, in.AllOnes(), sparse, got)
						require.NoError(t, err)
						assert.Equal(t, want.Pred, got, "first pass")
						kept := 0
						for _, s := range shares {
							kept += s.Batches()
						}
						assert.Equal(t, len(packed), kept)
						before := make([]bmm.Traffic, devices)
						for i, be := range bes {
							before[i] = be.Traffic()
						}
						for pass := range 2 {
							got := fill(d.Graph.N())
							_, err := RunResident(shares, got)
							require.NoError(t, err)
							assert.Equal(t, want.Pred, got, "resident pass %d", pass+1)
						}
						assert.Equal(t, len(packed), loads, "later passes load nothing")
						for i, be := range bes {
							assert.Zero(t, be.Traffic().Sub(before[i]).HostToDevice, "device %d uploaded", i)
						}
						for i, s := range shares {
							s.Free()
							assert.Empty(t, plans[i].kept)
						}
					})
				}
			}
		}
	}
}

func fill(n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = -1
	}
	return p
}

// TestKeepPackedStreamRefusesInPlace: a backend that reads the host's
// arrays in place (the CPU's) cannot keep a stream's batches, whose arrays
// later batches reuse; nor can a plan that is not resident.
func TestKeepPackedStreamRefusesInPlace(t *testing.T) {
	m, d, in, packed, _ := streamFixture(t)
	p, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	defer p.Close()
	load := func(i int) (*PackedBatch, error) { return packed[i], nil }
	_, _, err = KeepPackedStream([]*Plan{p}, 1, 2, len(packed), load, nil, in.Params, in.AllOnes(), false, fill(d.Graph.N()))
	require.ErrorIs(t, err, ErrModel, "not resident")
	p.Resident = true
	_, _, err = KeepPackedStream([]*Plan{p}, 1, 2, len(packed), load, nil, in.Params, in.AllOnes(), false, fill(d.Graph.N()))
	require.ErrorIs(t, err, ErrModel)
	assert.Contains(t, err.Error(), "in place")
	assert.Empty(t, p.kept, "what was kept is freed")
}
