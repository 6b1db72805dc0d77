package tcu

import (
	"cmp"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Device is one CUDA device with its primary context. Its work runs one
// piece at a time under a lock, on the caller's goroutine locked to its OS
// thread with the context made current there (CUDA contexts are per
// thread): no hand-over to a thread of its own, whose every wake-up cost
// as much as an op of a small graph. A Device is safe for concurrent use.
// Close releases everything; there are no finalizers.
type Device struct {
	info  DeviceInfo
	drv   *driver
	nv    *nvrtc
	dev   int32
	ctx   uintptr
	cache cache

	// busy serializes the device's work (run): every driver call is made
	// under it. Work never takes it again (run inside run deadlocks).
	busy   sync.Mutex
	closed bool // guarded by busy

	// mu guards modules and building. It is taken in device work and
	// outside it, so it is never held while waiting for busy.
	mu       sync.Mutex
	modules  map[string]*module
	building map[string]*fpBuild // fp compiles in flight (compileOnce)

	stream *Stream // the default stream kernels and copies run on
	pool   *pool
	host   *HostBuffer // pinned staging buffer, grown on demand (device work only)
	// ring holds the pinned buffers of uploads that do not wait for their
	// copy (reserve; device work only).
	ring     []upSlot
	ringNext int
	// stagedCopies are the copies queued from staged uploads' pinned
	// buffers, in stream order; stageEvents their spare events (device
	// thread only).
	stagedCopies []stagedCopy
	stageEvents  []*Event
	stagesGone   bool            // closed: its staging buffers are gone (guarded by stages.mu)
	args         *HostBuffer     // pinned kernel-parameter block (device work only)
	fnSmem       map[uintptr]int // dynamic shared memory each kernel is allowed (device work only)
	fnBlocks     map[fnShape]int // residentBlocks' answers (device work only)
	// held is a launch queued no further yet, so that the op after it may
	// fold its own work into it (device work only; see hold).
	held *heldLaunch
}

// fnShape is a kernel and the block it is launched with.
type fnShape struct {
	f             uintptr
	threads, smem int
}

type module struct {
	h     uintptr
	funcs map[string]uintptr
}

// Open opens device ordinal: loads the driver and NVRTC, retains the
// device's primary context on a dedicated OS thread and creates a stream.
// With no driver, no device or no NVRTC the error wraps ErrNoDriver,
// ErrNoDevice or ErrNoNVRTC (all ErrUnavailable) and says which.
func Open(ordinal int) (*Device, error) {
	infos, err := Devices()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= len(infos) {
		return nil, fmt.Errorf("%w: device %d requested, %d present", ErrNoDevice, ordinal, len(infos))
	}
	info := infos[ordinal]
	if info.Major < 8 {
		return nil, fmt.Errorf("%w: %s is compute %d.%d; the 1-bit kernels need 8.0 or newer", ErrUnsupported, info.Name, info.Major, info.Minor)
	}
	nv, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	drv, _ := loadDriver()
	d := &Device{
		info: info, drv: drv, nv: nv, cache: cache{dir: defaultCacheDir()},
		modules: map[string]*module{}, fnSmem: map[uintptr]int{}, fnBlocks: map[fnShape]int{},
	}
	if err := d.retain(); err != nil {
		return nil, err
	}
	d.pool = newPool(devAlloc{d})
	s, err := d.NewStream()
	if err != nil {
		d.Close()
		return nil, err
	}
	d.stream = s
	return d, nil
}

// retain retains the device's primary context.
func (d *Device) retain() error {
	return d.onThread(func() error {
		if err := d.drv.do("cuDeviceGet", uintptr(unsafe.Pointer(&d.dev)), uintptr(d.info.Ordinal)); err != nil {
			return err
		}
		var ctx uintptr
		if err := d.drv.do("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&ctx)), uintptr(d.dev)); err != nil {
			return err
		}
		d.ctx = ctx
		return nil
	})
}

// onThread runs f with this goroutine locked to its OS thread and the
// context, once retained, current there.
func (d *Device) onThread(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.ctx != 0 {
		if err := d.drv.do("cuCtxSetCurrent", d.ctx); err != nil {
			return err
		}
	}
	return f()
}

// run runs f as the device's work and returns its error: under busy, on
// this goroutine locked to its OS thread with the context current. A held
// launch is queued first: every piece of work on the stream comes after
// it. f must not call run.
func (d *Device) run(f func() error) error { return d.work(f, false) }

// runKeepingHeld is run for work that either folds into the held launch
// (foldHeld, first) or touches nothing it reads or writes (allocating and
// clearing a new operand): the held launch is not queued before it.
func (d *Device) runKeepingHeld(f func() error) error { return d.work(f, true) }

func (d *Device) work(f func() error, keepHeld bool) error {
	d.busy.Lock()
	defer d.busy.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.onThread(func() error {
		if !keepHeld {
			if err := d.releaseHeld(); err != nil {
				return err
			}
		}
		return f()
	})
}

// heldLaunch is a kernel launch whose queueing waits for the next work
// on the device: an aggregation the op after it may extend with its own
// epilogue (the row sums of its codes, the argmax of its rows) instead of
// a launch of its own. kind says which extension fits; fold is what the
// extension sets before queue runs.
type heldLaunch struct {
	kind       heldKind
	out        uint64 // the output the extension reads
	rows, cols int
	fold       aggFold
	queue      func(aggFold) error
}

// aggFold is what an op folds into a held aggregation: the row sums'
// destination (0: none), the argmax's destination (0: none) and its row
// index (0: row r at argOff + r).
type aggFold struct {
	sums, argOut, argIdx uint64
	argOff               int
}

type heldKind int

const (
	heldAggBits  heldKind = iota // planes packed by rows: row sums fold in
	heldAggFloat                 // float rows of at most 32 columns: argmax folds in
)

// hold keeps h for the next work on the device. Device work only.
func (d *Device) hold(h *heldLaunch) error {
	if err := d.releaseHeld(); err != nil {
		return err
	}
	d.held = h
	return nil
}

// foldHeld queues the held launch, if any, with set applied to its fold
// when it is of kind writing out (rows×cols): whether it folded. Device
// work only (runKeepingHeld's).
func (d *Device) foldHeld(kind heldKind, out uint64, rows, cols int, set func(*aggFold)) (bool, error) {
	h := d.held
	if h == nil {
		return false, nil
	}
	folds := h.kind == kind && h.out == out && h.rows == rows && h.cols == cols
	if folds {
		set(&h.fold)
	}
	return folds, d.releaseHeld()
}

// releaseHeld queues the held launch as it is, if any. Device work only.
func (d *Device) releaseHeld() error {
	h := d.held
	d.held = nil
	if h == nil {
		return nil
	}
	return h.queue(h.fold)
}

// module is the loaded module under key, or nil.
func (d *Device) module(key string) *module {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.modules[key]
}

// addModule records m under key. Device work only (it loaded m).
func (d *Device) addModule(key string, m *module) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.modules[key] = m
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// NVRTCVersion is the version of the loaded runtime compiler.
func (d *Device) NVRTCVersion() string { return d.nv.Version() }

// Close frees the device memory pool, modules, pinned buffer and stream,
// and releases the context, in the same piece of work that marks the
// device closed: no other work runs in between. Using the device
// afterwards returns ErrClosed.
func (d *Device) Close() error {
	d.busy.Lock()
	defer d.busy.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	return d.onThread(func() error {
		var err error
		if d.pool != nil || d.stream != nil { // opened (a test's device is not)
			err = d.freeAll()
		}
		if d.ctx != 0 {
			err = cmp.Or(err, d.drv.do("cuDevicePrimaryCtxRelease_v2", uintptr(d.dev)))
		}
		return err
	})
}

// freeAll is Close's freeing, in device work: the stream drained first.
func (d *Device) freeAll() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	keep(d.releaseHeld())
	if d.stream != nil {
		keep(d.drv.do("cuStreamSynchronize", d.stream.h))
	}
	keep(d.closeStaged())
	if d.pool != nil {
		keep(d.pool.release())
	}
	keep(d.freeRing())
	for _, h := range []**HostBuffer{&d.host, &d.args} {
		if *h != nil {
			keep((*h).free())
			*h = nil
		}
	}
	d.mu.Lock()
	for _, m := range d.modules {
		keep(d.drv.do("cuModuleUnload", m.h))
	}
	d.modules = nil
	d.mu.Unlock()
	if d.stream != nil {
		keep(d.drv.do("cuStreamDestroy_v2", d.stream.h))
	}
	return first
}

// Stream is a CUDA stream of the device.
type Stream struct {
	d *Device
	h uintptr
}

// NewStream creates a non-blocking stream.
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{d: d}
	err := d.run(func() error { return d.drv.do("cuStreamCreate", uintptr(unsafe.Pointer(&s.h)), 1) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Sync waits for everything queued on the stream.
func (s *Stream) Sync() error {
	return s.d.run(func() error { return s.d.drv.do("cuStreamSynchronize", s.h) })
}

// Close destroys the stream (not the device's default one).
func (s *Stream) Close() error {
	if s == s.d.stream {
		return nil
	}
	return s.d.run(func() error { return s.d.drv.do("cuStreamDestroy_v2", s.h) })
}

// Event is a CUDA event, used to time work on a stream.
type Event struct {
	d *Device
	h uintptr
}

// NewEvent creates a timing event.
func (d *Device) NewEvent() (*Event, error) {
	var e *Event
	err := d.run(func() error {
		var err error
		e, err = d.newEvent()
		return err
	})
	return e, err
}

// newEvent is NewEvent in device work.
func (d *Device) newEvent() (*Event, error) {
	e := &Event{d: d}
	if err := d.drv.do("cuEventCreate", uintptr(unsafe.Pointer(&e.h)), 0); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Event) record(s *Stream) error { return e.d.drv.do("cuEventRecord", e.h, s.h) }

// Record queues the event on s.
func (e *Event) Record(s *Stream) error { return e.d.run(func() error { return e.record(s) }) }

// Sync waits for the event.
func (e *Event) Sync() error {
	return e.d.run(func() error { return e.d.drv.do("cuEventSynchronize", e.h) })
}

// Close destroys the event.
func (e *Event) Close() error { return e.d.run(e.destroy) }

func (e *Event) destroy() error { return e.d.drv.do("cuEventDestroy_v2", e.h) }

// Elapsed is the time between two completed events.
func Elapsed(start, end *Event) (time.Duration, error) {
	var t time.Duration
	err := start.d.run(func() error {
		if err := start.d.drv.do("cuEventSynchronize", end.h); err != nil {
			return err
		}
		var err error
		t, err = elapsed(start, end)
		return err
	})
	return t, err
}

// elapsed is the time between two completed events, in device work.
func elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := start.d.drv.do("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), start.h, end.h)
	return time.Duration(float64(ms) * 1e6), err
}

// function returns kernel name from the module built from the given
// sources and options, compiling (or loading from the cache) on first use.
// Call in device work.
func (d *Device) function(modName, src string, headers []header, opts []string, name string) (uintptr, error) {
	key := cacheKey(src, headers, d.info.Arch(), d.nv.Version(), opts)
	return d.moduleFunction(key, modName, opts, name, func() ([]byte, error) {
		cubin, _, err := d.cache.getOrBuild(key, func() ([]byte, error) {
			return d.nv.compile(modName, src, headers, d.info.Arch(), opts)
		})
		return cubin, err
	})
}

// moduleFunction returns kernel name from the module loaded under key,
// loading the cubin build returns first if there is none. Call in device
// work.
func (d *Device) moduleFunction(key, modName string, opts []string, name string, build func() ([]byte, error)) (uintptr, error) {
	m := d.module(key)
	if m == nil {
		cubin, err := build()
		if err != nil {
			return 0, err
		}
		m = &module{funcs: map[string]uintptr{}}
		if err := d.drv.do("cuModuleLoadData", uintptr(unsafe.Pointer(&m.h)), uintptr(unsafe.Pointer(&cubin[0]))); err != nil {
			return 0, fmt.Errorf("%s %v: %w", modName, opts, err)
		}
		d.addModule(key, m)
	}
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	var f uintptr
	if err := d.drv.do("cuModuleGetFunction", uintptr(unsafe.Pointer(&f)), m.h, uintptr(unsafe.Pointer(cstr(name)))); err != nil {
		return 0, fmt.Errorf("%s: kernel %s: %w", modName, name, err)
	}
	m.funcs[name] = f
	return f, nil
}

// residentBlocks is how many blocks of f (threads each, smem bytes of
// dynamic shared memory) fit on the whole device at once: a grid of that
// many blocks runs in one wave. Call in device work.
func (d *Device) residentBlocks(f uintptr, threads, smem int) (int, error) {
	k := fnShape{f, threads, smem}
	if n, ok := d.fnBlocks[k]; ok {
		return n, nil
	}
	if err := d.allowSmem(f, smem); err != nil {
		return 0, err
	}
	var per int32
	if err := d.drv.do("cuOccupancyMaxActiveBlocksPerMultiprocessor", uintptr(unsafe.Pointer(&per)), f, uintptr(threads), uintptr(smem)); err != nil {
		return 0, err
	}
	n := max(int(per), 1) * d.info.SMs
	d.fnBlocks[k] = n
	return n, nil
}

// allowSmem opts f into smem bytes of dynamic shared memory where that is
// past the default 48 KB (static shared memory counts against the 48 KB
// too, hence the lower threshold).
func (d *Device) allowSmem(f uintptr, smem int) error {
	if smem > 32<<10 && smem > d.fnSmem[f] {
		if err := d.drv.do("cuFuncSetAttribute", f, 8, uintptr(smem)); err != nil {
			return fmt.Errorf("%d bytes of dynamic shared memory: %w", smem, err)
		}
		d.fnSmem[f] = smem
	}
	return nil
}

// maxParams bounds a kernel's parameters; all are 64-bit.
const maxParams = 32

// launch queues kernel f with the given 64-bit parameters. The values and
// the pointer array CUDA reads them through live in pinned host memory,
// which the Go runtime never moves. Call in device work.
func (d *Device) launch(f uintptr, grid, block [3]uint32, smem int, s *Stream, params ...uint64) error {
	if len(params) > maxParams {
		return fmt.Errorf("%w: %d kernel parameters, at most %d", ErrShape, len(params), maxParams)
	}
	if d.args == nil {
		h, err := d.allocHost(2 * 8 * maxParams)
		if err != nil {
			return err
		}
		d.args = h
	}
	if err := d.allowSmem(f, smem); err != nil {
		return err
	}
	vals := unsafe.Slice((*uint64)(cptr(d.args.ptr)), maxParams)
	ptrs := unsafe.Slice((*uintptr)(cptr(d.args.ptr+8*maxParams)), maxParams)
	for i, v := range params {
		vals[i] = v
		ptrs[i] = d.args.ptr + uintptr(8*i)
	}
	return d.drv.do("cuLaunchKernel", f,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(smem), s.h, d.args.ptr+8*maxParams, 0)
}
