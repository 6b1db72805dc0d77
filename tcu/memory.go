package tcu

import (
	"errors"
	"fmt"
	"math/bits"
	"unsafe"
)

// allocator is where the pool gets device memory from (the driver, or a
// fake in tests).
type allocator interface {
	alloc(size int) (uintptr, error)
	free(p uintptr) error
}

// devAlloc allocates with cuMemAlloc; call in device work.
type devAlloc struct{ d *Device }

func (a devAlloc) alloc(size int) (uintptr, error) {
	var p uint64
	if err := a.d.drv.do("cuMemAlloc_v2", uintptr(unsafe.Pointer(&p)), uintptr(size)); err != nil {
		return 0, fmt.Errorf("allocating %d bytes of device memory: %w", size, err)
	}
	return uintptr(p), nil
}

func (a devAlloc) free(p uintptr) error { return a.d.drv.do("cuMemFree_v2", p) }

// pool caches device allocations by size class, so that the buffers of
// repeated products are reused instead of going back to cuMemAlloc, which
// synchronizes the device. Not safe for concurrent use: device work (run)
// owns it.
type pool struct {
	a     allocator
	free  map[int][]uintptr // size class -> idle blocks
	class map[uintptr]int   // every block the pool allocated -> its class
	idle  int               // bytes in idle blocks
	// total and peak: bytes of every block allocated, now and at most.
	total, peak int64
	// hold, while a pass is recorded, takes the blocks put back: the
	// recording's graph still uses them.
	hold *[]uintptr
}

func newPool(a allocator) *pool {
	return &pool{a: a, free: map[int][]uintptr{}, class: map[uintptr]int{}}
}

// minBlock is the smallest block; everything is at least 256-byte aligned.
const minBlock = 512

// sizeClass rounds n up to 512 bytes, or to the next of 1, 1.25, 1.5, 1.75
// times a power of two: at most 25% waste, few classes.
func sizeClass(n int) int {
	if n <= minBlock {
		return minBlock
	}
	p := 1 << (bits.Len(uint(n-1)) - 1) // largest power of two < n
	step := p / 4
	return (n + step - 1) / step * step
}

// get returns a block of at least n bytes and its class. When the device is
// out of memory, idle blocks are returned to the driver and the allocation
// is tried once more.
func (p *pool) get(n int) (uintptr, int, error) {
	c := sizeClass(n)
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.idle -= c
		return b, c, nil
	}
	b, err := p.a.alloc(c)
	if err != nil && p.idle > 0 {
		if rerr := p.trim(); rerr != nil {
			return 0, 0, errors.Join(err, rerr)
		}
		b, err = p.a.alloc(c)
	}
	if err != nil {
		return 0, 0, err
	}
	p.class[b] = c
	p.total += int64(c)
	p.peak = max(p.peak, p.total)
	return b, c, nil
}

// put returns a block to its class's idle list.
func (p *pool) put(b uintptr) error {
	c, ok := p.class[b]
	if !ok {
		return fmt.Errorf("%w: freeing %#x, which the pool did not allocate", ErrShape, b)
	}
	for _, x := range p.free[c] {
		if x == b {
			return fmt.Errorf("%w: block %#x freed twice", ErrShape, b)
		}
	}
	if p.hold != nil {
		*p.hold = append(*p.hold, b)
		return nil
	}
	p.free[c] = append(p.free[c], b)
	p.idle += c
	return nil
}

// trim frees idle blocks.
func (p *pool) trim() error {
	var errs []error
	for c, l := range p.free {
		for _, b := range l {
			errs = append(errs, p.a.free(b))
			delete(p.class, b)
			p.total -= int64(c)
		}
		delete(p.free, c)
	}
	p.idle = 0
	return errors.Join(errs...)
}

// release frees every block, idle or not (device Close).
func (p *pool) release() error {
	var errs []error
	for b := range p.class {
		errs = append(errs, p.a.free(b))
	}
	p.class = map[uintptr]int{}
	p.free = map[int][]uintptr{}
	p.idle, p.total = 0, 0
	return errors.Join(errs...)
}

// PoolBytes returns the device memory the allocation pool holds now and
// the most it has held since the device opened: a training run's
// high-water mark, comparable with torch.cuda.max_memory_allocated.
func (d *Device) PoolBytes() (now, peak int64, err error) {
	err = d.run(func() error {
		now, peak = d.pool.total, d.pool.peak
		return nil
	})
	return now, peak, err
}

// TrimPool returns the pool's idle blocks to the driver and restarts its
// high-water mark at what it holds now, so that PoolBytes's peak after it
// is what the work since took (a benchmark's later rounds reuse the
// blocks of its first).
func (d *Device) TrimPool() error {
	return d.run(func() error {
		err := d.pool.trim()
		d.pool.peak = d.pool.total
		return err
	})
}

// Buffer is device memory from the device's pool, or a view of part of
// one (Slice).
type Buffer struct {
	d    *Device
	ptr  uintptr
	size int
	view bool // Slice's: the parent owns the memory
}

// Alloc returns n bytes of device memory (at least one block).
func (d *Device) Alloc(n int) (*Buffer, error) {
	var b *Buffer
	err := d.run(func() error {
		var err error
		b, err = d.alloc(n)
		return err
	})
	return b, err
}

func (d *Device) alloc(n int) (*Buffer, error) {
	p, _, err := d.pool.get(n)
	if err != nil {
		return nil, err
	}
	return &Buffer{d: d, ptr: p, size: n}, nil
}

// Ptr is the device address.
func (b *Buffer) Ptr() uint64 { return uint64(b.ptr) }

// Size is the requested size in bytes.
func (b *Buffer) Size() int { return b.size }

// Slice returns a view of n bytes from off: an operand inside a larger
// buffer (a model's parameters in one flat array, updated by one Adam
// launch). The view is valid while b is; freeing it does nothing.
func (b *Buffer) Slice(off, n int) (*Buffer, error) {
	if off < 0 || n < 0 || off+n > b.size || off%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes at %d of a %d-byte buffer", ErrShape, n, off, b.size)
	}
	return &Buffer{d: b.d, ptr: b.ptr + uintptr(off), size: n, view: true}, nil
}

// Free returns the buffer to the pool. A nil buffer or a view is fine.
func (b *Buffer) Free() error {
	if b == nil || b.view {
		return nil
	}
	return b.d.run(func() error { return b.d.pool.put(b.ptr) })
}

// Write copies src to the start of the buffer and waits for it.
func (b *Buffer) Write(src []byte) error {
	if len(src) > b.size {
		return fmt.Errorf("%w: writing %d bytes into a %d-byte buffer", ErrShape, len(src), b.size)
	}
	return b.d.run(func() error { return b.write(src) })
}

// write is Write in device work.
func (b *Buffer) write(src []byte) error {
	st, err := b.d.staging(len(src))
	if err != nil {
		return err
	}
	copy(st.Bytes(), src)
	if err := b.d.htod(b.ptr, st.ptr, len(src)); err != nil {
		return err
	}
	return b.d.drv.do("cuStreamSynchronize", b.d.stream.h)
}

// Read copies the start of the buffer into dst and waits for it.
func (b *Buffer) Read(dst []byte) error {
	if len(dst) > b.size {
		return fmt.Errorf("%w: reading %d bytes from a %d-byte buffer", ErrShape, len(dst), b.size)
	}
	return b.d.run(func() error {
		st, err := b.d.staging(len(dst))
		if err != nil {
			return err
		}
		if err := b.d.dtoh(st.ptr, b.ptr, len(dst)); err != nil {
			return err
		}
		if err := b.d.drv.do("cuStreamSynchronize", b.d.stream.h); err != nil {
			return err
		}
		copy(dst, st.Bytes())
		return nil
	})
}

func (d *Device) htod(dst, src uintptr, n int) error {
	if n == 0 {
		return nil
	}
	return d.drv.do("cuMemcpyHtoDAsync_v2", dst, src, uintptr(n), d.stream.h)
}

func (d *Device) dtoh(dst, src uintptr, n int) error {
	if n == 0 {
		return nil
	}
	return d.drv.do("cuMemcpyDtoHAsync_v2", dst, src, uintptr(n), d.stream.h)
}

func (d *Device) memset32(dst uintptr, v uint32, words int) error {
	if words == 0 {
		return nil
	}
	return d.drv.do("cuMemsetD32Async", dst, uintptr(v), uintptr(words), d.stream.h)
}

// HostBuffer is page-locked host memory: copies from and to it run at full
// PCIe speed and asynchronously.
type HostBuffer struct {
	d    *Device
	ptr  uintptr
	size int
}

// AllocHost returns n bytes of pinned host memory.
func (d *Device) AllocHost(n int) (*HostBuffer, error) {
	var h *HostBuffer
	err := d.run(func() error {
		var err error
		h, err = d.allocHost(n)
		return err
	})
	return h, err
}

func (d *Device) allocHost(n int) (*HostBuffer, error) {
	var p uintptr
	if err := d.drv.do("cuMemAllocHost_v2", uintptr(unsafe.Pointer(&p)), uintptr(max(n, 1))); err != nil {
		return nil, fmt.Errorf("allocating %d bytes of pinned host memory: %w", n, err)
	}
	return &HostBuffer{d: d, ptr: p, size: n}, nil
}

// Bytes is the buffer's memory; valid until Free.
func (h *HostBuffer) Bytes() []byte { return unsafe.Slice((*byte)(cptr(h.ptr)), h.size) }

func (h *HostBuffer) free() error { return h.d.drv.do("cuMemFreeHost", h.ptr) }

// Free releases the buffer.
func (h *HostBuffer) Free() error { return h.d.run(h.free) }

// staging returns the device's pinned staging buffer with room for n
// bytes, growing it (by at least half) when needed. Device work only;
// the stream must be idle with respect to the old buffer.
func (d *Device) staging(n int) (*HostBuffer, error) {
	if err := d.growHost(&d.host, n); err != nil {
		return nil, err
	}
	return d.host, nil
}

// growHost makes *h a pinned buffer of at least n bytes, replacing a
// smaller one by one at least half as large again. Device work only; the
// stream must be idle with respect to the old buffer.
func (d *Device) growHost(h **HostBuffer, n int) error {
	if *h != nil && (*h).size >= n {
		return nil
	}
	size := max(n, 1<<20)
	if *h != nil {
		size = max(size, (*h).size*3/2)
		if err := (*h).free(); err != nil {
			return err
		}
		*h = nil
	}
	nh, err := d.allocHost(size)
	if err != nil {
		return err
	}
	*h = nh
	return nil
}

// upSlots is how many uploads may be in flight at once, each copied from
// its own pinned buffer: the host fills the next while the device copies
// (and computes) what came before.
const upSlots = 4

// upRingMax is the largest upload that takes a ring slot whole; a larger
// one goes through the slots upPiece bytes at a time (uploadPieces), so
// that the ring never holds upSlots buffers of its size.
const upRingMax = 64 << 20

// upSlot is one pinned upload buffer and the event recorded after the last
// copy from it.
type upSlot struct {
	h       *HostBuffer
	ev      *Event
	busy    bool // a copy from h may still run
	filling bool // reserved: a caller is writing h, and no copy is queued yet
}

// reserve takes the next ring slot that no caller is filling, with room
// for n bytes, once the copy last queued from it has finished; nil when
// every slot is being filled. copied or release gives it back. Device
// thread only.
func (d *Device) reserve(n int) (*upSlot, error) {
	if d.ring == nil {
		d.ring = make([]upSlot, upSlots)
	}
	for range len(d.ring) {
		s := &d.ring[d.ringNext]
		d.ringNext = (d.ringNext + 1) % len(d.ring)
		if s.filling {
			continue
		}
		if s.busy {
			if err := d.drv.do("cuEventSynchronize", s.ev.h); err != nil {
				return nil, err
			}
			s.busy = false
		}
		if s.ev == nil {
			e, err := d.newEvent()
			if err != nil {
				return nil, err
			}
			s.ev = e
		}
		if err := d.growHost(&s.h, n); err != nil {
			return nil, err
		}
		s.filling = true
		return s, nil
	}
	return nil, nil
}

// release gives back a reserved slot from which nothing was copied.
// Device work only.
func (d *Device) release(s *upSlot) {
	if s != nil {
		s.filling = false
	}
}

// copied marks s in use by the copy just queued from it. Device work
// only.
func (d *Device) copied(s *upSlot) error {
	s.filling = false
	if err := s.ev.record(d.stream); err != nil {
		return err
	}
	s.busy = true
	return nil
}

// freeRing frees the ring's buffers and events; the stream is idle.
// Device work only.
func (d *Device) freeRing() error {
	var errs []error
	for i := range d.ring {
		s := &d.ring[i]
		if s.h != nil {
			errs = append(errs, s.h.free())
		}
		if s.ev != nil {
			errs = append(errs, s.ev.destroy())
		}
	}
	d.ring = nil
	return errors.Join(errs...)
}
