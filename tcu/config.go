package tcu

import (
	"fmt"
	"strconv"
)

// Kernel paths.
const (
	PathMMA   = "mma"   // mma.sync m16n8k256, sm_80 and newer
	PathWGMMA = "wgmma" // wgmma m64nNk256, sm_90a
)

// config is one compiled variant of a kernel and its launch shape, as
// chooseConfig decides it.
type config struct {
	path         string
	abits, bbits int
	bm, bn       int // block tile of C
	wm, wn       int // warp tile (mma)
	wgs          int // warpgroups (wgmma)
	stages       int
	ks           int // 256-bit k-steps per pipeline stage (wgmma)
	epi          int // wgmma: 1 stores whole int tiles through shared memory and bulk copies (EPI)
	timing       int // wgmma: 1 prints per-block phase times (a diagnostic)
	// bitreg (wgmma): 1 packs MulBit tiles by rows with no epilogue, at
	// most 8 bits and BN a multiple of 64, straight from the accumulators
	// (bmm_wgmma.cu BITREG); 2 exchanges whole plane bytes in the quad.
	bitreg int
	// ws (wgmma): n >= 1 adds a producer warpgroup that issues every
	// copy, the consumers releasing a stage n stages after it
	// (wgmma.wait_group n); 0 is the single-role loop (bmm_wgmma.cu WS).
	ws int
	// oneprob: 1 reads the descriptor of a one-product launch from the
	// kernel parameter (p1) instead of global memory (both kernels).
	oneprob int
	// l2 (wgmma): 1 stores whole int tiles with an L2 evict-first policy
	// (bmm_wgmma.cu L2HINT).
	l2 int
	// tail (wgmma, with ws): the consumer warpgroups multiply the last
	// tail stages one after the other, so that the first one's epilogue
	// overlaps the second one's last stages (bmm_wgmma.cu TAIL).
	tail int
	// tailepi (wgmma, with tail = stages-1 and epi): the first
	// warpgroup's int rows leave through shared memory too, 2 warps'
	// through tailEpiBytes past the stages (bmm_wgmma.cu TAILEPI).
	tailepi int
	// out16: 1 stores int outputs as uint16 (kernels/common.cuh OUT16);
	// the host widens them to int32 as it copies them back.
	out16    int
	lbo, sbo int // wgmma descriptor byte offsets
}

// launch is what chooseConfig reads of a launch's products.
type launch struct {
	abits, bbits int
	m, n, ksteps int // the largest product's rows, columns and 256-bit k-steps
	nprob        int
	mode         int  // the lone product's output mode (modeInt, ...); with several, the largest
	allInt       bool // every product has an int output
	anyBit       bool // some product is MulBit
	byRows       bool // some MulBit output is packed by rows
	fits16       bool // every product's outputs fit a uint16 (fitsOut16)
	// dense says whether no zero-tile list would skip a k-step with row
	// tiles of bm rows (nil: always).
	dense func(bm int) bool
}

// target is the device and path a launch is chosen for.
type target struct {
	sms      int    // multiprocessors
	wgmma    bool   // the wgmma path is on (sm_90a, self-check passed)
	force    string // "" (choose per shape), PathMMA or PathWGMMA
	lbo, sbo int    // the wgmma descriptor offsets the self-check chose
}

// tuning is the table of knobs that override chooseConfig's choices,
// for the tuning benchmarks and the tests that force a variant; a zero
// field leaves the choice to chooseConfig, -1 turns a feature off.
type tuning struct {
	bn, wgs, ks, stages int // wgmma tile and pipeline
	// minTiles: narrow the N tile while the launch has fewer 64-row tiles
	// than this (0: 3/4 of the multiprocessor count; negative: never).
	minTiles int
	// minBN: the N tile narrows no further than this (0: 16, or 32 for
	// MulBit launches, whose words the packing then owns whole).
	minBN  int
	epi    int // 1 int tiles through shared memory, -1 from the registers
	bitreg int // 1 or 2: MulBit by rows from the registers; -1 through shared memory
	timing int // 1 builds the diagnostic that prints per-block phase times
	ws     int // n >= 1 the producer warpgroup with release lag n; -1 none
	// oneprob: 1 passes a one-product launch's descriptor by value, -1 never.
	oneprob int
	l2      int // 1 evict-first int stores, -1 none
	tail    int // n: a tail of n stages where an int launch has the producer and n <= stages; -1 none
	tailepi int // 1 TAILEPI where it applies, -1 never
	out16   int // -1 keeps int32 outputs on the device
}

// chooseConfig decides everything about a launch's variant: the path,
// the tiles and pipeline, the producer warpgroup, the epilogue paths, the
// tail, uint16 outputs and the descriptor passing. Kernel.prepare only
// lays out memory for it. Each choice is the one measured fastest where
// it applies (bench/gpu/RESULTS.md, sessions 2-8, H200).
func chooseConfig(l launch, t target, tu tuning) config {
	c, ok := config{}, false
	if t.wgmma && t.force != PathMMA {
		c, ok = wgmmaTiles(l, t, tu)
	}
	if !ok {
		c = mmaTiles(l.abits, l.bbits, l.m, l.n, l.ksteps, t.sms)
	}
	if l.allInt && l.fits16 && tu.out16 >= 0 {
		c.out16 = 1 // half the int stores and download
	}
	if c.path != PathWGMMA {
		// mma.sync: every one-product launch passes its descriptor by
		// value, which the resident Backend relies on to copy nothing
		// per product.
		if l.nprob == 1 && tu.oneprob >= 0 {
			c.oneprob = 1
		}
		return c
	}
	if l.byRows && c.bn >= 256 && tu.ws == 0 {
		c.ws = 0 // MulBit by rows of 256-column tiles: no gain from the producer
	}
	c.tail, c.tailepi = chooseTail(c, l, tu)
	// MulBit by rows straight from the accumulators where the tile
	// allows it; whole plane bytes on 256-column tiles, where they won.
	if l.byRows && c.bn%64 == 0 && tu.bitreg >= 0 {
		c.bitreg = 1
		if tu.bitreg > 0 {
			c.bitreg = tu.bitreg
		} else if c.bn >= 256 {
			c.bitreg = 2
		}
	}
	// The descriptor by value where it won: one product with the
	// producer, int, or MulBit of tiles narrower than 256 columns.
	if l.nprob == 1 && (tu.oneprob > 0 || (tu.oneprob == 0 && c.ws > 0 && (l.mode == modeInt || (l.mode == modeBit && c.bn < 256)))) {
		c.oneprob = 1
	}
	return c
}

// chooseTail is chooseConfig's tail: only int launches with the producer
// warpgroup (under it the MulBit packing lost, and racecheck reported
// hazards there), only where the kernel runs it (a loop of 4·tail stages
// or more) and only for dense A, whose blocks all run every k-step (zero-
// tile launches ran slower with the tail compiled in and idle). 3 stages
// with TAILEPI on 256-column tiles of 4 stages, elsewhere 2.
func chooseTail(c config, l launch, tu tuning) (tail, tailepi int) {
	if c.ws == 0 || !l.allInt || tu.tail < 0 {
		return 0, 0
	}
	if tu.tail > 0 {
		if tu.tail > c.stages {
			return 0, 0
		}
		c.tail = tu.tail
		if tu.tailepi > 0 && c.tailEpiFits() {
			return c.tail, 1
		}
		return c.tail, 0
	}
	nst := (l.ksteps + c.ks - 1) / max(c.ks, 1)
	if nst < 4*2 || (l.dense != nil && !l.dense(c.bm)) {
		return 0, 0
	}
	c.tail = 2
	if c.epi == 1 && c.stages == 4 && nst >= 4*3 {
		c.tail = 3
		if tu.tailepi >= 0 && c.tailEpiFits() {
			return 3, 1
		}
	}
	return c.tail, 0
}

// mmaTiles is the mma.sync tile and pipeline for a-bit by b-bit products
// whose largest output is m×n, on sms multiprocessors. The warp tile keeps
// the accumulators (a+b-1 per output fragment, equal weights shared)
// within 128 registers; the block has up to 4 warps, fewer along M when
// that is needed to give every multiprocessor two blocks. A product of a
// few k-steps whose tiles about a wave of blocks takes is bound by its
// warps' epilogues: it gets half the warp tile, and no more stages than
// its k-steps and one (deeper ones only prefetch a next tile, and their
// shared memory costs blocks a multiprocessor, so that some blocks take
// two tiles).
func mmaTiles(a, b, m, n, ksteps, sms int) config {
	w := min(a+b-1, 31) // accumulators: see NW in bmm_mma.cu
	var f int           // m16n8 fragments per warp
	switch {
	case w <= 2:
		f = 16
	case w <= 4:
		f = 8
	case w <= 8:
		f = 4
	case w <= 16:
		f = 2
	default:
		f = 1
	}
	// short: a few k-steps, and few enough bm×bn tiles for a wave of
	// blocks. Before the warp tile is chosen it is judged on a tile of
	// f×f fragments (16f×8f).
	short := func(bm, bn int) bool {
		return ksteps > 0 && ksteps <= 4 && ((m+bm-1)/bm)*((n+bn-1)/bn) <= 4*sms
	}
	if f > 1 && short(16*f, 8*f) {
		f /= 2
	}
	warp := map[int][2]int{16: {64, 32}, 8: {32, 32}, 4: {32, 16}, 2: {16, 16}, 1: {16, 8}}[f]
	wm, wn := warp[0], warp[1]
	// Narrow outputs: trade warp width for height.
	for wn > 8 && wn >= 2*roundUp(max(n, 1), 8) {
		wn /= 2
		wm *= 2
	}
	warpsN := min(2, (n+wn-1)/wn)
	warpsN = max(warpsN, 1)
	warpsM := 4 / warpsN
	tiles := func(wmN int) int { return ((m + wmN*wm - 1) / (wmN * wm)) * ((n + warpsN*wn - 1) / (warpsN * wn)) }
	for warpsM > 1 && tiles(warpsM) < 2*sms {
		warpsM /= 2
	}
	c := config{path: PathMMA, abits: a, bbits: b, bm: warpsM * wm, bn: warpsN * wn, wm: wm, wn: wn}
	// Enough stages to keep ~64 KB of copies in flight per block, two
	// blocks per multiprocessor.
	c.stages = min(8, max(3, (64<<10)/c.stageBytes()))
	if short(c.bm, c.bn) {
		c.stages = min(c.stages, ksteps+1)
	}
	// Wide operands: fewer stages, then fewer warps, to fit shared memory.
	for c.smem(modeBit) > maxSmem && c.stages > 2 {
		c.stages--
	}
	for c.smem(modeBit) > maxSmem && c.bm > c.wm {
		c.bm /= 2
	}
	return c
}

// maxSmem is the shared memory a block may use on sm_80 and newer (the
// smallest opt-in limit of those parts, less a margin).
const maxSmem = 160 << 10

// wgmmaNs are the wgmma N extents the kernels are generated for
// (kernels/gen_wgmma.py writes kernels/wgmma_ops.cuh): every one PTX
// allows for .b1.
//
//go:generate sh -c "cd kernels && python3 gen_wgmma.py"
var wgmmaNs = func() map[int]bool {
	m := map[int]bool{8: true, 16: true, 24: true}
	for n := 32; n <= 256; n += 16 {
		m[n] = true
	}
	return m
}()

// wgmmaTiles is the wgmma tile, pipeline and epilogue for launch l, or
// ok=false when the shape does not fit one: B's planes side by side
// (b·BN columns) must be a generated wgmma N, and a·b·BN ≤ 256 keeps the
// accumulators within 128 registers. The N tile is the widest that is not
// mostly padding, narrowed while the launch would leave multiprocessors
// idle (short products are latency-bound: more, smaller blocks finish
// sooner); two warpgroups (128-row tiles) when there are enough tiles. A
// stage holds up to 4 k-steps, so the mbarrier and wgmma waits of each
// stage are paid once per 4·a wgmmas, and stages fill up to 216 KB of
// shared memory (108 KB for one-warpgroup blocks, two of which share a
// multiprocessor).
func wgmmaTiles(l launch, t target, tu tuning) (config, bool) {
	a, b, m, n := l.abits, l.bbits, l.m, l.n
	valid := func(bn int) bool { np := b * bn; return bn >= 8 && a*np <= 256 && wgmmaNs[np] }
	// Tiles of the launch, counting every product of a batch as the largest.
	tiles := func(bm, bn int) int { return max(l.nprob, 1) * ((m + bm - 1) / bm) * ((n + bn - 1) / bn) }
	bn := 0
	for c := 256; c >= 8; c /= 2 {
		if !valid(c) || (c > 8 && c >= 2*roundUp(max(n, 1), 8)) {
			continue // not a wgmma N, or mostly padding
		}
		bn = c
		break
	}
	if bn == 0 {
		return config{}, false
	}
	minTiles := tu.minTiles
	if minTiles == 0 {
		minTiles = 3 * t.sms / 4
	}
	floor := 16
	if tu.minBN > 0 {
		floor = tu.minBN
	} else if l.anyBit {
		floor = 32 // MulBit: whole packed words per block (packTileBits)
	}
	for tiles(64, bn) < minTiles && valid(bn/2) && bn/2 >= floor {
		bn /= 2
	}
	if tu.bn > 0 {
		if !valid(tu.bn) {
			return config{}, false
		}
		bn = tu.bn
	}
	c := config{path: PathWGMMA, abits: a, bbits: b, bn: bn, wgs: 2, lbo: t.lbo, sbo: t.sbo}
	if tiles(128, bn) < t.sms/2 {
		c.wgs = 1
	}
	if tu.wgs > 0 {
		c.wgs = tu.wgs
	}
	c.bm = 64 * c.wgs
	budget := 216 << 10
	if c.wgs == 1 {
		budget = 108 << 10
	}
	c.ks = min(4, max(l.ksteps, 1))
	if tu.ks > 0 {
		c.ks = tu.ks
	}
	for c.ks > 1 && budget/c.stageBytes() < 3 {
		c.ks /= 2
	}
	c.stages = min(16, budget/c.stageBytes())
	if tu.stages > 0 {
		c.stages = tu.stages
	}
	if c.bn >= 256 {
		c.epi = 1 // rows of 1 KB: bulk stores paid there, and lost on narrower tiles
	}
	if tu.epi != 0 {
		c.epi = max(tu.epi, 0)
	}
	c.timing = tu.timing
	// The producer warpgroup with two consumer warpgroups and stages of 4
	// k-steps, where it won.
	if c.wgs == 2 && c.ks == 4 {
		c.ws = 1
	}
	if tu.ws != 0 {
		c.ws = max(tu.ws, 0)
	}
	if c.ws >= c.stages-1 || c.wgs != 2 {
		// No stage would load while the consumers multiply, or not the
		// two consumer warpgroups the register split is made for.
		c.ws = 0
	}
	if c.epi == 1 {
		c.l2 = 1
	}
	if tu.l2 != 0 {
		c.l2 = min(max(tu.l2, 0), 1) // one policy: a larger value is 1
	}
	if c.stages < 2 || (c.stages < 3 && tu.stages == 0) || c.smem(modeBit) > 220<<10 {
		return config{}, false // wide A: mma.sync
	}
	return c, true
}

func (c config) threads() int {
	if c.path == PathWGMMA {
		if c.ws > 0 {
			return 128*c.wgs + 128 // the producer warpgroup
		}
		return 128 * c.wgs
	}
	return (c.bm / c.wm) * (c.bn / c.wn) * 32
}

// stageBytes is the shared memory of one pipeline stage.
func (c config) stageBytes() int {
	if c.path == PathWGMMA {
		return max(c.ks, 1) * (c.abits*c.bm + c.bbits*c.bn) * 32
	}
	return (c.abits*c.bm + c.bbits*c.bn) * 32
}

// smem is the dynamic shared memory a launch needs: the stages, and in
// MulBit mode the q tile of codes (past the stages on mma.sync, whose
// blocks load the next tile meanwhile; over them on wgmma when larger).
func (c config) smem(mode int) int {
	s := c.stages * c.stageBytes()
	if c.path == PathWGMMA && (c.epi == 1 || mode == modeBit) {
		// The staged int tile (EPI), or MulBit's raw tile packed by rows
		// (rows of bn+8 words, bmm_wgmma.cu's whole-tile MulBit path).
		s = max(s, c.epiBytes())
	}
	if mode == modeBit {
		if c.path == PathMMA {
			// Past the stages: they load the next tile meanwhile.
			s += c.bm * (c.bn + 1) * 4
		} else {
			s = max(s, c.bm*(c.bn+1)*4)
		}
	}
	if c.tailepi == 1 && mode == modeInt {
		s = max(s, c.stages*c.stageBytes()+c.tailEpiBytes())
	}
	return s
}

// tailEpiBytes is bmm_wgmma.cu's TAILEPI_BYTES: two warps' rows of the
// int staging.
func (c config) tailEpiBytes() int { return 2 * 16 * c.epiRowBytes() }

// outBytes is the bytes of one int output on the device: 2 with out16,
// else 4.
func (c config) outBytes() int {
	if c.out16 == 1 {
		return 2
	}
	return 4
}

// epiRowBytes is bmm_wgmma.cu's EPI_LD: a staged row of bn int outputs
// and 8 more.
func (c config) epiRowBytes() int { return (c.bn + 8) * c.outBytes() }

// fitsOut16 says whether every product of an a-bit by b-bit product with
// a k-bit reduction fits a uint16: k·(2^a-1)·(2^b-1) <= 65535 (codes are
// unsigned, so products are never negative).
func fitsOut16(a, b, k int) bool {
	if a > 16 || b > 16 || k > 65535 {
		return false
	}
	return uint64(k)*(uint64(1)<<a-1)*(uint64(1)<<b-1) <= 65535
}

// tailEpiFits says whether TAILEPI applies to c's tail: the tail one
// stage short of the pipeline (at least 3 stages), int tiles through
// shared memory, two warps' rows in a stage, and the stages with two
// warps' rows more within the 227 KB a Hopper block may have.
func (c config) tailEpiFits() bool {
	return c.tail >= 2 && c.tail == c.stages-1 && c.epi == 1 && c.stageBytes() >= c.tailEpiBytes() &&
		c.stages*c.stageBytes()+c.tailEpiBytes() <= 227<<10
}

// epiBytes is the shared memory of the wgmma tile staged in the epilogue:
// rows of bn int32 and 32 bytes of padding, as MulBit's raw products
// packed by rows take them; the int tile of EPI (rows of epiRowBytes)
// takes no more.
func (c config) epiBytes() int { return c.bm * (4*c.bn + 32) }

// opts are the NVRTC options that build this variant.
func (c config) opts() []string {
	d := func(k string, v int) string { return "-D" + k + "=" + strconv.Itoa(v) }
	o := []string{"--std=c++17", "--fmad=false", d("ABITS", c.abits), d("BBITS", c.bbits), d("BN", c.bn), d("STAGES", c.stages), d("OUT16", c.out16)}
	if c.path == PathWGMMA {
		return append(o, d("NP", c.bbits*c.bn), d("WGS", c.wgs), d("KS", c.ks), d("EPI", c.epi), d("BITREG", c.bitreg), d("WS", c.ws), d("TAIL", c.tail), d("TAILEPI", c.tailepi), d("ONEPROB", c.oneprob), d("L2HINT", c.l2), d("TIMING", c.timing), d("DESC_LBO", c.lbo), d("DESC_SBO", c.sbo))
	}
	return append(o, d("BM", c.bm), d("WM", c.wm), d("WN", c.wn), d("ONEPROB", c.oneprob))
}

func (c config) String() string {
	if c.path == PathWGMMA {
		return fmt.Sprintf("wgmma a%d b%d %dx%d wg%d ks%d s%d epi%d reg%d ws%d tail%d te%d p%d l2%d o16%d", c.abits, c.bbits, c.bm, c.bn, c.wgs, c.ks, c.stages, c.epi, c.bitreg, c.ws, c.tail, c.tailepi, c.oneprob, c.l2, c.out16)
	}
	return fmt.Sprintf("mma a%d b%d %dx%d warp %dx%d s%d p%d o16%d", c.abits, c.bbits, c.bm, c.bn, c.wm, c.wn, c.stages, c.oneprob, c.out16)
}
