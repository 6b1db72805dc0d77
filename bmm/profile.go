package bmm

import "time"

// A Profiler is a Backend that times what it moves and runs, so that a pass
// can be split into its uploads, its device work and its downloads.
type Profiler interface {
	Backend
	Profile() Profile
}

// Profile is what a Profiler measured since it was made.
type Profile struct {
	// Upload is the wall time of the uploads: packing into staging memory
	// and the copies up.
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
