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
	lbo, sbo     int // wgmma descriptor byte offsets
}

func (c config) threads() int {
	if c.path == PathWGMMA {
		return 128 * c.wgs
	}
	return (c.bm / c.wm) * (c.bn / c.wn) * 32
}

// stageBytes is the shared memory of one pipeline stage.
func (c config) stageBytes() int {
	if c.path == PathWGMMA {
		return (c.abits*c.bm + c.bbits*c.bn) * 32
	}
	return (c.abits*c.bm + c.bbits*c.bn) * 32
}

// smem is the dynamic shared memory a launch needs: the stages, or the
// q tile of codes in MulBit mode when that is larger.
func (c config) smem(mode int) int {
	s := c.stages * c.stageBytes()
	if mode == modeBit {
		s = max(s, c.bm*(c.bn+1)*4)
	}
	return s
}

// opts are the NVRTC options that build this variant.
func (c config) opts() []string {
	d := func(k string, v int) string { return "-D" + k + "=" + strconv.Itoa(v) }
	o := []string{"--std=c++17", "--fmad=false", d("ABITS", c.abits), d("BBITS", c.bbits), d("BN", c.bn), d("STAGES", c.stages)}
	if c.path == PathWGMMA {
		return append(o, d("NP", c.bbits*c.bn), d("WGS", c.wgs), d("DESC_LBO", c.lbo), d("DESC_SBO", c.sbo))
	}
	return append(o, d("BM", c.bm), d("WM", c.wm), d("WN", c.wn))
}

func (c config) String() string {
	if c.path == PathWGMMA {
		return fmt.Sprintf("wgmma a%d b%d %dx%d wg%d s%d", c.abits, c.bbits, c.bm, c.bn, c.wgs, c.stages)
	}
	return fmt.Sprintf("mma a%d b%d %dx%d warp %dx%d s%d", c.abits, c.bbits, c.bm, c.bn, c.wm, c.wn, c.stages)
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

// wgmmaConfig picks the wgmma variant, or ok=false when the shape does
// not fit one: B's planes side by side (b·BN columns) must be a generated
// wgmma N, and a·b·BN ≤ 256 keeps the accumulators within 128 registers.
func wgmmaConfig(a, b, m, n, sms, lbo, sbo int) (config, bool) {
	for bn := 256; bn >= 8; bn /= 2 {
		np := b * bn
		if a*np > 256 || !wgmmaNs[np] {
			continue
		}
		if bn > 8 && bn >= 2*roundUp(max(n, 1), 8) {
			continue // mostly padding
		}
		c := config{path: PathWGMMA, abits: a, bbits: b, bn: bn, wgs: 2, lbo: lbo, sbo: sbo}
		c.bm = 64 * c.wgs
		if ((m+c.bm-1)/c.bm)*((n+bn-1)/bn) < sms/2 {
			c.wgs, c.bm = 1, 64
		}
		// Deep pipelines keep enough bytes in flight to cover the memory
		// latency: a two-warpgroup block has its multiprocessor to itself
		// (registers), a one-warpgroup block shares it with another.
		budget := 200 << 10
		if c.wgs == 1 {
			budget = 100 << 10
		}
		c.stages = min(16, budget/c.stageBytes())
		if c.stages < 3 {
			return config{}, false // wide A: mma.sync
		}
		return c, true
	}
	return config{}, false
}
