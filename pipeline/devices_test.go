package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/layers"
)

// TestDevicesGather: batches spread over several backends standing in for
// the GPUs of a host (CPU and the generic reference, mixed) predict what
// one backend does, bit for bit: merged or not, over several resident or
// cold passes, with more devices than batches, and on a shard.
func TestDevicesGather(t *testing.T) {
	j, _ := fastJob("cora", t.TempDir())
	j.Parts = 8
	want := infer(t, j)
	require.Nil(t, want.Devices, "one device reports none")
	devices := func(k int) []bmm.Backend {
		bes := make([]bmm.Backend, k)
		for i := range bes {
			bes[i] = cpu.NewBackend(nil)
			if i%2 == 1 {
				bes[i] = bmm.NewGenericBackend()
			}
		}
		return bes
	}
	for _, c := range []struct {
		name     string
		k        int
		merge    layers.MergeMode
		passes   int
		resident bool
		spans    []string
	}{
		{"3 devices", 3, layers.MergeAuto, 1, false, []string{"0-1", "2-4", "5-7"}},
		{"unmerged", 2, layers.MergeOff, 1, false, []string{"0-3", "4-7"}},
		{"merged resident passes", 2, layers.MergeOn, 3, true, []string{"0-3", "4-7"}},
		{"cold passes", 3, layers.MergeAuto, 3, false, []string{"0-1", "2-4", "5-7"}},
		{"more devices than batches", 10, layers.MergeAuto, 1, false, []string{"0-0", "1-1", "2-2", "3-3", "4-4", "5-5", "6-6", "7-7"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := *j
			k.Backend, k.Devices, k.DeviceNames = nil, devices(c.k), []string{"dev0", "dev1"}
			k.Merge, k.Passes, k.Resident = c.merge, c.passes, c.resident
			r := infer(t, &k)
			assert.Equal(t, want.PredictionsSHA256, r.PredictionsSHA256, "the same predictions as one backend")
			assert.Equal(t, *want.Accuracy, *r.Accuracy)
			require.Len(t, r.Devices, len(c.spans))
			assert.Equal(t, "dev0", r.Devices[0].Device)
			if len(r.Devices) > 2 {
				assert.Equal(t, k.Devices[2].Name(), r.Devices[2].Device, "unnamed devices go by their backend")
			}
			nodes, batches := 0, 0
			for i, d := range r.Devices {
				assert.Equal(t, c.spans[i], d.BatchSpan)
				nodes, batches = nodes+d.Nodes, batches+d.Batches
				if c.passes > 1 {
					assert.Positive(t, d.PassMedian, "each device's median")
				}
			}
			assert.Equal(t, 2708, nodes)
			assert.Equal(t, 8, batches)
			if c.passes > 1 {
				assert.Equal(t, c.passes-1, r.MorePasses)
				assert.Positive(t, r.PassMedianMS)
			}
			if c.merge == layers.MergeOn {
				assert.True(t, r.Merged, "every device merged its share")
			}
		})
	}
	s := *j
	s.Shard = Shard{1, 2}
	one := infer(t, &s)
	s.Backend, s.Devices = nil, devices(3)
	spread := infer(t, &s)
	assert.Equal(t, one.PredictionsSHA256, spread.PredictionsSHA256, "a shard spread over devices")
	require.Len(t, spread.Devices, 3)
	assert.Equal(t, "4-4", spread.Devices[0].BatchSpan, "the shard's batches 4-7, split")
}
