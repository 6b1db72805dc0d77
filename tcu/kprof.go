package tcu

import (
	"errors"

	"github.com/qgtc/qgtc/bmm"
)

var _ bmm.KernelProfiler = (*Backend)(nil)

// maxKernelSegments bounds what an unread profile holds.
const maxKernelSegments = 1 << 14

// kprof is the per-kernel timing of a Backend (bmm.KernelProfiler):
// events recorded around each launch while on, read after each wait.
// Device work only.
type kprof struct {
	on      bool
	op      string // the bmm method running, set by each op
	free    []*Event
	pending []kernelSpan
	segs    [][]bmm.KernelTime
}

// kernelSpan is a launch queued between two events, not yet read.
type kernelSpan struct {
	t          bmm.KernelTime
	start, end *Event
}

// ProfileKernels implements bmm.KernelProfiler.
func (be *Backend) ProfileKernels(on bool) {
	_ = be.d.run(func() error {
		be.kp.on = on
		return nil
	})
}

// KernelSegments implements bmm.KernelProfiler.
func (be *Backend) KernelSegments() [][]bmm.KernelTime {
	var s [][]bmm.KernelTime
	_ = be.d.run(func() error {
		s, be.kp.segs = be.kp.segs, nil
		return nil
	})
	return s
}

// setOp names the op whose launches follow (caller's goroutine: a
// Backend is used by one at a time, and d.run orders it before them).
func (be *Backend) setOp(op string) { be.kp.op = op }

// kernelEvent is an event from the free list, or a new one.
func (be *Backend) kernelEvent() (*Event, error) {
	if n := len(be.kp.free); n > 0 {
		e := be.kp.free[n-1]
		be.kp.free = be.kp.free[:n-1]
		return e, nil
	}
	return be.d.newEvent()
}

// kernelBegin records the start of a launch when timing (never into a
// recording: the events would become nodes of the graph).
func (be *Backend) kernelBegin(kernel string, grid, block int) error {
	if !be.kp.on || be.rec != nil {
		return nil
	}
	s, err := be.kernelEvent()
	if err != nil {
		return err
	}
	e, err := be.kernelEvent()
	if err != nil {
		be.kp.free = append(be.kp.free, s)
		return err
	}
	be.kp.pending = append(be.kp.pending, kernelSpan{bmm.KernelTime{Op: be.kp.op, Kernel: kernel, Grid: grid, Block: block}, s, e})
	return s.record(be.d.stream)
}

// kernelEnd records the end of the launch kernelBegin opened.
func (be *Backend) kernelEnd() error {
	if !be.kp.on || be.rec != nil || len(be.kp.pending) == 0 {
		return nil
	}
	return be.kp.pending[len(be.kp.pending)-1].end.record(be.d.stream)
}

// kernelRead reads the spans queued before a wait (the stream is idle)
// into one segment. A span whose events cannot tell (its launch failed)
// is left out.
func (be *Backend) kernelRead() {
	if len(be.kp.pending) == 0 {
		return
	}
	var seg []bmm.KernelTime
	for _, p := range be.kp.pending {
		if d, err := elapsed(p.start, p.end); err == nil {
			p.t.Dur = d
			seg = append(seg, p.t)
		}
		be.kp.free = append(be.kp.free, p.start, p.end)
	}
	be.kp.pending = be.kp.pending[:0]
	if len(seg) > 0 && len(be.kp.segs) < maxKernelSegments {
		be.kp.segs = append(be.kp.segs, seg)
	}
}

// closeKernelEvents destroys the profile's events. Device work only.
func (be *Backend) closeKernelEvents() error {
	var errs []error
	for _, p := range be.kp.pending {
		be.kp.free = append(be.kp.free, p.start, p.end)
	}
	be.kp.pending = nil
	for _, e := range be.kp.free {
		errs = append(errs, e.destroy())
	}
	be.kp.free = nil
	return errors.Join(errs...)
}
