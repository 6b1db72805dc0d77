package cpu

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// ErrImpl is returned by NewKernel for a path this CPU or build lacks.
var ErrImpl = errors.New("cpu: bit-kernel path not available")

// Kernel is the CPU bit matrix product, a bmm.Kernel. It splits A into
// blocks of 64 rows handed out to GOMAXPROCS goroutines. On the assembly
// paths, B is transposed once per product into words × columns and the
// vertical kernel (bitdot_vert.go) accumulates tiles of rows × columns in
// registers, one column per vector lane, with no horizontal reduction at
// all; the row kernels below take the columns past the last whole group
// (and everything on the generic path). Each row of A,
// all its bit planes i, runs through the inner AND+popcount kernel against
// an L1-sized block of B's columns with all their bit planes j at once
// (the cross-plane reduction: a loaded piece of A meets every plane of B
// before moving on), the kernel weighting each count by 2^(i+j) in its
// 64-bit partial sums so each output is reduced horizontally once. The
// 64-row int32 tile is then finished in place: kept (MulInt), put through
// the float epilogue (MulFloat), or re-quantized and packed straight into
// the destination's bit planes (MulBit).
//
// Zero-tile jumping: each task first marks which 256-bit chunks of its
// rows are non-zero in any plane of A (one pass over its part of A), and
// the inner kernel then only ever runs over runs of non-zero chunks, so
// the block-diagonal adjacencies of batched subgraphs cost in proportion
// to their non-zero blocks, with no test inside the inner loop. A task
// whose probe rows (probeDense) have no zero chunk skips the marking and
// runs as dense.
type Kernel struct {
	impl *bitImpl
	vert vertMode
	// serial runs every product on the caller's goroutine: a fork's
	// kernel, one of several running side by side (Backend.Fork).
	serial bool
}

// vertMode chooses between the row kernels and the vertical short-K
// kernel (bitdot_vert.go); tests and benchmarks force each.
type vertMode uint8

const (
	vertAuto vertMode = iota // by shape: vertical wherever B has a whole group of columns and A enough rows, 32-bit lanes first
	vertOff                  // row kernels only
	vert64                   // vertical with 64-bit lanes wherever B has a whole group
	vert32                   // vertical, 32-bit lanes first, wherever B has a whole group
)

// vertMinRows is the fewest row planes (rows × bit planes of A) for which
// vertAuto transposes B: the transposition costs about 4 cycles per word
// of B, the vertical kernel saves about a tenth of a cycle per word per
// row plane over the row kernels. Best of 300 single-thread runs, B 64
// columns × 4 bits: K = 256, 32 rows 3.41 against 3.42 µs (vertical
// against rows), 8 rows 2.08 against 0.99; K = 4096, 32 rows 46 against
// 31 µs.
const vertMinRows = 64

// vertPadWords is the longest line (in 64-bit words) for which the
// columns past B's last whole group go to the vertical kernel as one group
// padded with zero columns instead of to the row kernels; lines that are
// at least half zero padding (K's own words ≤ lw/2) are padded too, since
// the vertical kernel then also skips the padding words. At short K a row
// kernel's per-output reduction and setup cost more than a whole group of
// vertical lanes. Measured (BenchmarkMM2IntNarrow, 16384 rows, 4×4 bits,
// one core, ms, padded group against row kernels): K = 64, 10 columns
// 0.39 vs 1.40 (avx512), 0.82 vs 2.40 (avx2); K = 256, 5 columns 0.60 vs
// 1.18 (avx512), 1.51 vs 1.28 (avx2); K = 512, 10 columns 1.94 vs 1.82
// (avx512), 4.20 vs 3.95 (avx2). A variable so that tests can force each
// way (0: never, 1<<30: always).
var vertPadWords = 4

// NewKernel returns the kernel with a given inner path: "" for the best one
// this CPU has, or one of Impls(). It wraps ErrImpl for any other name.
func NewKernel(path string) (*Kernel, error) {
	im := findImpl(path)
	if im == nil {
		return nil, fmt.Errorf("%w: %q (this CPU and build have %v)", ErrImpl, path, Impls())
	}
	return &Kernel{impl: im}, nil
}

func init() {
	bmm.Register(&Kernel{impl: bitImpls[0]}, 10)
}

// Name implements bmm.Kernel: "cpu/avx512", "cpu/avx2" or "cpu/generic".
func (k *Kernel) Name() string { return "cpu/" + k.impl.name }

// Path is the inner kernel's path, one of Impls().
func (k *Kernel) Path() string { return k.impl.name }

// bitRowBlock is the number of rows of A one task owns: a multiple of 64,
// so that a task writing a column-packed MulBit destination owns whole words.
const bitRowBlock = 64

// bitChunkWords is the granularity of the zero mask: 256 bits, one AVX2 step
// and the default padding of K.
const bitChunkWords = 4

// bitPanelBytes bounds the K-window of B (all planes, all columns) that the
// rows of a task stream through, so that it stays in L2.
const bitPanelBytes = 384 << 10

// bitL1Bytes bounds a block of B's columns (all planes, one K block) kept in L1.
const bitL1Bytes = 16 << 10

// bitPlan is one product's shape, shared read-only by the tasks.
type bitPlan struct {
	m, n         int
	lw           int // words per line (K padded, over 64)
	kw           int // words the product runs over: lw, or K's own words (see newBitPlan)
	kc           int // words per K block
	abits, bbits int
	aps, bps     int // words per plane of A, of B
	aw, bw       []uint64
	colBlock     int // columns of B (all planes) per L1 block
	impl         *bitImpl

	// The vertical kernel, used when vc > 0: B's first ng·vc columns in
	// the vertical layout (wstride columns per word; see prepareVert), the
	// plane pairs of appendVertPairs. With tail > 0 (short K, see
	// vertPadWords), the last tail columns follow as one more group padded
	// with zero columns, computed into the task's scratch (vertTail) and
	// copied out; otherwise the columns past ng·vc go to the row kernel.
	lanes32 bool   // 32-bit lanes: bitTask.bt32, groups of impl.vc32 columns
	vc      int    // columns per group, 0 without the vertical kernel
	ng      int    // whole groups, written straight into C
	tail    int    // columns of the padded group, 0 when there is none
	wstride int    // columns per word in bt: ng·vc, plus vc with a tail
	vcols   int    // columns the vertical kernel covers: ng·vc + tail
	seq     uint64 // this plan's number (planSeq), naming the tasks' copies of B
	serial  bool   // the kernel's: one worker

	// run's operands for task, and task as a func value made once per
	// pooled plan (see planPool).
	into   []int32
	finish func(t *bitTask, m0, m1 int)
	taskFn func(ib int)
}

// planPool recycles plans. A product's plan and its loop body are
// written by the caller and read by every participant: in fresh memory
// each time, the caller's first synchronization waited for those lines
// to be fetched and the other participants then fetched them again.
var planPool sync.Pool

// planSeq numbers the plans that use the vertical kernel, so that a task's
// copy of B, made for one plan, is never taken for another's.
var planSeq atomic.Uint64

// bitTask is a goroutine's scratch space, reused across tasks.
type bitTask struct {
	tile []int32 // bitRowBlock×n, the int32 products of the rows
	// mask marks the 1×256 tiles (chunks) of the block's rows non-zero in
	// any plane of A: each row's bit set is Row(r).
	mask  bittensor.TileMask
	probe []uint64 // one row's mask, for probeDense
	vtail []int32  // bitRowBlock×vc, the vertical kernel's padded group
	// The vertical kernel's B for plan number vseq (prepareVert): the
	// plane pairs and B transposed (bt, or bt32 with 32-bit lanes).
	vseq  uint64
	pairs []int64
	bt    []uint64
	bt32  []uint32
	dense []bool   // per row, no zero chunk in the current K block
	q     []uint32 // MulBit: re-quantized values of the rows
}

var bitTaskPool sync.Pool

func newBitPlan(k *Kernel, a, b *bittensor.Tensor) *bitPlan {
	impl, mode := k.impl, k.vert
	p, _ := planPool.Get().(*bitPlan)
	if p == nil {
		p = &bitPlan{}
		p.taskFn = p.task
	}
	*p = bitPlan{m: a.Rows(), n: b.Cols(), lw: a.LineWords(), abits: a.Bits(), bbits: b.Bits(),
		aps: a.PlaneWords(), bps: b.PlaneWords(), aw: a.Words(), bw: b.Words(), impl: impl, taskFn: p.taskFn, serial: k.serial}
	p.colBlock = max(4, bitL1Bytes/(8*max(1, p.kc)*p.bbits)&^3)
	// 32-bit lanes where they leave no more columns to the row kernel
	// (or, padding, no more zero columns) than 64-bit lanes would.
	ownWords := min(p.lw, (a.K()+63)/64) // the words K covers; the rest of a line is padding
	pad := vertPadWords > 0 && (p.lw <= vertPadWords || 2*ownWords <= p.lw)
	left := func(vc int) int { // columns to the row kernel, or zero columns padded
		if pad {
			return (p.n+vc-1)/vc*vc - p.n
		}
		return p.n % vc
	}
	vc := 0
	switch {
	case mode == vertOff || p.m == 0 || p.lw == 0:
	case mode == vertAuto && p.m*p.abits < vertMinRows:
	case mode != vert64 && impl.vert32 != nil && (pad || p.n >= impl.vc32) && (impl.vert == nil || left(impl.vc32) <= left(impl.vc)):
		vc, p.lanes32 = impl.vc32, true
	case impl.vert != nil && (pad || p.n >= impl.vc):
		vc = impl.vc
	}
	p.kw = p.lw
	if vc > 0 {
		p.vc, p.ng = vc, p.n/vc
		p.wstride, p.vcols = p.ng*vc, p.ng*vc
		if pad && p.n%vc != 0 {
			p.tail = p.n % vc
			p.wstride += vc
			p.vcols = p.n
		}
		p.colBlock = p.n // the kernel walks the column groups itself
		// A line's words past K are zero padding (the tensor-core tile of
		// 256 bits): when the vertical kernel takes every column it runs
		// over K's own words only (a 64-wide hidden layer: 1 word of 4).
		// The row kernels step 256 bits at a time and keep the padding.
		if p.vcols == p.n {
			p.kw = ownWords
		}
		p.seq = planSeq.Add(1)
	}
	p.kc = p.kw
	if panel := p.bbits * p.n * 8; p.kw*panel > bitPanelBytes {
		p.kc = max(bitChunkWords, bitPanelBytes/panel/bitChunkWords*bitChunkWords)
	}
	return p
}

// prepareVert gives task t this plan's vertical-kernel operands: B
// transposed into the vertical layout and the plane pairs, made on the
// task's first use in the product. Each participant of the parallel loop
// transposes B for itself, into its own pooled task, instead of every one
// reading one copy made before the loop: that copy was serial time (a
// 1024-row, 16-column, 1-bit product: 0.3 µs of 16), and on two cores the
// caller's writes first had to take the layout's lines back from the
// other core, which then fetched them again.
func (p *bitPlan) prepareVert(t *bitTask) {
	if t.vseq == p.seq {
		return
	}
	t.pairs = appendVertPairs(t.pairs[:0], p.abits, p.bbits, p.aps, p.kw*p.wstride)
	if p.lanes32 {
		t.bt32 = growSlice(t.bt32, 2*p.bbits*p.kw*p.wstride)
		if p.tail > 0 {
			clear(t.bt32) // the padded columns
		}
		transposeB(t.bt32, p.bw, p.bbits, p.bps, p.lw, p.kw, p.vcols, p.wstride)
	} else {
		t.bt = growSlice(t.bt, p.bbits*p.kw*p.wstride)
		if p.tail > 0 {
			clear(t.bt)
		}
		transposeB(t.bt, p.bw, p.bbits, p.bps, p.lw, p.kw, p.vcols, p.wstride)
	}
	t.vseq = p.seq
}

// mul adds to out (row stride n) the weighted popcounts of rows
// [m, m+nrows) of A against columns [c0, c0+ncols) of B over words
// [w0, w1): the vertical kernel (c0 = 0, ncols = n) or the row kernel.
// With set (vertical kernel over all n columns only), the products
// replace what out held.
func (p *bitPlan) mul(t *bitTask, out []int32, m, nrows, w0, w1, c0, ncols int, set bool) {
	if p.vc > 0 {
		p.vert(t, out, p.n, m, nrows, w0, w1, 0, p.ng, set)
		if p.tail > 0 {
			p.vertTail(t, out, m, nrows, w0, w1, set)
		}
		c0 = p.vcols
		if c0 >= ncols {
			return
		}
		out = out[c0:]
		ncols -= c0
	}
	p.impl.row(out, p.n, p.aw[m*p.lw+w0:], p.lw, p.aps, p.abits, p.bw[c0*p.lw+w0:], p.lw, p.bps, p.bbits, w1-w0, ncols, nrows)
}

// vert runs the vertical kernel on groups [g0, g0+ng) of the transposed B
// for rows [m, m+nrows) of A over words [w0, w1), into out (row stride
// ldo, column 0 = the group g0's first).
func (p *bitPlan) vert(t *bitTask, out []int32, ldo, m, nrows, w0, w1, g0, ng int, set bool) {
	p.prepareVert(t)
	a := p.aw[m*p.lw+w0:]
	if p.lanes32 {
		p.impl.vert32(out, ldo, a, p.lw, t.pairs, t.bt32[2*w0*p.wstride+g0*p.vc:], p.wstride, w1-w0, ng, nrows, set)
	} else {
		p.impl.vert(out, ldo, a, p.lw, t.pairs, t.bt[w0*p.wstride+g0*p.vc:], p.wstride, w1-w0, ng, nrows, set)
	}
}

// vertTail computes the padded last group into the task's scratch and
// adds (with set: copies) its p.tail real columns to out's columns
// ng·vc.. (row stride n).
func (p *bitPlan) vertTail(t *bitTask, out []int32, m, nrows, w0, w1 int, set bool) {
	t.vtail = growSlice(t.vtail, nrows*p.vc)
	p.vert(t, t.vtail, p.vc, m, nrows, w0, w1, p.ng, 1, true)
	c0 := p.ng * p.vc
	for r := 0; r < nrows; r++ {
		dst := out[r*p.n+c0 : r*p.n+p.n]
		src := t.vtail[r*p.vc : r*p.vc+p.tail]
		if set {
			copy(dst, src)
			continue
		}
		for i, v := range src {
			dst[i] += v
		}
	}
}

// run computes the product rows block by block and calls finish on each
// block's int32 tile (rows [m0, m1) of C, row-major with stride n). When
// into is not nil the tile of rows [m0, m1) is into[m0*n : m1*n].
func (p *bitPlan) run(into []int32, finish func(t *bitTask, m0, m1 int)) {
	if p.m == 0 || p.n == 0 {
		return
	}
	blocks := (p.m + bitRowBlock - 1) / bitRowBlock
	workers := runtime.GOMAXPROCS(0)
	if p.serial || float64(p.m)*float64(p.n)*float64(p.kw)*float64(p.abits*p.bbits) < 1<<16 {
		workers = 1
	}
	p.into, p.finish = into, finish
	par.For(blocks, workers, p.taskFn)
	p.into, p.finish = nil, nil
}

// task is run's loop body: row block ib.
func (p *bitPlan) task(ib int) {
	t, _ := bitTaskPool.Get().(*bitTask)
	if t == nil {
		t = &bitTask{}
	}
	m0 := ib * bitRowBlock
	m1 := min(p.m, m0+bitRowBlock)
	var tile []int32
	if p.into != nil {
		tile = p.into[m0*p.n : m1*p.n]
	} else {
		t.tile = growSlice(t.tile, bitRowBlock*p.n)
		tile = t.tile[:(m1-m0)*p.n]
	}
	p.block(t, tile, m0, m1)
	if p.finish != nil {
		saved := t.tile
		t.tile = tile
		p.finish(t, m0, m1)
		t.tile = saved
	}
	bitTaskPool.Put(t)
}

// release returns the plan to planPool; it is not used after.
func (p *bitPlan) release() {
	p.aw, p.bw = nil, nil // the operands are not kept alive by the pool
	planPool.Put(p)
}

func growSlice[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// block computes rows [m0, m1) of C into tile (whatever it held before).
// For each K block and each
// L1-sized block of B's columns (all planes), each row of A runs against
// it in one kernel call: every plane i of the row with every plane j of B,
// weighted 2^(i+j), over the row's non-zero chunks only.
func (p *bitPlan) block(t *bitTask, tile []int32, m0, m1 int) {
	rows := m1 - m0
	if p.kw == 0 { // K = 0: no K block below writes the tile
		clear(tile)
		return
	}
	nchunks := (p.kw + bitChunkWords - 1) / bitChunkWords
	mw := (nchunks + 63) / 64
	dense := p.probeDense(t, m0, rows, mw, nchunks)
	if !dense {
		t.mask = bittensor.TileMask{Rows: 1, Cols: bitChunkWords * 64, RowTiles: rows, ColTiles: nchunks, Stride: mw,
			Bits: growSlice(t.mask.Bits, rows*mw)}
		clear(t.mask.Bits)
		p.markRows(t.mask.Bits, mw, m0, rows, nchunks)
		t.dense = growSlice(t.dense, rows)
	}
	for kb := 0; kb < p.kw; kb += p.kc {
		ke := min(p.kw, kb+p.kc)
		cb, ce := kb/bitChunkWords, (ke+bitChunkWords-1)/bitChunkWords
		allDense := dense || denseRows(t.dense, t.mask.Bits, mw, cb, ce)
		// When every row is dense and the vertical kernel covers every
		// column, its first write replaces the tile: no clearing pass.
		set := kb == 0 && allDense && p.vc > 0 && p.vcols == p.n
		if kb == 0 && !set {
			clear(tile)
		}
		for c0 := 0; c0 < p.n; c0 += p.colBlock {
			c1 := min(p.n, c0+p.colBlock)
			if allDense {
				p.mul(t, tile[c0:], m0, rows, kb, ke, c0, c1-c0, set)
			} else {
				p.mixed(t, tile[c0:], m0, rows, mw, kb, ke, c0, c1-c0)
			}
		}
	}
}

// mixed adds to out (row stride n) the products of rows [m0, m0+rows) of
// A, some with zero chunks in words [kb, ke) (t.dense, t.mask), against
// columns [c0, c0+ncols) of B: consecutive dense rows in one kernel call,
// consecutive sparse rows with the same zero chunks (the rows of one block
// of a block-diagonal A) in one call per run of non-zero chunks.
func (p *bitPlan) mixed(t *bitTask, out []int32, m0, rows, mw, kb, ke, c0, ncols int) {
	for r := 0; r < rows; {
		r1 := r + 1
		if t.dense[r] {
			for r1 < rows && t.dense[r1] {
				r1++
			}
			p.mul(t, out[r*p.n:], m0+r, r1-r, kb, ke, c0, ncols, false)
		} else {
			mask := t.mask.Row(r)
			for r1 < rows && !t.dense[r1] && slices.Equal(mask, t.mask.Row(r1)) {
				r1++
			}
			p.runs(t, out[r*p.n:], mask, m0+r, r1-r, kb, ke, c0, ncols)
		}
		r = r1
	}
}

// bitProbeRows is how many rows, spread over a block, the dense probe
// marks.
const bitProbeRows = 4

// probeDense marks bitProbeRows rows of the block [m0, m0+rows) and
// reports whether none of them has a zero chunk. The block is then taken
// as dense without marking the rest: a dense A (a 1024-node adjacency at
// one bit and 16 features) costs as much to mark as a fifth of its
// product, while a zero chunk the probe missed costs only its AND+popcount
// work, never a wrong sum. Blocks of batched subgraphs fail the probe (a
// row of a block-diagonal A is mostly zero chunks) and are marked.
func (p *bitPlan) probeDense(t *bitTask, m0, rows, mw, nchunks int) bool {
	if rows < 4*bitProbeRows {
		return false
	}
	t.probe = growSlice(t.probe, mw)
	for k := 0; k < bitProbeRows; k++ {
		r := k * (rows - 1) / (bitProbeRows - 1)
		clear(t.probe)
		p.markRows(t.probe, mw, m0+r, 1, nchunks)
		if !allOnes(t.probe, 0, nchunks) {
			return false
		}
	}
	return true
}

// markRows ORs into mask (mw words per row) the zero-chunk bits of rows
// [m, m+nrows) of A: bit c of a row is set when chunk c is non-zero in
// any plane.
func (p *bitPlan) markRows(mask []uint64, mw, m, nrows, nchunks int) {
	full := p.kw / bitChunkWords
	for i := 0; i < p.abits; i++ {
		a := p.aw[i*p.aps+m*p.lw:]
		p.impl.mark(mask, mw, a, p.lw, nrows, full)
		if full < nchunks { // a last chunk under 256 bits: K padded to 64 bits only, or K's own words
			for r := 0; r < nrows; r++ {
				var or uint64
				for _, x := range a[r*p.lw+full*bitChunkWords : r*p.lw+p.kw] {
					or |= x
				}
				if or != 0 {
					mask[r*mw+full/64] |= 1 << (full % 64)
				}
			}
		}
	}
}

// runs adds to out (row stride n) the weighted popcounts of rows
// [m, m+nrows) of A, which share the zero-chunk mask, against columns
// [c0, c0+ncols) of B, over the runs of non-zero chunks within words
// [kb, ke).
func (p *bitPlan) runs(t *bitTask, out []int32, mask []uint64, m, nrows, kb, ke, c0, ncols int) {
	c := kb / bitChunkWords
	cEnd := (ke + bitChunkWords - 1) / bitChunkWords
	for c < cEnd {
		// Jump to the next set bit of mask at or after c.
		w := c / 64
		word := mask[w] >> (c % 64)
		if word == 0 {
			c = (w + 1) * 64
			continue
		}
		c += bits.TrailingZeros64(word)
		if c >= cEnd {
			break
		}
		// Extend over the run of set bits.
		e := c
		for e < cEnd {
			word := ^mask[e/64] >> (e % 64)
			if word == 0 {
				e = (e/64 + 1) * 64
				continue
			}
			e += bits.TrailingZeros64(word)
			break
		}
		e = min(e, cEnd)
		w0, w1 := c*bitChunkWords, min(e*bitChunkWords, ke)
		p.mul(t, out, m, nrows, w0, w1, c0, ncols, false)
		c = e
	}
}

// denseRows sets dense[r] to whether row r's zero-chunk mask (mw words
// per row) has every chunk in [cb, ce) non-zero, and reports whether all
// rows do.
func denseRows(dense []bool, mask []uint64, mw, cb, ce int) bool {
	all := true
	if mw == 1 { // K <= 64 chunks: one compare per row
		want := ^uint64(0) >> (64 - (ce - cb)) << cb
		mask = mask[:len(dense)]
		for r, m := range mask {
			d := m&want == want
			dense[r] = d
			all = all && d
		}
		return all
	}
	for r := range dense {
		d := allOnes(mask[r*mw:(r+1)*mw], cb, ce)
		dense[r] = d
		all = all && d
	}
	return all
}

// allOnes reports whether bits [c0, c1) of mask are all set.
func allOnes(mask []uint64, c0, c1 int) bool {
	for c0 < c1 {
		w := c0 / 64
		n := min(c1, (w+1)*64) - c0
		want := ^uint64(0) >> (64 - n) << (c0 % 64)
		if mask[w]&want != want {
			return false
		}
		c0 += n
	}
	return true
}

func checkOperands(a, b *bittensor.Tensor) (int, int, error) {
	return bmm.Check(a, b)
}

// MulInt implements bmm.Kernel.
func (k *Kernel) MulInt(dst []int32, a, b *bittensor.Tensor) error {
	m, n, err := checkOperands(a, b)
	if err != nil {
		return err
	}
	if len(dst) != m*n {
		return fmt.Errorf("%w: destination has %d values, product is %d×%d", bmm.ErrShape, len(dst), m, n)
	}
	p := newBitPlan(k, a, b)
	p.run(dst, nil)
	p.release()
	return nil
}

// MulFloat implements bmm.Kernel.
func (k *Kernel) MulFloat(dst []float32, a, b *bittensor.Tensor, ep *bmm.Epilogue) error {
	m, n, err := checkOperands(a, b)
	if err != nil {
		return err
	}
	if len(dst) != m*n {
		return fmt.Errorf("%w: destination has %d values, product is %d×%d", bmm.ErrShape, len(dst), m, n)
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	p := newBitPlan(k, a, b)
	defer p.release()
	p.run(nil, func(t *bitTask, m0, m1 int) {
		applyRows(dst[m0*n:m1*n], n, t.tile, n, m0, m1-m0, n, ep)
	})
	return nil
}

// MulBit implements bmm.Kernel. The re-quantized values of each 64-row
// block go straight into dst's bit planes; padding bits end up zero.
func (k *Kernel) MulBit(dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant) error {
	m, n, err := checkOperands(a, b)
	if err != nil {
		return err
	}
	if err := bmm.CheckDst(dst, m, n); err != nil {
		return err
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	clear(dst.Words())
	p := newBitPlan(k, a, b)
	defer p.release()
	p.run(nil, func(t *bitTask, m0, m1 int) {
		applyQuantizePackRows(dst, &t.q, t.tile, n, m0, m1-m0, n, ep, rq)
	})
	return nil
}
