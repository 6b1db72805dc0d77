package tcu

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/qgtc/qgtc/bmm"
)

var (
	_ bmm.Profiler = (*Backend)(nil)
	_ bmm.Recorder = (*Backend)(nil)
)

// Stream capture mode: relaxed, so that the pool may still allocate while a
// pass is recorded (CU_STREAM_CAPTURE_MODE_RELAXED).
const captureRelaxed = 2

// timing is the events a Backend times its work with: a busy span opens at
// the first kernel queued after a wait and closes before the copy or sync
// that waits. Device work only.
type timing struct {
	ev   [3]*Event // span start, span end (= copy start), copy end
	busy bool
}

func (be *Backend) events() error {
	for i := range be.tm.ev {
		if be.tm.ev[i] == nil {
			e, err := be.d.newEvent()
			if err != nil {
				return err
			}
			be.tm.ev[i] = e
		}
	}
	return nil
}

func (be *Backend) record(i int) error { return be.tm.ev[i].record(be.d.stream) }

// since is the time from event i to event j, both completed; 0 if the
// driver cannot tell.
func (be *Backend) since(i, j int) time.Duration {
	t, err := elapsed(be.tm.ev[i], be.tm.ev[j])
	if err != nil {
		return 0
	}
	return t
}

// queued counts a kernel about to be queued: it opens a busy span unless
// one is open, and while recording it counts toward the recording instead.
func (be *Backend) queued() error {
	if be.rec != nil {
		be.rec.ops++
		return nil
	}
	be.tr.Ops++
	be.prof.Launches++
	return be.spanOpen()
}

// spanOpen opens a busy span unless one is open: before a kernel, or an
// upload's copy that nothing waits for.
func (be *Backend) spanOpen() error {
	if be.tm.busy {
		return nil
	}
	if err := be.events(); err != nil {
		return err
	}
	be.tm.busy = true
	return be.record(0)
}

// waitCopy queues copy (nil: none) timed between events 1 and 2, waits for
// the stream, and adds the busy span before it to Device and the copy to
// *into (nil: nowhere).
func (be *Backend) waitCopy(copy func() error, into *time.Duration) error {
	if err := be.events(); err != nil {
		return err
	}
	if err := be.record(1); err != nil {
		return err
	}
	if copy != nil {
		if err := copy(); err != nil {
			return err
		}
	}
	if err := be.record(2); err != nil {
		return err
	}
	if err := be.d.drv.do("cuStreamSynchronize", be.d.stream.h); err != nil {
		return err
	}
	if be.tm.busy {
		be.prof.Device += be.since(0, 1)
		be.tm.busy = false
	}
	be.kernelRead()
	if into != nil {
		*into += be.since(1, 2)
	}
	return nil
}

// Profile implements bmm.Profiler: the backend's times and launches, and
// the device memory its device's pool holds.
func (be *Backend) Profile() bmm.Profile {
	p := be.prof
	_ = be.d.run(func() error {
		p.DeviceBytes, p.PeakDeviceBytes = be.d.pool.total, be.d.pool.peak
		return nil
	})
	return p
}

// recording is a pass captured into a CUDA graph.
type recording struct {
	be          *Backend
	graph, exec uintptr
	ops         int64
	outs        []recOut
	held        []uintptr // device blocks freed while recording: the graph still uses them
}

// recOut is an Argmax or ReadInts of the recording: the predictions land
// in host, then go to dst.
type recOut struct {
	dst   []int32
	host  *HostBuffer
	reads bool // a ReadInts (ReplayInto may change its dst)
}

var _ bmm.ReplayerInto = (*recording)(nil)

// ReplayInto implements bmm.ReplayerInto.
func (r *recording) ReplayInto(dsts ...[]int32) error {
	var reads []*recOut
	for i := range r.outs {
		if r.outs[i].reads {
			reads = append(reads, &r.outs[i])
		}
	}
	if len(dsts) != len(reads) {
		return fmt.Errorf("%w: %d destinations for %d recorded reads", ErrShape, len(dsts), len(reads))
	}
	for i, o := range reads {
		if len(dsts[i]) != len(o.dst) {
			return fmt.Errorf("%w: destination %d has %d values, the read %d", ErrShape, i, len(dsts[i]), len(o.dst))
		}
	}
	for i, o := range reads {
		o.dst = dsts[i]
	}
	return r.Replay()
}

// Record implements bmm.Recorder: the stream is captured into a graph
// until EndRecord.
func (be *Backend) Record() error {
	if err := be.open(); err != nil {
		return err
	}
	if be.rec != nil {
		return fmt.Errorf("%w: already recording", ErrShape)
	}
	return be.d.run(func() error {
		if err := be.waitCopy(nil, nil); err != nil {
			return err
		}
		if err := be.d.drv.do("cuStreamBeginCapture_v2", be.d.stream.h, captureRelaxed); err != nil {
			return err
		}
		be.rec = &recording{be: be}
		be.d.pool.hold = &be.rec.held
		return nil
	})
}

// EndRecord implements bmm.Recorder.
func (be *Backend) EndRecord() (bmm.Recording, error) {
	if be.rec == nil {
		return nil, fmt.Errorf("%w: not recording", ErrShape)
	}
	rec := be.rec
	err := be.d.run(func() error {
		be.rec, be.d.pool.hold = nil, nil
		err := be.d.drv.do("cuStreamEndCapture", be.d.stream.h, uintptr(unsafe.Pointer(&rec.graph)))
		if err == nil {
			err = be.d.drv.do("cuGraphInstantiateWithFlags", uintptr(unsafe.Pointer(&rec.exec)), rec.graph, 0)
		}
		if err != nil {
			return errors.Join(err, rec.close())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := rec.Replay(); err != nil {
		_ = rec.Close()
		return nil, err
	}
	return rec, nil
}

// Replay implements bmm.Recording: one graph launch, timed, then the
// predictions to their destinations.
func (r *recording) Replay() error {
	be := r.be
	if r.exec == 0 {
		return fmt.Errorf("%w: recording closed", ErrShape)
	}
	if err := be.open(); err != nil {
		return err
	}
	return be.d.run(func() error {
		if err := be.events(); err != nil {
			return err
		}
		if be.tm.busy { // close the span of ops queued before
			if err := be.waitCopy(nil, nil); err != nil {
				return err
			}
		}
		if err := be.record(0); err != nil {
			return err
		}
		if err := be.d.drv.do("cuGraphLaunch", r.exec, be.d.stream.h); err != nil {
			return err
		}
		be.tm.busy = true
		if err := be.waitCopy(nil, nil); err != nil {
			return err
		}
		be.tr.Ops += r.ops
		be.prof.Launches++
		for _, o := range r.outs {
			var reg region
			reg.add(o.host.Bytes()[:4*len(o.dst)], 4*len(o.dst))
			reg.fill(asBytes(o.dst), true) // on several cores when large
			be.tr.DeviceToHost += int64(4 * len(o.dst))
		}
		return nil
	})
}

// Ops implements bmm.Recording.
func (r *recording) Ops() int64 { return r.ops }

// Close implements bmm.Recording.
func (r *recording) Close() error {
	if r.be == nil {
		return nil
	}
	err := r.be.d.run(r.close)
	r.be = nil
	return err
}

// close frees the graph, its host buffers and the blocks it held. Device
// thread only.
func (r *recording) close() error {
	var errs []error
	if r.exec != 0 {
		errs = append(errs, r.be.d.drv.do("cuGraphExecDestroy", r.exec))
		r.exec = 0
	}
	if r.graph != 0 {
		errs = append(errs, r.be.d.drv.do("cuGraphDestroy", r.graph))
		r.graph = 0
	}
	for _, o := range r.outs {
		errs = append(errs, o.host.free())
	}
	r.outs = nil
	for _, b := range r.held {
		errs = append(errs, r.be.d.pool.put(b))
	}
	r.held = nil
	return errors.Join(errs...)
}

// copyRecorded queues the copy of an Argmax (reads false) or ReadInts
// down into a host buffer of the recording. Device work only.
func (be *Backend) copyRecorded(dst []int32, out uintptr, reads bool) error {
	h, err := be.d.allocHost(4 * len(dst))
	if err != nil {
		return err
	}
	be.rec.outs = append(be.rec.outs, recOut{dst: dst, host: h, reads: reads})
	return be.d.dtoh(h.ptr, out, 4*len(dst))
}
