package tcu

import (
	"math"
	"sync"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// Staged uploads (bmm.Stager): a host worker does an upload's host side
// ahead of time (the tile mask and lists, the layout, the copy into pinned
// memory) while the devices run earlier batches, and the device that
// uploads the operand later only queues the copy. Pinned memory is every
// context's under unified addressing, so any device copies from a buffer
// another device allocated.

// stagedOp is a staged upload: its region written into h.
type stagedOp struct {
	h     *HostBuffer
	size  int
	src   int        // a graph's source rows
	bits  *bitsPrep  // or
	graph *graphPrep //
}

// staged maps an operand (*bittensor.Tensor or *bmm.Graph) to its
// *stagedOp until an upload takes it.
var staged sync.Map

// takeStaged removes and returns what was staged for op, nil when nothing
// was (or a graph was staged over other source rows: that goes back).
func takeStaged(op any, src int) *stagedOp {
	v, ok := staged.LoadAndDelete(op)
	if !ok {
		return nil
	}
	s := v.(*stagedOp)
	if s.src != src {
		stages.put(s.h)
		return nil
	}
	return s
}

// StageBits implements bmm.Stager.
func (be *Backend) StageBits(t *bittensor.Tensor) {
	if t == nil || 8*t.Bits()*residentLayout(t).planeWords() < fillHere {
		return // small: see stage
	}
	p := prepBits(t, false)
	be.stage(t, &stagedOp{bits: p}, &p.r)
}

// StageGraph implements bmm.Stager.
func (be *Backend) StageGraph(g *bmm.Graph, srcRows int) {
	if srcRows < 0 || !isCSR(g) || len(g.Indices) > math.MaxInt32 || 4*len(g.Indices) < fillHere {
		return // small: see stage
	}
	p, err := prepGraph(g, srcRows)
	if err != nil {
		return // UploadGraph reports it
	}
	be.stage(g, &stagedOp{graph: p, src: srcRows}, &p.r)
}

// Unstage implements bmm.Stager.
func (be *Backend) Unstage(op any) {
	if v, ok := staged.LoadAndDelete(op); ok {
		stages.put(v.(*stagedOp).h)
	}
}

// stage writes r into a pinned buffer of the pool and records s for op.
// Small regions are not worth it (device work writes them in less
// time than a reschedule), nor are regions the pool has no room for.
func (be *Backend) stage(op any, s *stagedOp, r *region) {
	if r.size < fillHere {
		return
	}
	h := stages.take(r.size)
	if h == nil {
		n := roundUp(r.size, 1<<20)
		if !stages.grow(n) {
			return
		}
		var err error
		if h, err = be.d.AllocHost(n); err != nil {
			stages.shrink(n)
			return
		}
	}
	r.fill(h.Bytes(), false)
	s.h, s.size = h, r.size
	if old, loaded := staged.Swap(op, s); loaded {
		stages.put(old.(*stagedOp).h)
	}
}

// uploadStaged queues the copy of s into a new device buffer and hands the
// buffer to keep; s's pinned buffer goes back to the pool once the copy has
// run.
func (be *Backend) uploadStaged(s *stagedOp, keep func(*Buffer)) error {
	err := be.d.run(func() error {
		if err := be.d.sweepStaged(false); err != nil {
			return err
		}
		buf, err := be.queueCopy(s.h.ptr, s.size, func() error { return be.d.copiedStaged(s.h) })
		if err != nil {
			return err
		}
		s.h = nil
		keep(buf)
		return nil
	})
	if s.h != nil { // not queued
		stages.put(s.h)
	}
	return err
}

// stagedCopy is a copy queued from a pool buffer, done when ev is.
type stagedCopy struct {
	ev *Event
	h  *HostBuffer
}

// copiedStaged records that a copy from h was just queued. Device work.
func (d *Device) copiedStaged(h *HostBuffer) error {
	var ev *Event
	if n := len(d.stageEvents); n > 0 {
		ev, d.stageEvents = d.stageEvents[n-1], d.stageEvents[:n-1]
	} else {
		var err error
		if ev, err = d.newEvent(); err != nil {
			return err
		}
	}
	if err := ev.record(d.stream); err != nil {
		d.stageEvents = append(d.stageEvents, ev)
		return err
	}
	d.stagedCopies = append(d.stagedCopies, stagedCopy{ev, h})
	return nil
}

// cudaErrorNotReady is cuEventQuery's answer for an event not reached yet.
const cudaErrorNotReady = 600

// sweepStaged gives the buffers of finished staged copies back to the pool
// (all of them with all: the stream is idle). Device work.
func (d *Device) sweepStaged(all bool) error {
	for len(d.stagedCopies) > 0 {
		c := d.stagedCopies[0]
		if !all {
			res := d.drv.call("cuEventQuery", c.ev.h)
			if res == cudaErrorNotReady {
				return nil
			}
			if err := d.drv.check("cuEventQuery", res); err != nil {
				return err
			}
		}
		stages.put(c.h)
		d.stageEvents = append(d.stageEvents, c.ev)
		d.stagedCopies = d.stagedCopies[1:]
	}
	return nil
}

// closeStaged ends d's part in staging: its copies are done (the stream is
// idle), its events destroyed, and the pool's buffers it allocated freed,
// with what was staged in them. Device work, from Close.
func (d *Device) closeStaged() error {
	err := d.sweepStaged(true)
	for _, ev := range d.stageEvents {
		if e := ev.destroy(); err == nil {
			err = e
		}
	}
	d.stageEvents = nil
	staged.Range(func(op, v any) bool {
		if s := v.(*stagedOp); s.h.d == d && staged.CompareAndDelete(op, v) {
			stages.put(s.h)
		}
		return true
	})
	for _, h := range stages.close(d) {
		if e := h.free(); err == nil {
			err = e
		}
	}
	return err
}

// stagePoolMax bounds the pinned memory of staged uploads: what a stream's
// batches prepared ahead hold, with room.
const stagePoolMax = 1 << 30

// stagePool is the pinned buffers of staged uploads, shared by every
// device.
type stagePool struct {
	mu    sync.Mutex
	free  []*HostBuffer
	bytes int // held: free, staged or being copied
}

var stages stagePool

// take removes and returns the smallest free buffer of at least n bytes,
// nil if none.
func (p *stagePool) take(n int) *HostBuffer {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, h := range p.free {
		if h.size >= n && (best < 0 || h.size < p.free[best].size) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	h := p.free[best]
	p.free[best] = p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return h
}

// grow counts n more bytes if the pool has room for them.
func (p *stagePool) grow(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+n > stagePoolMax {
		return false
	}
	p.bytes += n
	return true
}

func (p *stagePool) shrink(n int) {
	p.mu.Lock()
	p.bytes -= n
	p.mu.Unlock()
}

// put gives h back; a buffer of a closed device is gone with its context.
func (p *stagePool) put(h *HostBuffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.d.stagesGone {
		p.bytes -= h.size
		return
	}
	p.free = append(p.free, h)
}

// close removes d's free buffers (for the caller to free) and drops any of
// d's that come back later.
func (p *stagePool) close(d *Device) []*HostBuffer {
	p.mu.Lock()
	defer p.mu.Unlock()
	d.stagesGone = true
	var mine []*HostBuffer
	kept := p.free[:0]
	for _, h := range p.free {
		if h.d == d {
			mine = append(mine, h)
			p.bytes -= h.size
		} else {
			kept = append(kept, h)
		}
	}
	clear(p.free[len(kept):])
	p.free = kept
	return mine
}
