package tcu

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// Backend implements bmm.Backend on one GPU: operands live in device
// memory (the device's pool), ops are kernel launches on the device's
// stream, and only Argmax and the Read methods copy results back. Products run on
// the mma.sync kernel (bmm_mma.cu), which reads operands in the bittensor
// layout itself, so an op's packed output is the next op's operand as it
// lies; the wgmma kernel's tiled layout depends on each launch's tile and
// is left to a later change. Products past int32 are summed from plane
// groups on the device (mul). Aggregations, the wide products' sums and
// epilogue, row sums and argmax are kernels/agg.cu.
//
// Traffic counts every byte copied between host and device: the uploads
// and the downloads of Argmax and the Read methods. Ops copy nothing (a
// product's descriptor is a kernel parameter, bmm_mma.cu ONEPROB); Ops
// counts kernel launches (the clearing of packed outputs, a memset, is
// not one).
type Backend struct {
	k      *Kernel // mma.sync on every shape
	d      *Device
	tr     bmm.Traffic
	live   map[*devMem]struct{} // operands not yet freed; Close frees them
	closed bool
	fns    map[string]uintptr // agg.cu's kernels
	mulFns map[config]uintptr // bmm_mma's variants by config (device work only)
	prof   bmm.Profile
	tm     timing
	kp     kprof      // per-kernel timing (kprof.go)
	rec    *recording // the pass being recorded (device work only)
}

var _ bmm.Backend = (*Backend)(nil)

// aggKernels are the entry points of kernels/agg.cu.
var aggKernels = []string{"agg8", "agg8s", "agg32", "agg32s", "widen", "wideout", "add", "rowsums", "argmax"}

// codesSlack is the bytes every code buffer holds past its codes: agg.cu
// reads a narrow row's codes as the aligned words around them.
const codesSlack = 8

// aggHeavyDeg is the longest row agg.cu gives one warp (or a group of
// lanes); longer rows take a whole block of warps each
// (bench/e2e/RESULTS.md), in blocks of 32 warps instead of 8 in a graph
// with a row past aggHeavyWide entries.
const aggHeavyDeg, aggHeavyWide = 128, 2048

// NewBackend returns the resident backend on k's device. It compiles (or
// loads from the kernel cache) kernels/agg.cu up front, so that a broken
// build fails here rather than in the middle of a model.
func NewBackend(k *Kernel) (*Backend, error) {
	if k == nil {
		return nil, fmt.Errorf("%w: nil kernel", ErrShape)
	}
	km, err := k.WithPath(PathMMA)
	if err != nil {
		return nil, err
	}
	be := &Backend{k: km, d: k.d, live: map[*devMem]struct{}{}, fns: map[string]uintptr{}}
	err = be.d.run(func() error {
		src, hdrs := kernelSource("agg.cu")
		for _, name := range aggKernels {
			f, err := be.d.function("agg.cu", src, hdrs, []string{"--std=c++17", "--fmad=false"}, name)
			if err != nil {
				return err
			}
			be.fns[name] = f
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return be, nil
}

// Name implements bmm.Backend.
func (be *Backend) Name() string { return "tcu/" + PathMMA }

// Traffic implements bmm.Backend.
func (be *Backend) Traffic() bmm.Traffic { return be.tr }

// Close frees every operand still live. The device stays open (it is the
// kernel's).
func (be *Backend) Close() error {
	if be.closed {
		return nil
	}
	be.closed = true
	var errs []error
	for m := range be.live {
		errs = append(errs, m.buf.Free())
		m.buf = nil
	}
	be.live = nil
	if be.tm.ev[0] == nil {
		return errors.Join(errs...)
	}
	errs = append(errs, be.d.run(func() error {
		errs := []error{be.closeKernelEvents()}
		for i, e := range be.tm.ev {
			if e != nil {
				errs = append(errs, e.destroy())
				be.tm.ev[i] = nil
			}
		}
		return errors.Join(errs...)
	}))
	return errors.Join(errs...)
}

// devMem is an operand's device memory.
type devMem struct {
	be  *Backend
	buf *Buffer // nil once freed
}

// Free implements bmm.Operand.
func (m *devMem) Free() {
	if m.buf == nil || m.be.closed {
		return
	}
	_ = m.buf.Free() // returns the block to the pool; later work on the stream runs after the ops that read it
	m.buf = nil
	delete(m.be.live, m)
}

func (m *devMem) ptr() uint64 { return uint64(m.buf.ptr) }

// mine checks that m is a live operand of be.
func (be *Backend) mine(m *devMem) error {
	if m == nil || m.be != be || m.buf == nil {
		return bmm.ErrForeign
	}
	return nil
}

// devBits is a packed tensor in device memory, in the layout the mma
// kernel reads (operandLayout): lines padded to 16, each line a whole
// number of 256-bit k-steps, plane after plane.
type devBits struct {
	devMem
	rows, cols, bits int
	packing          bittensor.Packing
	lay              operandLayout
	// lists holds the zero-tile lists (kptr, kidx device addresses) of an
	// uploaded A for each row tile height a launch may use; a height not
	// here, or an A the device wrote, runs every k-step.
	lists map[int][2]uint64
}

func (b *devBits) Rows() int                  { return b.rows }
func (b *devBits) Cols() int                  { return b.cols }
func (b *devBits) Bits() int                  { return b.bits }
func (b *devBits) Packing() bittensor.Packing { return b.packing }
func (b *devBits) k() int {
	if b.packing == bittensor.ByRows {
		return b.cols
	}
	return b.rows
}
func (b *devBits) lines() int {
	if b.packing == bittensor.ByRows {
		return b.rows
	}
	return b.cols
}

// devCodes is a row-major matrix of byte codes, rows·cols bytes.
type devCodes struct {
	devMem
	rows, cols, bits int
}

func (c *devCodes) Rows() int { return c.rows }
func (c *devCodes) Cols() int { return c.cols }
func (c *devCodes) Bits() int { return c.bits }

// devVector is float32 values.
type devVector struct {
	devMem
	n int
}

func (v *devVector) Len() int { return v.n }

// devGraph is a CSR graph: indptr, indices and the optional byte weights
// in one buffer.
type devGraph struct {
	devMem
	rows, src         int
	indptr, indices   uint64
	weights           uint64 // 0: every weight is 1
	maxDeg, maxWeight int64
	heavy             uint64 // the rows of more than aggHeavyDeg entries
	nHeavy            int
}

func (g *devGraph) Rows() int { return g.rows }

// listHeights are the row tiles mmaConfig chooses (powers of two from 16
// to 1024), for which UploadBits makes zero-tile lists.
var listHeights = []int{16, 32, 64, 128, 256, 512, 1024}

// residentLayout is t's layout on the device: t's padded lines, each line
// ceil(K/256) k-steps long (the default padding's), so that operands of
// any padding with the same K multiply together.
func residentLayout(t *bittensor.Tensor) operandLayout {
	return operandLayout{lines: t.PaddedLines(), lw: roundUp((t.K()+63)/64, stepWords)}
}

// bitsLayout is the device layout of a rows×cols tensor with the default
// padding.
func bitsLayout(rows, cols int, packing bittensor.Packing) operandLayout {
	lines, k := rows, cols
	if packing == bittensor.ByCols {
		lines, k = cols, rows
	}
	p := bittensor.DefaultPadding
	return operandLayout{lines: roundUp(lines, p.Lines), lw: roundUp(roundUp(k, p.Bits)/64, stepWords)}
}

// track registers a new operand's memory.
func (be *Backend) track(m *devMem, buf *Buffer) {
	m.be, m.buf = be, buf
	be.live[m] = struct{}{}
}

// fillHere is the size from which an upload's region is written into its
// pinned slot on the caller's goroutine, on several cores, before its
// device work: that work holds the device and its OS thread, and each wait
// for other goroutines costs it a reschedule, which several devices make
// long.
const fillHere = 512 << 10

// uploadTo uploads r into a new device buffer and hands the buffer to keep
// in device work. The copy is queued on the stream without waiting
// for it: ops queued after it read it, and the host goes on packing the
// next upload meanwhile. (A freed block the buffer reuses is written only
// after the ops queued before, which read it.)
func (be *Backend) uploadTo(r *region, keep func(*Buffer)) error {
	var s *upSlot
	if r.size >= fillHere && r.size <= upRingMax {
		if err := be.d.run(func() (err error) { s, err = be.d.reserve(r.size); return err }); err != nil {
			return err
		}
		if s != nil {
			r.fill(s.h.Bytes(), true)
		}
	}
	return be.d.run(func() error {
		buf, err := be.upload(r, s)
		if err == nil {
			keep(buf)
		}
		return err
	})
}

// upload copies the region into a new device buffer: from s when the
// caller filled that reserved slot, else through a slot of the upload ring
// filled here, past upRingMax through the slots a piece at a time
// (uploadPieces), or (empty, or with every slot being filled) through the
// shared staging buffer, waiting. Device work only.
func (be *Backend) upload(r *region, s *upSlot) (*Buffer, error) {
	if s == nil && r.size > 0 && r.size <= upRingMax {
		var err error
		if s, err = be.d.reserve(r.size); err != nil {
			return nil, err
		}
		if s != nil {
			r.fill(s.h.Bytes(), false)
		}
	}
	if s != nil {
		buf, err := be.queueCopy(s.h.ptr, r.size, func() error { return be.d.copied(s) })
		if err != nil {
			be.d.release(s)
		}
		return buf, err
	}
	if r.size > upRingMax {
		return be.newUploaded(r.size, func(buf *Buffer) error { return be.uploadPieces(r, buf) })
	}
	return be.newUploaded(r.size, func(buf *Buffer) error {
		if r.size == 0 {
			return nil
		}
		st, err := be.d.staging(r.size)
		if err != nil {
			return err
		}
		r.fill(st.Bytes(), true)
		return be.waitCopy(func() error { return be.d.htod(buf.ptr, st.ptr, r.size) }, nil)
	})
}

// upPiece is how much of an upload past upRingMax one ring slot takes.
const upPiece = 16 << 20

// uploadPieces copies a region past upRingMax into buf a piece at a time
// through the ring's slots: the host fills the next piece while the device
// copies this one, so neither waits for the other, and nothing waits for
// the stream. With every slot being filled by callers, the rest goes
// through the staging buffer, waiting. Device work only.
func (be *Backend) uploadPieces(r *region, buf *Buffer) error {
	for lo := 0; lo < r.size; lo += upPiece {
		n := min(upPiece, r.size-lo)
		s, err := be.d.reserve(n)
		if err != nil {
			return err
		}
		if s == nil {
			st, err := be.d.staging(r.size - lo)
			if err != nil {
				return err
			}
			r.fillRange(st.Bytes()[:r.size-lo], lo, r.size, true)
			return be.waitCopy(func() error { return be.d.htod(buf.ptr+uintptr(lo), st.ptr, r.size-lo) }, nil)
		}
		r.fillRange(s.h.Bytes()[:n], lo, lo+n, true)
		if err := be.spanOpen(); err != nil { // the copy is device time
			be.d.release(s)
			return err
		}
		if err := be.d.htod(buf.ptr+uintptr(lo), s.h.ptr, n); err != nil {
			be.d.release(s)
			return err
		}
		if err := be.d.copied(s); err != nil {
			return err
		}
	}
	return nil
}

// queueCopy queues the copy of n bytes of pinned memory at src into a new
// device buffer, without waiting for it; queued then records what keeps
// src alive until the copy has run. Device work only.
func (be *Backend) queueCopy(src uintptr, n int, queued func() error) (*Buffer, error) {
	return be.newUploaded(n, func(buf *Buffer) error {
		if err := be.spanOpen(); err != nil { // the copy is device time
			return err
		}
		if err := be.d.htod(buf.ptr, src, n); err != nil {
			return err
		}
		return queued()
	})
}

// newUploaded allocates a device buffer of n bytes and has write fill it
// from the host, counted as an upload. Device work only.
func (be *Backend) newUploaded(n int, write func(*Buffer) error) (*Buffer, error) {
	if be.rec != nil {
		return nil, fmt.Errorf("%w: upload while a pass is recorded", ErrShape)
	}
	t0 := time.Now()
	defer func() { be.prof.Upload += time.Since(t0) }()
	buf, err := be.d.alloc(max(n, 4))
	if err != nil {
		return nil, err
	}
	if err := write(buf); err != nil {
		_ = be.d.pool.put(buf.ptr)
		return nil, err
	}
	be.tr.HostToDevice += int64(n)
	return buf, nil
}

func (be *Backend) open() error {
	if be.closed {
		return fmt.Errorf("%w (%w)", bmm.ErrForeign, ErrClosed)
	}
	return nil
}

// UploadBits implements bmm.Backend: t's words in the device layout, and
// for a tensor packed by rows (an A) its zero-tile lists, one copy.
func (be *Backend) UploadBits(t *bittensor.Tensor) (bmm.Bits, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", bmm.ErrShape)
	}
	var p *bitsPrep
	s := takeStaged(t, 0)
	if s != nil {
		p = s.bits
	} else {
		p = prepBits(t, true)
	}
	var out *devBits
	if err := be.uploadPrep(s, &p.r, func(buf *Buffer) { out = p.keep(be, buf) }); err != nil {
		return nil, err
	}
	return out, nil
}

// uploadPrep uploads a prepared region, from s where a worker staged it.
func (be *Backend) uploadPrep(s *stagedOp, r *region, keep func(*Buffer)) error {
	if s != nil {
		return be.uploadStaged(s, keep)
	}
	return be.uploadTo(r, keep)
}

// bitsPrep is an UploadBits's host side: the region (t's lines in the
// resident layout, then its tile lists) and the operand it makes.
type bitsPrep struct {
	r     region
	b     devBits // without memory or lists
	lists []listAt
}

// listAt is a row tile height's zero-tile list: kptr and kidx at offsets
// of the region.
type listAt struct {
	h      int
	kp, ki int
}

// prepBits lays t out; with spread, a large tile mask is made on several
// cores.
func prepBits(t *bittensor.Tensor, spread bool) *bitsPrep {
	lay := residentLayout(t)
	p := &bitsPrep{b: devBits{rows: t.Rows(), cols: t.Cols(), bits: t.Bits(), packing: t.Packing(), lay: lay}}
	// Lines of another length go straight into pinned memory in the
	// resident layout: no copy of the operand on the way.
	p.r.addRows(asBytes(t.Words()), 8*t.LineWords(), 8*lay.lw, t.Bits()*lay.lines)
	if t.Packing() == bittensor.ByRows && lay.lw > 0 && t.Rows() > 0 {
		// A mask with every tile set makes no list shorter than the whole.
		if mask := newTileMask(t.Words(), t.LineWords(), t.Bits(), lay, spread); mask.Count() < mask.RowTiles*mask.ColTiles {
			for _, h := range listHeights {
				kp, ki := tileList(mask, h)
				if len(ki) < (len(kp)-1)*(lay.lw/stepWords) {
					p.lists = append(p.lists, listAt{h, p.r.add(asBytes(kp), 4*len(kp)), p.r.add(asBytes(ki), 4*max(len(ki), 1))})
				}
			}
		}
	}
	return p
}

// keep makes the operand of the region uploaded into buf. Device work.
func (p *bitsPrep) keep(be *Backend, buf *Buffer) *devBits {
	b := new(devBits)
	*b = p.b
	b.lists = map[int][2]uint64{}
	be.track(&b.devMem, buf)
	for _, l := range p.lists {
		b.lists[l.h] = [2]uint64{uint64(buf.ptr) + uint64(l.kp), uint64(buf.ptr) + uint64(l.ki)}
	}
	return b
}

// UploadVector implements bmm.Backend.
func (be *Backend) UploadVector(v []float32) (bmm.Vector, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	var r region
	r.add(asBytes(v), 4*len(v))
	out := &devVector{n: len(v)}
	if err := be.uploadTo(&r, func(buf *Buffer) { be.track(&out.devMem, buf) }); err != nil {
		return nil, err
	}
	return out, nil
}

// UploadCodes implements bmm.Backend; a value at or past 2^bits is an
// error naming its place.
func (be *Backend) UploadCodes(vals []uint8, rows, cols, bits int) (bmm.Codes, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if bits < 1 || bits > 8 {
		return nil, fmt.Errorf("%w: %d-bit codes (1..8)", bmm.ErrBits, bits)
	}
	if rows < 0 || cols < 0 || len(vals) != rows*cols {
		return nil, fmt.Errorf("%w: %d codes for %d×%d", bmm.ErrShape, len(vals), rows, cols)
	}
	top := uint8(1<<bits - 1)
	for i, v := range vals {
		if v > top {
			return nil, fmt.Errorf("%w: code %d at row %d, column %d does not fit %d bits", bmm.ErrRange, v, i/cols, i%cols, bits)
		}
	}
	var r region
	r.add(vals, len(vals)+codesSlack)
	out := &devCodes{rows: rows, cols: cols, bits: bits}
	if err := be.uploadTo(&r, func(buf *Buffer) { be.track(&out.devMem, buf) }); err != nil {
		return nil, err
	}
	return out, nil
}

// UploadGraph implements bmm.Backend: g is checked (indptr from 0, non
// decreasing, to len(Indices); every index in [0, srcRows); weights below
// 2^WeightBits) and copied once.
func (be *Backend) UploadGraph(g *bmm.Graph, srcRows int) (bmm.GraphOperand, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if !isCSR(g) || srcRows < 0 {
		return nil, fmt.Errorf("%w: graph is not CSR (indptr from 0 to the %d indices) over %d source rows", bmm.ErrShape, lenIndices(g), srcRows)
	}
	if len(g.Indices) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d edges, at most 2^31−1", bmm.ErrShape, len(g.Indices))
	}
	var p *graphPrep
	s := takeStaged(g, srcRows)
	if s != nil {
		p = s.graph
	} else {
		var err error
		if p, err = prepGraph(g, srcRows); err != nil {
			return nil, err
		}
	}
	var out *devGraph
	if err := be.uploadPrep(s, &p.r, func(buf *Buffer) { out = p.keep(be, buf) }); err != nil {
		return nil, err
	}
	return out, nil
}

// graphPrep is an UploadGraph's host side: the region (indptr, indices,
// weights, the heavy rows) and the operand it makes.
type graphPrep struct {
	r              region
	g              devGraph // without memory or addresses
	ip, ix, iw, ih int      // the parts' offsets, -1 for none
}

// prepGraph checks g (a CSR; see UploadGraph) and lays it out.
func prepGraph(g *bmm.Graph, srcRows int) (*graphPrep, error) {
	maxDeg, maxWeight, err := g.Stats(srcRows)
	if err != nil {
		return nil, err
	}
	p := &graphPrep{g: devGraph{rows: len(g.Indptr) - 1, src: srcRows, maxDeg: maxDeg, maxWeight: maxWeight}, iw: -1, ih: -1}
	p.ip = p.r.add(asBytes(g.Indptr), 4*len(g.Indptr))
	p.ix = p.r.add(asBytes(g.Indices), 4*max(len(g.Indices), 1))
	if g.Weights != nil {
		p.iw = p.r.add(g.Weights, max(len(g.Weights), 1))
	}
	if heavy := heavyRows(g.Indptr, maxDeg); len(heavy) > 0 {
		p.ih, p.g.nHeavy = p.r.add(asBytes(heavy), 4*len(heavy)), len(heavy)
	}
	return p, nil
}

// keep makes the operand of the region uploaded into buf. Device work.
func (p *graphPrep) keep(be *Backend, buf *Buffer) *devGraph {
	out := new(devGraph)
	*out = p.g
	be.track(&out.devMem, buf)
	base := uint64(buf.ptr)
	out.indptr, out.indices = base+uint64(p.ip), base+uint64(p.ix)
	if p.iw >= 0 {
		out.weights = base + uint64(p.iw)
	}
	if p.ih >= 0 {
		out.heavy = base + uint64(p.ih)
	}
	return out
}

// heavyRows lists the rows of more than aggHeavyDeg entries (none when the
// longest, maxDeg, is not), longest first by powers of two: the blocks
// that take them start first, so the longest chains of loads begin with
// the launch. Buckets, not a sort: a cold pass lists every batch's rows.
func heavyRows(indptr []int32, maxDeg int64) []int32 {
	if maxDeg <= aggHeavyDeg {
		return nil
	}
	var count [33]int
	for r := range len(indptr) - 1 {
		if d := indptr[r+1] - indptr[r]; d > aggHeavyDeg {
			count[bits.Len32(uint32(d))]++
		}
	}
	var start [33]int
	for b, n := 32, 0; b >= 0; b-- {
		start[b], n = n, n+count[b]
	}
	heavy := make([]int32, start[0])
	for r := range len(indptr) - 1 {
		if d := indptr[r+1] - indptr[r]; d > aggHeavyDeg {
			b := bits.Len32(uint32(d))
			heavy[start[b]] = int32(r)
			start[b]++
		}
	}
	return heavy
}

// isCSR reports whether g's indptr runs from 0 to its indices' count.
func isCSR(g *bmm.Graph) bool {
	return g != nil && len(g.Indptr) > 0 && g.Indptr[0] == 0 && int(g.Indptr[len(g.Indptr)-1]) == len(g.Indices)
}

func lenIndices(g *bmm.Graph) int {
	if g == nil {
		return 0
	}
	return len(g.Indices)
}

// newMem allocates n bytes (cleared) for a new operand. Device work only.
func (be *Backend) newMem(m *devMem, n int) error {
	buf, err := be.d.alloc(max(n, 4))
	if err != nil {
		return err
	}
	if err := be.d.memset32(buf.ptr, 0, roundUp(max(n, 4), 4)/4); err != nil {
		_ = be.d.pool.put(buf.ptr)
		return err
	}
	be.track(m, buf)
	return nil
}

// NewBits implements bmm.Backend: a zero tensor with the default padding.
func (be *Backend) NewBits(rows, cols, bits int, packing bittensor.Packing) (bmm.Bits, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if bits < 1 || bits > bittensor.MaxBits {
		return nil, fmt.Errorf("%w: %d bits", bmm.ErrBits, bits)
	}
	if rows < 0 || cols < 0 || (packing != bittensor.ByRows && packing != bittensor.ByCols) {
		return nil, fmt.Errorf("%w: %d×%d packed by %v", bmm.ErrShape, rows, cols, packing)
	}
	lay := bitsLayout(rows, cols, packing)
	b := &devBits{rows: rows, cols: cols, bits: bits, packing: packing, lay: lay}
	if err := be.d.runKeepingHeld(func() error { return be.newMem(&b.devMem, 8*bits*lay.planeWords()) }); err != nil {
		return nil, err
	}
	return b, nil
}

// NewCodes implements bmm.Backend.
func (be *Backend) NewCodes(rows, cols, bits int) (bmm.Codes, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if bits < 1 || bits > 8 {
		return nil, fmt.Errorf("%w: %d-bit codes (1..8)", bmm.ErrBits, bits)
	}
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("%w: %d×%d codes", bmm.ErrShape, rows, cols)
	}
	c := &devCodes{rows: rows, cols: cols, bits: bits}
	if err := be.d.runKeepingHeld(func() error { return be.newMem(&c.devMem, rows*cols+codesSlack) }); err != nil {
		return nil, err
	}
	return c, nil
}

// NewVector implements bmm.Backend.
func (be *Backend) NewVector(n int) (bmm.Vector, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: vector of %d", bmm.ErrShape, n)
	}
	v := &devVector{n: n}
	if err := be.d.runKeepingHeld(func() error { return be.newMem(&v.devMem, 4*n) }); err != nil {
		return nil, err
	}
	return v, nil
}

// ReadVector implements bmm.Backend.
func (be *Backend) ReadVector(dst []float32, v bmm.Vector) error {
	dv, err := be.vector(v)
	if err != nil {
		return err
	}
	if len(dst) != dv.n {
		return fmt.Errorf("%w: reading a vector of %d into %d values", bmm.ErrShape, dv.n, len(dst))
	}
	return be.d.run(func() error { return be.download(asBytes(dst), dv.buf.ptr) })
}

// ReadBits implements bmm.Backend: b as a host tensor with the default
// padding (lines past b's own padded ones are zero).
func (be *Backend) ReadBits(b bmm.Bits) (*bittensor.Tensor, error) {
	db, err := be.bitsOf(b)
	if err != nil {
		return nil, err
	}
	out, err := bittensor.New(db.rows, db.cols, db.bits, db.packing, bittensor.DefaultPadding)
	if err != nil {
		return nil, err
	}
	raw := make([]uint64, db.bits*db.lay.planeWords())
	if err := be.d.run(func() error { return be.download(asBytes(raw), db.buf.ptr) }); err != nil {
		return nil, err
	}
	for p := 0; p < db.bits; p++ {
		for l := 0; l < min(out.PaddedLines(), db.lay.lines); l++ {
			copy(out.Line(p, l), raw[p*db.lay.planeWords()+l*db.lay.lw:][:db.lay.lw])
		}
	}
	return out, nil
}

// ReadCodes implements bmm.Backend.
func (be *Backend) ReadCodes(dst []uint8, c bmm.Codes) error {
	dc, err := be.codes(c)
	if err != nil {
		return err
	}
	if len(dst) != dc.rows*dc.cols {
		return fmt.Errorf("%w: reading %d×%d codes into %d", bmm.ErrShape, dc.rows, dc.cols, len(dst))
	}
	return be.d.run(func() error { return be.download(dst, dc.buf.ptr) })
}

// download copies len(dst) bytes from src after every queued op. Device
// thread only.
func (be *Backend) download(dst []byte, src uintptr) error {
	if be.rec != nil {
		return fmt.Errorf("%w: download while a pass is recorded", ErrShape)
	}
	if len(dst) == 0 {
		return be.waitCopy(nil, nil)
	}
	st, err := be.d.staging(len(dst))
	if err != nil {
		return err
	}
	if err := be.waitCopy(func() error { return be.d.dtoh(st.ptr, src, len(dst)) }, &be.prof.Download); err != nil {
		return err
	}
	copy(dst, st.Bytes())
	be.tr.DeviceToHost += int64(len(dst))
	return nil
}

// Argmax implements bmm.Backend: a thread per row on the device (the
// first largest, NaN never winning, as layers.QArgmax), then the int32
// predictions come back.
func (be *Backend) Argmax(dst []int32, logits bmm.Vector, cols int) error {
	be.setOp("Argmax")
	lv, err := be.vector(logits)
	if err != nil {
		return err
	}
	if cols < 1 || lv.n != len(dst)*cols {
		return fmt.Errorf("%w: argmax of %d values as %d rows of %d columns", bmm.ErrShape, lv.n, len(dst), cols)
	}
	return be.d.run(func() error {
		if len(dst) == 0 {
			return nil
		}
		out, err := be.d.alloc(4 * len(dst))
		if err != nil {
			return err
		}
		defer be.d.pool.put(out.ptr)
		if err := be.launch("argmax", (len(dst)+255)/256, 256, lv.ptr(), 0, uint64(out.ptr), uint64(len(dst)), uint64(cols)); err != nil {
			return err
		}
		if be.rec != nil {
			return be.copyRecorded(dst, out.ptr, false)
		}
		return be.download(asBytes(dst), out.ptr)
	})
}

// launch queues one of agg.cu's kernels. Device work only.
func (be *Backend) launch(name string, blocks, threads int, params ...uint64) error {
	if blocks == 0 {
		return nil
	}
	if be.fns[name] == 0 {
		return fmt.Errorf("tcu: internal: kernel %s of agg.cu is not loaded (aggKernels)", name)
	}
	if err := be.queued(); err != nil {
		return err
	}
	if err := be.kernelBegin(name, blocks, threads); err != nil {
		return err
	}
	if err := be.d.launch(be.fns[name], [3]uint32{uint32(blocks), 1, 1}, [3]uint32{uint32(threads), 1, 1}, 0, be.d.stream, params...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return be.kernelEnd()
}

// The operand checks: a live operand of this backend, or ErrForeign.
func (be *Backend) bitsOf(b bmm.Bits) (*devBits, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	d, ok := b.(*devBits)
	if !ok {
		return nil, bmm.ErrForeign
	}
	return d, be.mine(&d.devMem)
}

func (be *Backend) codes(c bmm.Codes) (*devCodes, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	d, ok := c.(*devCodes)
	if !ok {
		return nil, bmm.ErrForeign
	}
	return d, be.mine(&d.devMem)
}

func (be *Backend) vector(v bmm.Vector) (*devVector, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	d, ok := v.(*devVector)
	if !ok {
		return nil, bmm.ErrForeign
	}
	return d, be.mine(&d.devMem)
}

func (be *Backend) graph(g bmm.GraphOperand) (*devGraph, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	d, ok := g.(*devGraph)
	if !ok {
		return nil, bmm.ErrForeign
	}
	return d, be.mine(&d.devMem)
}

// f32bits passes a float32 as a 64-bit kernel parameter (agg.cu bitsFloat).
func f32bits(f float32) uint64 { return uint64(math.Float32bits(f)) }
