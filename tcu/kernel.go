package tcu

import (
	"embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

//go:embed kernels/*.cu kernels/*.cuh
var kernelFS embed.FS

func kernelSource(name string) (string, []header) {
	src, err := kernelFS.ReadFile("kernels/" + name)
	if err != nil {
		panic("tcu: missing embedded kernel " + name) // build error, not a user one
	}
	var hs []header
	for _, h := range []string{"common.cuh", "wgmma_ops.cuh"} {
		b, err := kernelFS.ReadFile("kernels/" + h)
		if err != nil {
			panic("tcu: missing embedded header " + h)
		}
		hs = append(hs, header{name: h, src: string(b)})
	}
	return string(src), hs
}

// Kernel is the GPU bit-matmul kernel: it implements bmm.Kernel on the
// device's 1-bit tensor cores, choosing wgmma (Hopper) or mma.sync per
// shape at run time. Operands are copied to the device for each call; use
// the Batch methods to run many products in one launch.
type Kernel struct {
	d        *Device
	force    string // "" (choose per shape), PathMMA or PathWGMMA
	wgmmaOK  bool
	wgmmaWhy string // why wgmma is off, when it is
	lbo, sbo int
	tune     tuning // wgmma overrides (tuning benchmarks)
}

var _ bmm.Kernel = (*Kernel)(nil)

// NewKernel prepares the kernel on d. On Hopper it checks the wgmma path
// against the CPU reference once, on random operands, and switches it off
// (with the reason in WGMMA) if the results differ or it fails to build.
func NewKernel(d *Device) (*Kernel, error) {
	k := &Kernel{d: d}
	if d.info.Major != 9 || d.info.Minor != 0 {
		k.wgmmaWhy = fmt.Sprintf("wgmma needs sm_90a, device is %s", d.info.Arch())
		return k, nil
	}
	var whys []string
	for _, ls := range [][2]int{{128, 256}, {256, 128}} {
		k.wgmmaOK, k.lbo, k.sbo = true, ls[0], ls[1]
		err := k.probeWGMMA()
		if err == nil {
			k.wgmmaWhy = ""
			return k, nil
		}
		whys = append(whys, fmt.Sprintf("LBO=%d SBO=%d: %v", ls[0], ls[1], err))
		if errors.Is(err, ErrCompile) {
			break
		}
	}
	k.wgmmaOK = false
	k.wgmmaWhy = "wgmma self-check failed: " + fmt.Sprint(whys)
	return k, nil
}

// probeWGMMA runs wgmma products on random operands and compares them
// with bmm.Generic.
func (k *Kernel) probeWGMMA() error {
	w := &Kernel{d: k.d, force: PathWGMMA, wgmmaOK: true, lbo: k.lbo, sbo: k.sbo}
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ m, kk, n, a, b int }{{150, 700, 40, 2, 2}, {130, 520, 300, 1, 1}} {
		a, b, err := randomPair(r, s.m, s.kk, s.n, s.a, s.b)
		if err != nil {
			return err
		}
		want := make([]int32, s.m*s.n)
		if err := (bmm.Generic{}).MulInt(want, a, b); err != nil {
			return err
		}
		got := make([]int32, s.m*s.n)
		if err := w.MulInt(got, a, b); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					return fmt.Errorf("%d×%d×%d a%d b%d: C[%d][%d] = %d, want %d", s.m, s.kk, s.n, s.a, s.b, i/s.n, i%s.n, got[i], want[i])
				}
			}
		}
	}
	return nil
}

func randomPair(r *rand.Rand, m, k, n, ab, bb int) (a, b *bittensor.Tensor, err error) {
	av := make([]int32, m*k)
	for i := range av {
		av[i] = int32(r.IntN(1 << ab))
	}
	bv := make([]int32, k*n)
	for i := range bv {
		bv[i] = int32(r.IntN(1 << bb))
	}
	if a, err = bittensor.PackRows(av, m, k, ab); err != nil {
		return nil, nil, err
	}
	b, err = bittensor.PackCols(bv, k, n, bb)
	return a, b, err
}

// Name implements bmm.Kernel: "tcu/wgmma" when the wgmma path is on (it
// takes the shapes it fits; mma.sync the rest), else "tcu/mma".
func (k *Kernel) Name() string {
	if k.force != "" {
		return "tcu/" + k.force
	}
	if k.wgmmaOK {
		return "tcu/wgmma"
	}
	return "tcu/mma"
}

// WGMMA reports whether the wgmma path is on and, if not, why.
func (k *Kernel) WGMMA() (bool, string) { return k.wgmmaOK, k.wgmmaWhy }

// Device is the kernel's device.
func (k *Kernel) Device() *Device { return k.d }

// WithPath returns a kernel that takes path (PathMMA or PathWGMMA) for
// every shape it has a variant for, for tests and benchmarks. Shapes with
// no wgmma variant still run on mma.sync.
func (k *Kernel) WithPath(path string) (*Kernel, error) {
	switch path {
	case PathMMA:
	case PathWGMMA:
		if !k.wgmmaOK {
			return nil, fmt.Errorf("%w: %s", ErrUnsupported, k.wgmmaWhy)
		}
	default:
		return nil, fmt.Errorf("%w: unknown kernel path %q", ErrUnsupported, path)
	}
	c := *k
	c.force = path
	return &c, nil
}

// withTuning returns a kernel whose wgmma variants take the overrides in t.
func (k *Kernel) withTuning(t tuning) *Kernel {
	c := *k
	c.tune = t
	return &c
}

// target is the device and path k chooses launches for.
func (k *Kernel) target() target {
	return target{sms: k.d.info.SMs, wgmma: k.wgmmaOK, force: k.force, lbo: k.lbo, sbo: k.sbo}
}

// ztj is one product's zero-tile list for the chosen row tile (kp nil:
// the product is dense, or noZTJ).
type ztj struct{ kp, ki []int32 }

// choose describes jobs to chooseConfig and returns its choice with each
// job's zero-tile list for the chosen row tile.
func (k *Kernel) choose(jobs []job) (config, []ztj) {
	l := launch{abits: jobs[0].a.Bits(), bbits: jobs[0].b.Bits(), nprob: len(jobs), allInt: true, fits16: true}
	for _, j := range jobs {
		l.m, l.n, l.ksteps = max(l.m, j.m), max(l.n, j.n), max(l.ksteps, layoutOf(j.a).lw/stepWords)
		l.mode = max(l.mode, j.mode)
		l.allInt = l.allInt && j.mode == modeInt
		l.anyBit = l.anyBit || j.mode == modeBit
		l.byRows = l.byRows || (j.mode == modeBit && j.bits.Packing() == bittensor.ByRows)
		// K is the logical one: bittensor keeps padding bits zero.
		l.fits16 = l.fits16 && fitsOut16(l.abits, l.bbits, j.a.K())
	}
	// The lists for a row tile, computed once: a list with every k-step
	// of every tile is dropped (the kernel then runs its dense loop).
	var lists []ztj
	listBM := -1
	listsFor := func(bm int) []ztj {
		if bm != listBM {
			lists, listBM = make([]ztj, len(jobs)), bm
			for i, j := range jobs {
				if j.noZTJ {
					continue
				}
				la := layoutOf(j.a)
				kp, ki := tileList(newTileMask(deviceWords(j.a), la.lw, j.a.Bits(), la, false), bm)
				if len(ki) < ((j.m+bm-1)/bm)*(la.lw/stepWords) {
					lists[i] = ztj{kp, ki}
				}
			}
		}
		return lists
	}
	l.dense = func(bm int) bool {
		return !slices.ContainsFunc(listsFor(bm), func(z ztj) bool { return z.kp != nil })
	}
	cfg := chooseConfig(l, k.target(), k.tune)
	return cfg, listsFor(cfg.bm)
}

// job is one product of a launch with its host destination.
type job struct {
	a, b  *bittensor.Tensor
	mode  int
	ints  []int32
	flts  []float32
	bits  *bittensor.Tensor
	ep    *bmm.Epilogue
	rq    bmm.Requant
	m, n  int
	noZTJ bool // visit every k-step (benchmarks of the dense path)
}

// MulInt implements bmm.Kernel.
func (k *Kernel) MulInt(dst []int32, a, b *bittensor.Tensor) error {
	return k.run([]job{{a: a, b: b, mode: modeInt, ints: dst}})
}

// MulFloat implements bmm.Kernel.
func (k *Kernel) MulFloat(dst []float32, a, b *bittensor.Tensor, ep *bmm.Epilogue) error {
	return k.run([]job{{a: a, b: b, mode: modeFloat, flts: dst, ep: ep}})
}

// MulBit implements bmm.Kernel.
func (k *Kernel) MulBit(dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant) error {
	return k.run([]job{{a: a, b: b, mode: modeBit, bits: dst, ep: ep, rq: rq}})
}

// MulIntBatch computes dsts[i] = as[i]·bs[i] for independent products in
// one launch: the subgraph batches of a layer. All A's share a bit width,
// and so do all B's.
func (k *Kernel) MulIntBatch(dsts [][]int32, as, bs []*bittensor.Tensor) error {
	if len(dsts) != len(as) || len(as) != len(bs) {
		return fmt.Errorf("%w: %d destinations, %d A's, %d B's", ErrShape, len(dsts), len(as), len(bs))
	}
	jobs := make([]job, len(as))
	for i := range as {
		jobs[i] = job{a: as[i], b: bs[i], mode: modeInt, ints: dsts[i]}
	}
	return k.run(jobs)
}

// MulBitBatch is MulIntBatch's MulBit twin: dsts[i] = rq(ep[i](as[i]·bs[i]))
// packed into the given tensors, in one launch. eps may be nil.
func (k *Kernel) MulBitBatch(dsts []*bittensor.Tensor, as, bs []*bittensor.Tensor, eps []*bmm.Epilogue, rq bmm.Requant) error {
	if len(dsts) != len(as) || len(as) != len(bs) || (eps != nil && len(eps) != len(as)) {
		return fmt.Errorf("%w: %d destinations, %d A's, %d B's, %d epilogues", ErrShape, len(dsts), len(as), len(bs), len(eps))
	}
	jobs := make([]job, len(as))
	for i := range as {
		jobs[i] = job{a: as[i], b: bs[i], mode: modeBit, bits: dsts[i], rq: rq}
		if eps != nil {
			jobs[i].ep = eps[i]
		}
	}
	return k.run(jobs)
}

// checkJobs validates the jobs of one launch and fills in m, n.
func checkJobs(jobs []job) error {
	for i := range jobs {
		j := &jobs[i]
		m, n, err := bmm.Check(j.a, j.b)
		if err != nil {
			return fmt.Errorf("product %d: %w", i, err)
		}
		j.m, j.n = m, n
		if j.a.Bits() != jobs[0].a.Bits() || j.b.Bits() != jobs[0].b.Bits() {
			return fmt.Errorf("%w: product %d is %d-bit × %d-bit, product 0 is %d-bit × %d-bit; one launch takes one pair of widths",
				ErrShape, i, j.a.Bits(), j.b.Bits(), jobs[0].a.Bits(), jobs[0].b.Bits())
		}
		if err := j.ep.Validate(m, n); err != nil {
			return fmt.Errorf("product %d: %w", i, err)
		}
		switch j.mode {
		case modeInt:
			if len(j.ints) != m*n {
				return fmt.Errorf("%w: product %d: len(dst)=%d, want %d×%d", ErrShape, i, len(j.ints), m, n)
			}
		case modeFloat:
			if len(j.flts) != m*n {
				return fmt.Errorf("%w: product %d: len(dst)=%d, want %d×%d", ErrShape, i, len(j.flts), m, n)
			}
		case modeBit:
			if err := bmm.CheckDst(j.bits, m, n); err != nil {
				return fmt.Errorf("product %d: %w", i, err)
			}
		}
	}
	return nil
}

// run executes jobs in one launch and copies the results to their destinations.
func (k *Kernel) run(jobs []job) error {
	if err := checkJobs(jobs); err != nil {
		return err
	}
	return k.d.run(func() error {
		p, err := k.prepare(jobs)
		if err != nil {
			return err
		}
		defer p.free()
		if err := p.zeroOutputs(); err != nil {
			return err
		}
		if err := p.launch(); err != nil {
			return err
		}
		return p.fetch()
	})
}

// plan is a launch with its operands on the device: one pooled buffer
// holds inputs, zero-tile lists, descriptors and outputs.
type plan struct {
	k      *Kernel
	cfg    config
	fn     uintptr
	blocks int
	nprobs int
	buf    *Buffer
	probs  uint64 // device address of the descriptors
	outOff int    // outputs start here in buf
	outLen int
	jobs   []job
	outAt  []int // each job's output offset in buf
	work   float64
	// prob1 is the descriptor of a one-product launch, passed by value
	// too (both kernels' p1); zero for batches.
	prob1 [probBytes / 8]uint64
}

// region lays out byte blocks at 256-byte aligned offsets.
type region struct {
	size  int
	parts []regionPart
}

// regionPart is data at off; with dstW set, data is rows of srcW bytes,
// each written into a row of dstW bytes, zeros after it.
type regionPart struct {
	off        int
	data       []byte
	srcW, dstW int
}

func (r *region) add(data []byte, n int) int {
	off := roundUp(r.size, 256)
	r.parts = append(r.parts, regionPart{off: off, data: data})
	r.size = off + n
	return off
}

// addRows adds rows rows of srcW bytes (data) laid out dstW bytes apart:
// an operand re-laid out on its way into pinned memory, not into a copy
// first.
func (r *region) addRows(data []byte, srcW, dstW, rows int) int {
	off := roundUp(r.size, 256)
	r.parts = append(r.parts, regionPart{off: off, data: data[:rows*srcW], srcW: srcW, dstW: dstW})
	r.size = off + rows*dstW
	return off
}

// fill writes the region into dst (at least r.size bytes): each part at its
// offset, zeros between them. With spread, large regions are written by
// several goroutines, as a cold pass's uploads are memory copies into
// pinned memory on the way to the device.
func (r *region) fill(dst []byte, spread bool) { r.fillRange(dst, 0, r.size, spread) }

// fillRange writes bytes [lo, hi) of the region into dst[:hi-lo]: a piece
// of a large upload, filled while the device copies the piece before.
func (r *region) fillRange(dst []byte, lo, hi int, spread bool) {
	const piece = 256 << 10
	type span struct {
		dst, src   []byte
		srcW, dstW int
	}
	var spans []span
	end := lo // written up to here (region offsets)
	for _, p := range r.parts {
		pEnd := p.off + len(p.data)
		if p.dstW != 0 {
			pEnd = p.off + len(p.data)/p.srcW*p.dstW
		}
		if pEnd <= lo {
			continue
		}
		if p.off >= hi {
			break // parts lie in offset order
		}
		if p.off > end {
			clear(dst[end-lo : p.off-lo])
		}
		a, b := max(p.off, lo), min(pEnd, hi)
		end = b
		if p.dstW == 0 {
			for o := a; o < b; o += piece {
				n := min(piece, b-o)
				spans = append(spans, span{dst: dst[o-lo : o-lo+n], src: p.data[o-p.off : o-p.off+n]})
			}
			continue
		}
		// Rows: whole rows in spans; a row the range cuts, here.
		per := max(1, piece/p.dstW)
		for row := (a - p.off) / p.dstW; p.off+row*p.dstW < b; {
			rs := p.off + row*p.dstW
			if rs < a || rs+p.dstW > b {
				line := make([]byte, p.dstW)
				copy(line, p.data[row*p.srcW:(row+1)*p.srcW])
				ca, cb := max(rs, a), min(rs+p.dstW, b)
				copy(dst[ca-lo:cb-lo], line[ca-rs:cb-rs])
				row++
				continue
			}
			n := min(per, (b-rs)/p.dstW)
			spans = append(spans, span{dst[rs-lo : rs-lo+n*p.dstW], p.data[row*p.srcW : (row+n)*p.srcW], p.srcW, p.dstW})
			row += n
		}
	}
	if end < hi {
		clear(dst[end-lo : hi-lo])
	}
	workers := 1
	if spread {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	par.For(len(spans), workers, func(i int) {
		s := spans[i]
		if s.dstW == 0 {
			copy(s.dst, s.src)
			return
		}
		w := min(s.srcW, s.dstW)
		for r := range len(s.src) / s.srcW {
			row := s.dst[r*s.dstW : (r+1)*s.dstW]
			copy(row, s.src[r*s.srcW:r*s.srcW+w])
			clear(row[w:])
		}
	})
}

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// prepare lays out and uploads jobs for the variant chooseConfig picks.
// Device work only.
func (k *Kernel) prepare(jobs []job) (*plan, error) {
	cfg, lists := k.choose(jobs)
	file := "bmm_mma.cu"
	name := "bmm_mma"
	if cfg.path == PathWGMMA {
		file, name = "bmm_wgmma.cu", "bmm_wgmma"
	}
	src, hdrs := kernelSource(file)
	fn, err := k.d.function(file, src, hdrs, cfg.opts(), name)
	if err != nil {
		return nil, err
	}

	var in region
	ps, fixes := layProbs(jobs, cfg, lists, &in)
	p := &plan{k: k, cfg: cfg, fn: fn, jobs: jobs, nprobs: len(jobs)}
	for i, j := range jobs { // (row tile, k-step) pairs visited, for BenchResult
		if l := lists[i]; l.kp != nil {
			p.work += float64(len(l.ki))
		} else {
			p.work += float64(((j.m + cfg.bm - 1) / cfg.bm) * (layoutOf(j.a).lw / stepWords))
		}
	}
	desc, blocks, err := packLaunch(ps, cfg.bm, cfg.bn)
	if err != nil {
		return nil, err
	}
	probOff := in.add(nil, len(desc))
	p.outOff = roundUp(in.size, 256)
	out := region{size: p.outOff}
	p.outAt = make([]int, len(jobs))
	for i, j := range jobs {
		p.outAt[i] = out.add(nil, max(roundUp(cfg.jobOutBytes(j), 4), 4)) // memset32 clears whole words
	}
	p.outLen = out.size - p.outOff
	buf, err := k.d.alloc(out.size)
	if err != nil {
		return nil, err
	}
	p.buf, p.blocks = buf, blocks
	base := uint64(buf.ptr)
	fixProbs(ps, fixes, base, p.outAt)
	desc, _, err = packLaunch(ps, cfg.bm, cfg.bn)
	if err != nil {
		p.free()
		return nil, err
	}
	in.parts[len(in.parts)-1].data = desc
	p.probs = base + uint64(probOff)
	if len(jobs) == 1 {
		// The descriptor still goes up with the operands, in the same
		// copy: batches and the wgmma epilogue read it there.
		p.prob1 = probParams(desc)
	}
	// One staging copy, one upload.
	st, err := k.d.staging(max(in.size, p.outLen))
	if err != nil {
		p.free()
		return nil, err
	}
	sb := st.Bytes()
	for _, part := range in.parts {
		copy(sb[part.off:], part.data)
	}
	if err := k.d.htod(buf.ptr, st.ptr, in.size); err != nil {
		p.free()
		return nil, err
	}
	// The staging buffer is reused by fetch: wait for the upload.
	if err := k.d.drv.do("cuStreamSynchronize", k.d.stream.h); err != nil {
		p.free()
		return nil, err
	}
	return p, nil
}

// jobOutBytes is the bytes of j's output on the device.
func (c config) jobOutBytes(j job) int {
	switch j.mode {
	case modeInt:
		return c.outBytes() * j.m * j.n
	case modeFloat:
		return 4 * j.m * j.n
	case modeBit:
		return 8 * len(j.bits.Words())
	case modeCodes:
		return j.m * j.n
	}
	return 0
}

// probFix is where a product's operands lie in a launch's input region
// (byte offsets), before the region has a device address.
type probFix struct {
	a, b, kp, ki int
	ep           [6]int // the epilogue's vectors (Prob's order); -1: none
}

// layProbs adds jobs' operands to in as cfg's kernel reads them (tiled
// for wgmma; with each product's zero-tile list) and returns their
// descriptors, whose addresses fixProbs sets once in has one.
func layProbs(jobs []job, cfg config, lists []ztj, in *region) ([]prob, []probFix) {
	ps := make([]prob, len(jobs))
	fixes := make([]probFix, len(jobs))
	for i, j := range jobs {
		la, lb := layoutOf(j.a), layoutOf(j.b)
		ps[i].ALines, ps[i].BLines = int32(la.lines), int32(lb.lines)
		ps[i].APlane, ps[i].BPlane = int64(2*la.planeWords()), int64(2*lb.planeWords())
		var aw, bw []uint64
		if cfg.path == PathWGMMA {
			// Tiled for bulk copies: lines padded to the block tile, and
			// a zero k-step after the last.
			// (APlane and BPlane carry the 32-bit words of one tile.)
			var al, bl, at, bt int
			aw, al, _, at = tiledWords(j.a, cfg.bm, cfg.bm, cfg.ks)
			bw, bl, _, bt = tiledWords(j.b, cfg.bn, cfg.bn, cfg.ks)
			ps[i].ALines, ps[i].BLines = int32(al), int32(bl)
			ps[i].APlane, ps[i].BPlane = int64(2*at), int64(2*bt)
		} else {
			aw, bw = deviceWords(j.a), deviceWords(j.b)
		}
		f := &fixes[i]
		f.a = in.add(asBytes(aw), 8*max(len(aw), 1))
		f.b = in.add(asBytes(bw), 8*max(len(bw), 1))
		f.kp = -1
		if l := lists[i]; l.kp != nil {
			f.kp = in.add(asBytes(l.kp), 4*len(l.kp))
			f.ki = in.add(asBytes(l.ki), 4*max(len(l.ki), 1))
		}
		f.ep = [6]int{-1, -1, -1, -1, -1, -1}
		if j.ep != nil {
			for v, s := range [][]float32{j.ep.ColScale, j.ep.RowTerm, j.ep.ColTerm, j.ep.ColConst, j.ep.RowScale, j.ep.ColBias} {
				if s != nil {
					f.ep[v] = in.add(asBytes(s), 4*max(len(s), 1))
				}
			}
			ps[i].ReLU = b2i(j.ep.ReLU)
		}
		ps[i].M, ps[i].N = int32(j.m), int32(j.n)
		ps[i].Lw32 = int32(2 * la.lw)
		ps[i].Mode = int32(j.mode)
		if j.mode == modeBit {
			ps[i].OutBits = int32(j.bits.Bits())
			ps[i].OutByCols = b2i(j.bits.Packing() == bittensor.ByCols)
			ps[i].OutLw32 = int32(2 * j.bits.LineWords())
			ps[i].OutPlane = int64(2 * j.bits.PlaneWords())
			ps[i].RqScale, ps[i].RqOffset = j.rq.Scale, j.rq.Offset
		}
	}
	return ps, fixes
}

// fixProbs sets the addresses of ps: their operands laid out by layProbs
// in a region at base, product i's output at base+outAt[i].
func fixProbs(ps []prob, fixes []probFix, base uint64, outAt []int) {
	for i := range ps {
		f := fixes[i]
		ps[i].A, ps[i].B = base+uint64(f.a), base+uint64(f.b)
		if f.kp >= 0 {
			ps[i].Kptr, ps[i].Kidx = base+uint64(f.kp), base+uint64(f.ki)
		}
		ptrs := []*uint64{&ps[i].ColScale, &ps[i].RowTerm, &ps[i].ColTerm, &ps[i].ColConst, &ps[i].RowScale, &ps[i].ColBias}
		for v, off := range f.ep {
			if off >= 0 {
				*ptrs[v] = base + uint64(off)
			}
		}
		ps[i].Out = base + uint64(outAt[i])
	}
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// zeroOutputs clears the output region (MulBit ORs words into it).
func (p *plan) zeroOutputs() error {
	return p.k.d.memset32(p.buf.ptr+uintptr(p.outOff), 0, p.outLen/4)
}

func (p *plan) launch() error {
	if p.blocks == 0 {
		return nil
	}
	// The third parameter, a Prob by value (probParams).
	params := append([]uint64{p.probs, uint64(p.nprobs)}, p.prob1[:]...)
	return p.k.d.launch(p.fn, [3]uint32{uint32(p.blocks), 1, 1}, [3]uint32{uint32(p.cfg.threads()), 1, 1},
		p.cfg.smem(p.maxMode()), p.k.d.stream, params...)
}

func (p *plan) maxMode() int {
	m := 0
	for _, j := range p.jobs {
		m = max(m, j.mode)
	}
	return m
}

// fetch copies the outputs back and waits.
func (p *plan) fetch() error {
	d := p.k.d
	st, err := d.staging(p.outLen)
	if err != nil {
		return err
	}
	if err := d.dtoh(st.ptr, p.buf.ptr+uintptr(p.outOff), p.outLen); err != nil {
		return err
	}
	if err := d.drv.do("cuStreamSynchronize", d.stream.h); err != nil {
		return err
	}
	sb := st.Bytes()
	for i, j := range p.jobs {
		off := p.outAt[i] - p.outOff
		switch j.mode {
		case modeInt:
			if p.cfg.out16 == 1 {
				widen16(j.ints, unsafe.Slice((*uint16)(unsafe.Pointer(&sb[off])), len(j.ints)))
			} else {
				copy(asBytes(j.ints), sb[off:])
			}
		case modeFloat:
			copy(asBytes(j.flts), sb[off:])
		case modeBit:
			copy(asBytes(j.bits.Words()), sb[off:])
		}
	}
	return nil
}

// widen16 copies the uint16 outputs src (config.out16) into dst as int32:
// large outputs in chunks of widenChunk on every processor, since the Go
// compiler does not vectorize the loop (BenchmarkFetch).
func widen16(dst []int32, src []uint16) {
	src = src[:len(dst)]
	chunks := (len(dst) + widenChunk - 1) / widenChunk
	if chunks < 2 {
		widenPart(dst, src)
		return
	}
	par.For(chunks, runtime.GOMAXPROCS(0), func(c int) {
		lo, hi := c*widenChunk, min((c+1)*widenChunk, len(dst))
		widenPart(dst[lo:hi], src[lo:hi])
	})
}

// widenChunk is widen16's unit of parallel work: 256 KB of int32 outputs.
const widenChunk = 1 << 16

// widenPart is widen16 on one goroutine, eight outputs at a time through
// array pointers (one bounds check per eight).
func widenPart(dst []int32, src []uint16) {
	n := len(dst) &^ 7
	for i := 0; i < n; i += 8 {
		s, d := (*[8]uint16)(src[i:]), (*[8]int32)(dst[i:])
		d[0], d[1], d[2], d[3] = int32(s[0]), int32(s[1]), int32(s[2]), int32(s[3])
		d[4], d[5], d[6], d[7] = int32(s[4]), int32(s[5]), int32(s[6]), int32(s[7])
	}
	for i := n; i < len(dst); i++ {
		dst[i] = int32(src[i])
	}
}

func (p *plan) free() {
	if p.buf != nil {
		_ = p.k.d.pool.put(p.buf.ptr)
		p.buf = nil
	}
}
