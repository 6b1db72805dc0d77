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

// config is one compiled variant of a kernel and its launch shape.
type config struct {
	path         string
	abits, bbits int
	bm, bn       int // block tile of C
	wm, wn       int // warp tile (mma)
	wgs          int // warpgroups (wgmma)
	stages       int
	ks           int // 256-bit k-steps per pipeline stage (wgmma)
	cluster      int // wgmma: blocks per cluster sharing B (1 or 2)
	epi          int // wgmma: 1 stores whole int32 tiles through shared memory and bulk copies
	bitepi       int // wgmma: 1 re-quantizes and packs whole MulBit tiles a word at a time (packTileBits)
	timing       int // wgmma: 1 prints per-block phase times (a diagnostic)
	// bitreg (wgmma, with bitepi): 1 packs MulBit tiles by rows with no
	// epilogue, at most 8 bits and BN a multiple of 64 straight from the
	// accumulators (bmm_wgmma.cu BITREG, packRegBits), no shared memory;
	// 2 exchanges whole plane bytes in the quad (2 to 8 bits).
	bitreg int
	// ws (wgmma): n >= 1 adds a producer warpgroup that issues every
	// copy, the consumers releasing a stage n stages after it
	// (wgmma.wait_group n); 0 is the single-role loop (thread 0 also
	// refills). wsf: 1 queues the first stage alone (bmm_wgmma.cu WSF).
	ws, wsf int
	// oneprob (wgmma): 1 reads the descriptor of a one-product launch
	// from the kernel parameter (p1) instead of global memory.
	oneprob int
	// l2 (wgmma): 1 stores whole int32 tiles with an L2 evict-first
	// policy (bmm_wgmma.cu L2HINT).
	l2 int
	// tail (wgmma, with ws): the consumer warpgroups multiply the last
	// tail stages one after the other, so that the first one's epilogue
	// overlaps the second one's last stages (bmm_wgmma.cu TAIL).
	tail int
	// tailepi (wgmma, with tail = stages-1 and epi): the first
	// warpgroup's int32 rows leave through shared memory too, 2 warps'
	// through tailEpiBytes past the stages (bmm_wgmma.cu TAILEPI).
	tailepi int
	// out16: 1 stores int outputs as uint16 (kernels/common.cuh OUT16),
	// where every product of the launch fits (fitsOut16); the host widens
	// them to int32 as it copies them back.
	out16    int
	lbo, sbo int // wgmma descriptor byte offsets
}

// tuning overrides wgmmaConfig's choices, for the tuning benchmarks; a
// zero field leaves the choice to the heuristic.
type tuning struct {
	bn, wgs, ks, stages int
	// minTiles: narrow the N tile while the launch has fewer 64-row tiles
	// than this (0: 3/4 of the multiprocessor count; negative: never).
	minTiles int
	// cluster: 1 never pairs blocks into clusters, 2 always where the
	// launch allows it; 0 leaves it to the heuristic.
	cluster int
	// epi: 1 stores int32 tiles through shared memory and bulk copies,
	// -1 from the registers, 0 leaves it to the heuristic.
	epi int
	// bitepi: 1 packs whole MulBit tiles a word at a time, -1 through
	// the per-output path (emit, packBits), 0 leaves it to the heuristic.
	bitepi int
	// bitreg: 1 or 2 packs MulBit tiles by rows from the registers
	// (config.bitreg), -1 through shared memory (packTileBits), 0 leaves
	// it to the heuristic (Kernel.prepare).
	bitreg int
	// timing: 1 builds the diagnostic that prints per-block phase times.
	timing int
	// minBN: the N tile narrows no further than this (0: 16); MulBit
	// launches use 32, whose words the packing owns whole.
	minBN int
	// ws: n >= 1 adds the producer warpgroup (config.ws), -1 leaves it
	// out, 0 leaves it to the heuristic; wsf: 1 with it queues the first
	// stage alone.
	ws, wsf int
	// oneprob: 1 passes a one-product launch's descriptor by value
	// (config.oneprob), -1 never, 0 leaves it to the heuristic (Kernel.prepare).
	oneprob int
	// l2: 1 gives config.l2, -1 none, 0 the heuristic.
	l2 int
	// tail: config.tail where an int32 launch has the producer warpgroup
	// and tail <= stages; -1 none, 0 the heuristic (config.setTail).
	tail int
	// tailepi: 1 gives config.tailepi where it applies, -1 never.
	tailepi int
	// out16: -1 keeps int32 outputs on the device; 0 stores uint16 where
	// every product fits (config.out16).
	out16 int
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

// smem is the dynamic shared memory a launch needs: the stages, or the
// q tile of codes in MulBit mode when that is larger.
func (c config) smem(mode int) int {
	s := c.stages * c.stageBytes()
	if c.path == PathWGMMA && (c.epi == 1 || (c.bitepi == 1 && mode == modeBit)) {
		// The staged int32 tile (EPI), or MulBit's raw tile packed by
		// rows (rows of bn+8 words, bmm_wgmma.cu BITEPI).
		s = max(s, c.epiBytes())
	}
	if mode == modeBit {
		s = max(s, c.bm*(c.bn+1)*4)
	}
	if c.tailepi == 1 && mode == modeInt {
		s = max(s, c.stages*c.stageBytes()+c.tailEpiBytes())
	}
	return s
}

// setTail chooses the tail of a launch (config.tail, config.tailepi)
// once the producer warpgroup is chosen: allInt says every product has an
// int output (MulInt: int32, or uint16 with out16), dense that no
// zero-tile list skips a k-step, maxK is the
// longest product's k-steps. int32 products multiply their last stages
// one warpgroup at a time (bmm_wgmma.cu TAIL), the first one's rows
// leaving while the second finishes: on 256-column tiles of 4 stages a
// tail of 3 with those rows through shared memory too (TAILEPI),
// elsewhere 2. N=16384, D=256, one run: s=1 18.08 us against 18.96 with
// no tail and 19.65 with no tail and no evict-first stores; s=4 51.77
// against 52.93 and 52.40 (BenchmarkTune, H200; bench/gpu/RESULTS.md,
// session 6).
//
// The default takes it only where the kernel would run it, a loop of
// 4·tail stages or more, and only for dense A, whose blocks all run maxK
// k-steps: block-diagonal zero-tile launches ran slower with the tail
// compiled in and idle (N=16384, bs=1024, D=256, s=4: 16.55-16.67 us
// against 15.72-15.82). Never for MulBit, tuned or not: it lost there
// (s=1 4-bit 18.06 against 17.79 us), and racecheck reported hazards in
// the shared-memory packing (emit/packBits, packTileBits) under the tail
// that it reports nowhere else.
func (c *config) setTail(allInt, dense bool, maxK int, tu tuning) {
	c.tail, c.tailepi = 0, 0
	if c.path != PathWGMMA || c.ws == 0 || !allInt || tu.tail < 0 {
		return
	}
	if tu.tail > 0 {
		if tu.tail <= c.stages {
			c.tail = tu.tail
			if tu.tailepi > 0 && c.tailEpiFits() {
				c.tailepi = 1
			}
		}
		return
	}
	nst := (maxK + c.ks - 1) / max(c.ks, 1)
	if !dense || nst < 4*2 {
		return
	}
	c.tail = 2
	if c.epi == 1 && c.stages == 4 && nst >= 4*3 {
		c.tail = 3
		if tu.tailepi >= 0 && c.tailEpiFits() {
			c.tailepi = 1
		}
	}
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
// stage short of the pipeline (at least 3 stages), int32 tiles through
// shared memory, two warps' rows in a stage, and the stages with two
// warps' rows more within the 227 KB a Hopper block may have.
func (c config) tailEpiFits() bool {
	return c.tail >= 2 && c.tail == c.stages-1 && c.epi == 1 && c.stageBytes() >= c.tailEpiBytes() &&
		c.stages*c.stageBytes()+c.tailEpiBytes() <= 227<<10
}

// epiBytes is the shared memory of the wgmma tile staged in the epilogue:
// rows of bn int32 and 32 bytes of padding, as MulBit's raw products
// packed by rows take them (bmm_wgmma.cu BITEPI); the int tile of EPI
// (rows of epiRowBytes) takes no more.
func (c config) epiBytes() int { return c.bm * (4*c.bn + 32) }

// opts are the NVRTC options that build this variant.
func (c config) opts() []string {
	d := func(k string, v int) string { return "-D" + k + "=" + strconv.Itoa(v) }
	o := []string{"--std=c++17", "--fmad=false", d("ABITS", c.abits), d("BBITS", c.bbits), d("BN", c.bn), d("STAGES", c.stages), d("OUT16", c.out16)}
	if c.path == PathWGMMA {
		return append(o, d("NP", c.bbits*c.bn), d("WGS", c.wgs), d("KS", c.ks), d("CLUSTER", max(c.cluster, 1)), d("EPI", c.epi), d("BITEPI", c.bitepi), d("BITREG", c.bitreg), d("WS", c.ws), d("WSF", c.wsf), d("TAIL", c.tail), d("TAILEPI", c.tailepi), d("ONEPROB", c.oneprob), d("L2HINT", c.l2), d("TIMING", c.timing), d("DESC_LBO", c.lbo), d("DESC_SBO", c.sbo))
	}
	return append(o, d("BM", c.bm), d("WM", c.wm), d("WN", c.wn))
}

func (c config) String() string {
	if c.path == PathWGMMA {
		return fmt.Sprintf("wgmma a%d b%d %dx%d wg%d ks%d s%d cl%d epi%d bitepi%d reg%d ws%d wsf%d tail%d te%d p%d l2%d o16%d", c.abits, c.bbits, c.bm, c.bn, c.wgs, c.ks, c.stages, max(c.cluster, 1), c.epi, c.bitepi, c.bitreg, c.ws, c.wsf, c.tail, c.tailepi, c.oneprob, c.l2, c.out16)
	}
	return fmt.Sprintf("mma a%d b%d %dx%d warp %dx%d s%d o16%d", c.abits, c.bbits, c.bm, c.bn, c.wm, c.wn, c.stages, c.out16)
}

// mmaConfig picks the mma.sync variant for a-bit by b-bit products whose
// largest output is m×n, on a device with sms multiprocessors. The warp
// tile keeps the accumulators (a+b-1 per output fragment, equal weights
// shared) within 128 registers; the block has up to 4 warps, fewer along M
// when that is needed to give every multiprocessor two blocks.
func mmaConfig(a, b, m, n, sms int) config {
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
// (gen_wgmma.py): every one PTX allows for .b1.
var wgmmaNs = func() map[int]bool {
	m := map[int]bool{8: true, 16: true, 24: true}
	for n := 32; n <= 256; n += 16 {
		m[n] = true
	}
	return m
}()

// wgmmaConfig picks the wgmma variant for a launch of nprob a-bit by b-bit
// products whose largest output is m×n with ksteps 256-bit k-steps, or
// ok=false when the
// shape does not fit one: B's planes side by side (b·BN columns) must be a
// generated wgmma N, and a·b·BN ≤ 256 keeps the accumulators within 128
// registers. The N tile is the widest that is not mostly padding, narrowed
// while the launch would leave multiprocessors idle (short products are
// latency-bound: more, smaller blocks finish sooner); two warpgroups
// (128-row tiles) when there are enough tiles. A stage holds up to 4
// k-steps (1024 bits), so the mbarrier and wgmma waits of each stage are
// paid once per 4·a wgmmas, and stages fill up to 216 KB of shared memory
// (108 KB for one-warpgroup blocks, two of which share a multiprocessor).
func wgmmaConfig(a, b, m, n, ksteps, nprob, sms, lbo, sbo int, tu tuning) (config, bool) {
	valid := func(bn int) bool { np := b * bn; return bn >= 8 && a*np <= 256 && wgmmaNs[np] }
	// Tiles of the launch, counting every product of a batch as the largest.
	tiles := func(bm, bn int) int { return max(nprob, 1) * ((m + bm - 1) / bm) * ((n + bn - 1) / bn) }
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
		minTiles = 3 * sms / 4
	}
	floor := 16
	if tu.minBN > 0 {
		floor = tu.minBN
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
	c := config{path: PathWGMMA, abits: a, bbits: b, bn: bn, wgs: 2, lbo: lbo, sbo: sbo}
	if tiles(128, bn) < sms/2 {
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
	c.ks = min(4, max(ksteps, 1))
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
		// Rows of 1 KB: staging the int32 tile for bulk stores paid at
		// N=16384, D=256, s=1 (0.2 to 0.9 us in each of three paired
		// sweeps on the H200, 19.85 against 20.71 us in the last) and
		// lost on narrower tiles (s=4: +0.7 us; N=4096, D=64: +0.4 us);
		// bench/gpu/RESULTS.md, session 3.
		c.epi = 1
	}
	if tu.epi != 0 {
		c.epi = max(tu.epi, 0)
	}
	// MulBit tiles re-quantized and packed a word at a time from a
	// shared-memory tile, instead of one call per output and an atomic OR
	// per word: N=16384, D=256, 4-bit output 22.11 against 109.6 us at
	// s=1, 63.74 against 148.4 us at s=4 (H200, BenchmarkLarge impl=auto
	// and impl=pack0 in one run; bench/gpu/RESULTS.md, session 4).
	c.bitepi = 1
	if tu.bitepi != 0 {
		c.bitepi = max(tu.bitepi, 0)
	}
	c.timing = tu.timing
	// The producer warpgroup with two consumer warpgroups and stages of 4
	// k-steps: N=16384, D=256, s=1 19.59 against 20.13 us (medians of 6,
	// with the by-value descriptor), s=3 44.76-46.07 against 48.30-48.42,
	// MulBit s=4 4-bit 61.61 against 63.64 (BenchmarkWS, H200;
	// bench/gpu/RESULTS.md, session 5).
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
	if c.ws > 0 && tu.wsf > 0 {
		c.wsf = 1
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
