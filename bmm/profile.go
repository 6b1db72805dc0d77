package bmm

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Profiler is a Backend that times what it moves and runs, so that a pass
// can be split into its uploads, its device work and its downloads.
type Profiler interface {
	Backend
	Profile() Profile
}

// Profile is what a Profiler measured since it was made.
type Profile struct {
	// Upload is the wall time of the uploads: packing into staging memory
	// and the copies up (where a copy runs without the host waiting for
	// it, queuing it: the copy itself counts in Device).
	Upload time.Duration
	// Device is the device's time from the first op queued after a wait to
	// the next wait (a download or an upload that syncs); gaps where the
	// device waited for the host to queue work count in it.
	Device time.Duration
	// Download is the device's time copying results down.
	Download time.Duration
	// Launches counts what the host launched: a kernel, or a replayed
	// Recording (one launch for all its kernels).
	Launches int64
	// DeviceBytes is the device memory the backend holds now (operands and
	// its pool), PeakDeviceBytes the most it held.
	DeviceBytes, PeakDeviceBytes int64
}

// Sub is p − q for the times and launches between two readings; the memory
// figures are p's.
func (p Profile) Sub(q Profile) Profile {
	p.Upload -= q.Upload
	p.Device -= q.Device
	p.Download -= q.Download
	p.Launches -= q.Launches
	return p
}

// A Recorder is a Backend that can record the ops of a whole pass once and
// replay them later with one launch (a CUDA graph on a GPU).
type Recorder interface {
	Backend
	// Record starts recording: the ops that follow, Argmax and ReadInts
	// included, are recorded instead of run, until EndRecord runs them
	// once. Their destinations are filled only then, and again at each
	// Replay, so the caller keeps them. Upload, the other Reads and Free
	// are not allowed meanwhile (Free of an op's output included: keep
	// every operand the recorded ops touch alive until the Recording is
	// closed).
	Record() error
	// EndRecord ends the recording and runs what was recorded once. On an
	// error nothing stays recorded.
	EndRecord() (Recording, error)
}

// A Recording is a recorded pass.
type Recording interface {
	// Replay runs the recorded ops again on the operands' current
	// contents and fills the Argmax and ReadInts destinations, waiting
	// for them.
	Replay() error
	// Ops is the number of ops a replay runs.
	Ops() int64
	// Close releases the recording (not the operands).
	Close() error
}

// A ReplayerInto is a Recording that can fill other destinations than the
// ones recorded: ReplayInto replays it with its ReadInts destinations, in
// the order they were recorded, replaced by dsts (each of its length),
// for this replay and the later ones. A caller whose destination is new
// each pass saves a copy.
type ReplayerInto interface {
	Recording
	ReplayInto(dsts ...[]int32) error
}

// KernelTime is the device time of one kernel (or memset) a
// KernelProfiler launched.
type KernelTime struct {
	Op          string // the Backend method that launched it, e.g. "MulCodes"
	Kernel      string // the kernel and its configuration
	Grid, Block int    // blocks, and threads per block (0 for a memset)
	Dur         time.Duration
}

// A KernelProfiler times each kernel it launches op by op with a pair of
// device events around it: where a pass's device time goes. A replayed
// Recording is one launch and is not split.
type KernelProfiler interface {
	Backend
	// ProfileKernels turns the timing on or off; it costs host time per
	// launch, so pass times measured meanwhile are not the plain ones.
	ProfileKernels(on bool)
	// KernelSegments returns, and forgets, the kernels timed since the
	// last call, cut into segments at each wait for the device (a
	// download, or an upload): the ops of a batch up to its predictions
	// are one segment.
	KernelSegments() [][]KernelTime
}

// KernelStat is one kernel of a KernelGroup: its median over the group's
// segments, in milliseconds.
type KernelStat struct {
	Op     string  `json:"op"`
	Kernel string  `json:"kernel"`
	Grid   int     `json:"grid"`
	Block  int     `json:"block"`
	MS     float64 `json:"ms"`
}

// KernelGroup is the segments that launched the same kernels in the same
// order (the same pass, or batch, repeated), kernel by kernel.
type KernelGroup struct {
	Segments int          `json:"segments"`
	MS       float64      `json:"ms"` // the sum of the kernels' medians
	Kernels  []KernelStat `json:"kernels"`
}

// GroupKernels groups segments by the kernels they launched, in order,
// and gives each kernel's median over its group; the groups come most
// repeated first (ties: the longest first).
func GroupKernels(segs [][]KernelTime) []KernelGroup {
	type acc struct {
		first []KernelTime
		durs  [][]time.Duration // per kernel, per segment
	}
	var order []string
	groups := map[string]*acc{}
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		var key strings.Builder
		for _, k := range s {
			fmt.Fprintf(&key, "%s|%s|%d|%d\n", k.Op, k.Kernel, k.Grid, k.Block)
		}
		g := groups[key.String()]
		if g == nil {
			g = &acc{first: s, durs: make([][]time.Duration, len(s))}
			groups[key.String()] = g
			order = append(order, key.String())
		}
		for i, k := range s {
			g.durs[i] = append(g.durs[i], k.Dur)
		}
	}
	out := make([]KernelGroup, 0, len(order))
	for _, key := range order {
		g := groups[key]
		kg := KernelGroup{Segments: len(g.durs[0])}
		for i, k := range g.first {
			ms := float64(medianDuration(g.durs[i])) / 1e6
			kg.Kernels = append(kg.Kernels, KernelStat{Op: k.Op, Kernel: k.Kernel, Grid: k.Grid, Block: k.Block, MS: ms})
			kg.MS += ms
		}
		out = append(out, kg)
	}
	slices.SortStableFunc(out, func(a, b KernelGroup) int {
		if a.Segments != b.Segments {
			return b.Segments - a.Segments
		}
		return cmp.Compare(b.MS, a.MS)
	})
	return out
}

// medianDuration is the median of d (the mean of the middle two for an
// even count); d is reordered.
func medianDuration(d []time.Duration) time.Duration {
	slices.Sort(d)
	if len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return d[len(d)/2]
}
