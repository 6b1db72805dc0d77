package tcu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// These tests need no GPU: loader errors, the kernel cache, zero-tile
// lists, launch packing, the memory pool and variant selection.

func TestOpenLibraryErrors(t *testing.T) {
	_, err := openLibrary(ErrNoDriver, []string{"/nonexistent/libcuda.so.1", "libqgtc-nothing.so.9"}, []string{"cuInit"})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoDriver)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "/nonexistent/libcuda.so.1")
	assert.Contains(t, err.Error(), "libqgtc-nothing.so.9")

	_, err = openLibrary(ErrNoNVRTC, nil, nil)
	assert.ErrorIs(t, err, ErrNoNVRTC)
	assert.Contains(t, err.Error(), "no candidate paths")

	// A library that loads but lacks the symbols is named with them.
	_, err = openLibrary(ErrNoNVRTC, []string{"libc.so.6"}, []string{"malloc", "nvrtcCompileProgram"})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNoNVRTC)
	assert.Contains(t, err.Error(), "missing symbols nvrtcCompileProgram")
	assert.NotContains(t, err.Error(), "malloc,")

	lib, err := openLibrary(ErrNoDriver, []string{"libc.so.6"}, []string{"malloc", "free"})
	require.NoError(t, err)
	assert.NotZero(t, lib.syms["malloc"])
}

// Every driver and NVRTC entry point the package calls by name is resolved
// when the library opens (a missing one would be called at address 0), and
// every resolved one is called.
func TestSymbolsResolved(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src.Write(b)
	}
	for _, tc := range []struct {
		name string
		syms []string
		call *regexp.Regexp
	}{
		{"driver", driverSyms, regexp.MustCompile(`\.(?:do|call)\("(cu[A-Za-z0-9_]+)"|fn\["(cu[A-Za-z0-9_]+)"\]`)},
		{"nvrtc", nvrtcSyms, regexp.MustCompile(`\.call\("(nvrtc[A-Za-z0-9_]+)"|syms\["(nvrtc[A-Za-z0-9_]+)"\]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := map[string]bool{}
			for _, m := range tc.call.FindAllStringSubmatch(src.String(), -1) {
				called[m[1]+m[2]] = true
			}
			require.NotEmpty(t, called)
			for name := range called {
				assert.True(t, slices.Contains(tc.syms, name), "%s is called but not resolved", name)
			}
			for _, name := range tc.syms {
				assert.True(t, called[name], "%s is resolved but never called", name)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	t.Setenv("QGTC_NVRTC", "/x/libnvrtc.so")
	assert.Equal(t, []string{"/x/libnvrtc.so"}, nvrtcCandidates())
	t.Setenv("QGTC_NVRTC", "")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "lib64"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib64", "libnvrtc.so.13"), nil, 0o644))
	t.Setenv("CUDA_HOME", dir)
	c := nvrtcCandidates()
	assert.Equal(t, filepath.Join(dir, "lib64", "libnvrtc.so.13"), c[0], "CUDA_HOME comes first")
	assert.Contains(t, c, "libnvrtc.so", "the loader path is the last resort")
	t.Setenv("QGTC_CUDA_DRIVER", "/y/libcuda.so")
	assert.Equal(t, []string{"/y/libcuda.so"}, driverCandidates())
}

// TestOpenWithoutGPU: on a machine without the driver or a device (CI),
// Open says which is missing; on a GPU host it opens.
func TestOpenWithoutGPU(t *testing.T) {
	d, err := Open(0)
	if err == nil {
		t.Logf("device present: %v", d.Info())
		require.NoError(t, d.Close())
		assert.ErrorIs(t, d.Close(), ErrClosed)
		return
	}
	assert.ErrorIs(t, err, ErrUnavailable)
	msg := err.Error()
	assert.True(t, strings.Contains(msg, "no CUDA driver") || strings.Contains(msg, "no CUDA device") || strings.Contains(msg, "no NVRTC"), msg)
	t.Logf("no GPU path here: %v", err)
}

func TestCacheKey(t *testing.T) {
	base := cacheKey("src", []header{{"h", "x"}}, "sm_90a", "13.0", []string{"-DA=1"})
	assert.Len(t, base, 64)
	for name, k := range map[string]string{
		"source":  cacheKey("src2", []header{{"h", "x"}}, "sm_90a", "13.0", []string{"-DA=1"}),
		"header":  cacheKey("src", []header{{"h", "y"}}, "sm_90a", "13.0", []string{"-DA=1"}),
		"arch":    cacheKey("src", []header{{"h", "x"}}, "sm_80", "13.0", []string{"-DA=1"}),
		"nvrtc":   cacheKey("src", []header{{"h", "x"}}, "sm_90a", "12.9", []string{"-DA=1"}),
		"options": cacheKey("src", []header{{"h", "x"}}, "sm_90a", "13.0", []string{"-DA=2"}),
		"shifted": cacheKey("sr", []header{{"ch", "x"}}, "sm_90a", "13.0", []string{"-DA=1"}),
	} {
		assert.NotEqual(t, base, k, name)
	}
	assert.Equal(t, base, cacheKey("src", []header{{"h", "x"}}, "sm_90a", "13.0", []string{"-DA=1"}))
}

func TestCacheCorruption(t *testing.T) {
	c := &cache{dir: t.TempDir()}
	key := cacheKey("s", nil, "sm_90a", "13.0", nil)
	builds := 0
	build := func() ([]byte, error) { builds++; return []byte("cubin-bytes"), nil }

	got, built, err := c.getOrBuild(key, build)
	require.NoError(t, err)
	assert.True(t, built)
	assert.Equal(t, "cubin-bytes", string(got))
	got, built, err = c.getOrBuild(key, build)
	require.NoError(t, err)
	assert.False(t, built, "second use comes from disk")
	assert.Equal(t, "cubin-bytes", string(got))

	for name, corrupt := range map[string]func([]byte) []byte{
		"truncated":   func(b []byte) []byte { return b[:len(b)-3] },
		"flipped":     func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"bad magic":   func(b []byte) []byte { b[0] = 'X'; return b },
		"empty":       func([]byte) []byte { return nil },
		"long length": func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 1<<40); return b },
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(c.path(key))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(c.path(key), corrupt(raw), 0o644))
			_, ok, err := c.get(key)
			require.NoError(t, err)
			assert.False(t, ok, "a corrupt entry is never returned")
			_, err = os.Stat(c.path(key))
			assert.True(t, errors.Is(err, os.ErrNotExist), "a corrupt entry is removed")
			before := builds
			got, built, err := c.getOrBuild(key, build)
			require.NoError(t, err)
			assert.True(t, built)
			assert.Equal(t, before+1, builds)
			assert.Equal(t, "cubin-bytes", string(got))
		})
	}

	// A build error is returned and nothing is cached.
	_, _, err = c.getOrBuild("other", func() ([]byte, error) { return nil, ErrCompile })
	assert.ErrorIs(t, err, ErrCompile)
	_, ok, _ := c.get("other")
	assert.False(t, ok)

	// A disabled cache always builds.
	off := &cache{}
	_, built, err = off.getOrBuild(key, build)
	require.NoError(t, err)
	assert.True(t, built)
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("QGTC_CACHE_DIR", "off")
	assert.Equal(t, "", defaultCacheDir())
	t.Setenv("QGTC_CACHE_DIR", "/tmp/x")
	assert.Equal(t, "/tmp/x", defaultCacheDir())
}

// blockSparse packs an m×k a-bit A whose values are non-zero only inside
// random 16×256-aligned-or-not blocks.
func blockSparse(t *testing.T, r *rand.Rand, m, k, bits int, pad bittensor.Padding) *bittensor.Tensor {
	vals := make([]int32, m*k)
	for blk := 0; blk < 1+r.IntN(6); blk++ {
		r0, c0 := r.IntN(max(m, 1)), r.IntN(max(k, 1))
		for i := r0; i < min(m, r0+1+r.IntN(40)); i++ {
			for j := c0; j < min(k, c0+1+r.IntN(300)); j++ {
				if r.IntN(3) == 0 {
					vals[i*k+j] = int32(r.IntN(1 << bits))
				}
			}
		}
	}
	a, err := bittensor.Pack(vals, m, k, bits, bittensor.ByRows, pad)
	require.NoError(t, err)
	return a
}

func TestTileMaskAndList(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		m, k, bits int
		pad        bittensor.Padding
	}{
		{0, 0, 1, bittensor.DefaultPadding}, {1, 1, 1, bittensor.DefaultPadding}, {100, 1000, 1, bittensor.DefaultPadding},
		{257, 513, 3, bittensor.DefaultPadding}, {70, 300, 2, bittensor.Padding{Lines: 3, Bits: 192}},
		{33, 65, 1, bittensor.Padding{Lines: 1, Bits: 64}}, {200, 1500, 4, bittensor.Padding{Lines: 32, Bits: 512}},
		{40, 20000, 2, bittensor.DefaultPadding}, // past 64 k-steps: more than one mask word per row of tiles
		{9000, 300, 2, bittensor.DefaultPadding}, // several chunks of groups, scanned in parallel
	} {
		a := blockSparse(t, r, tc.m, tc.k, tc.bits, tc.pad)
		l := layoutOf(a)
		words := deviceWords(a)
		require.Len(t, words, a.Bits()*l.planeWords())
		assert.Zero(t, l.lw%stepWords)
		mask := newTileMask(words, l.lw, a.Bits(), l, true)
		// The same mask on one core, and read from the tensor's own lines (UploadBits).
		assert.Equal(t, mask, newTileMask(words, l.lw, a.Bits(), l, false))
		assert.Equal(t, mask, newTileMask(a.Words(), a.LineWords(), a.Bits(), residentLayout(a), true))
		// Brute force from the values themselves.
		nz := func(g, s int) bool {
			for i := g * 16; i < min(a.Rows(), g*16+16); i++ {
				for j := s * 256; j < min(a.Cols(), s*256+256); j++ {
					if a.At(i, j) != 0 {
						return true
					}
				}
			}
			return false
		}
		for g := 0; g < mask.RowTiles; g++ {
			for s := 0; s < mask.ColTiles; s++ {
				require.Equal(t, nz(g, s), mask.NonZero(g, s), "%+v group %d step %d", tc, g, s)
			}
		}
		for _, bm := range []int{16, 32, 64, 128} {
			kptr, kidx := tileList(mask, bm)
			tiles := (a.PaddedLines() + bm - 1) / bm
			require.Len(t, kptr, tiles+1)
			for tm := 0; tm < tiles; tm++ {
				var want []int32
				for s := 0; s < mask.ColTiles; s++ {
					for g := tm * bm / 16; g < min(mask.RowTiles, (tm+1)*bm/16); g++ {
						if nz(g, s) {
							want = append(want, int32(s))
							break
						}
					}
				}
				assert.Equal(t, want, append([]int32(nil), kidx[kptr[tm]:kptr[tm+1]]...), "%+v bm=%d tile %d", tc, bm, tm)
			}
		}
	}
}

func TestDeviceWordsRelayout(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	a := blockSparse(t, r, 21, 150, 3, bittensor.Padding{Lines: 3, Bits: 192})
	require.Equal(t, 3, a.LineWords())
	w := deviceWords(a)
	l := layoutOf(a)
	assert.Equal(t, 4, l.lw)
	for p := 0; p < a.Bits(); p++ {
		for line := 0; line < l.lines; line++ {
			got := w[p*l.planeWords()+line*l.lw:][:l.lw]
			assert.Equal(t, a.Line(p, line), got[:3])
			assert.Zero(t, got[3], "new words are zero")
		}
	}
	d := blockSparse(t, r, 20, 300, 1, bittensor.DefaultPadding)
	assert.Same(t, &d.Words()[0], &deviceWords(d)[0], "default padding goes up as is")
}

// findProb is the test's oracle for packLaunch's block → problem map: the
// last problem whose first block is <= block, found by binary search over
// TileStart (the kernels read the map instead; common.cuh's findProb).
func findProb(ps []prob, block int) int {
	lo, hi := 0, len(ps)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if int(ps[mid].TileStart) <= block {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func TestPackLaunch(t *testing.T) {
	assert.Equal(t, probBytes, binary.Size(prob{}))
	ps := []prob{{M: 100, N: 40}, {M: 0, N: 10}, {M: 16, N: 16}, {M: 1, N: 1}, {M: 300, N: 0}, {M: 129, N: 200}}
	desc, blocks, err := packLaunch(ps, 64, 32)
	require.NoError(t, err)
	tiles := []int{2 * 2, 0, 1, 1, 0, 3 * 7}
	assert.Equal(t, 2*2+0+1+1+0+3*7, blocks)
	require.Len(t, desc, len(ps)*probBytes+4*blocks, "descriptors, then the block map")
	for b := 0; b < blocks; b++ {
		assert.Equal(t, uint32(findProb(ps, b)), binary.LittleEndian.Uint32(desc[len(ps)*probBytes+4*b:]), "map of block %d", b)
	}
	// Every block maps to the problem and tile that own it.
	b := 0
	for i := range ps {
		for j := 0; j < tiles[i]; j++ {
			assert.Equal(t, i, findProb(ps, b), "block %d", b)
			assert.Equal(t, j, b-int(ps[findProb(ps, b)].TileStart))
			b++
		}
	}
	// Field offsets as common.cuh declares them.
	one := prob{A: 1, Kidx: 2, ColBias: 3, OutPlane: 4, M: 5, Mode: 6, OutBits: 7, ReLU: 8, RqScale: 1.5, RqOffset: -2}
	raw, _, err := packLaunch([]prob{one}, 16, 16)
	require.NoError(t, err)
	require.Len(t, raw, probBytes, "one problem: no block map")
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(raw[off:]) }
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(raw[off:]) }
	assert.Equal(t, uint64(1), u64(0))
	assert.Equal(t, uint64(2), u64(32))
	assert.Equal(t, uint64(3), u64(80))
	assert.Equal(t, uint64(4), u64(104))
	assert.Equal(t, uint32(5), u32(112))
	assert.Equal(t, uint32(6), u32(140))
	assert.Equal(t, uint32(7), u32(144))
	assert.Equal(t, uint32(8), u32(156))
	assert.Equal(t, uint32(0x3fc00000), u32(160))
	assert.Equal(t, uint32(0xc0000000), u32(164))

	_, _, err = packLaunch([]prob{{M: -1}}, 16, 16)
	assert.ErrorIs(t, err, ErrShape)
}

func TestCommonHeaderMatchesProb(t *testing.T) {
	src, err := kernelFS.ReadFile("kernels/common.cuh")
	require.NoError(t, err)
	assert.True(t, bytes.Contains(src, []byte("sizeof(Prob) == 168")), "common.cuh asserts the size the Go side encodes")
	for _, f := range []string{"M, N, lw32, aLines, bLines, tilesN, tileStart, mode;", "int outBits, outByCols, outLw32, relu;", "float rqScale, rqOffset;"} {
		assert.True(t, bytes.Contains(src, []byte(f)), "common.cuh declares %q", f)
	}
}

type fakeAlloc struct {
	next   uintptr
	live   map[uintptr]int
	limit  int
	used   int
	allocs int
}

func (f *fakeAlloc) alloc(n int) (uintptr, error) {
	if f.used+n > f.limit {
		return 0, errors.New("out of memory")
	}
	f.next += 1 << 20
	f.live[f.next] = n
	f.used += n
	f.allocs++
	return f.next, nil
}

func (f *fakeAlloc) free(p uintptr) error {
	n, ok := f.live[p]
	if !ok {
		return errors.New("bad free")
	}
	delete(f.live, p)
	f.used -= n
	return nil
}

func TestPool(t *testing.T) {
	fa := &fakeAlloc{live: map[uintptr]int{}, limit: 9000}
	p := newPool(fa)
	b1, c1, err := p.get(1000)
	require.NoError(t, err)
	assert.Equal(t, sizeClass(1000), c1)
	require.NoError(t, p.put(b1))
	b2, _, err := p.get(900) // same class: reused
	require.NoError(t, err)
	assert.Equal(t, b1, b2)
	assert.Equal(t, 1, fa.allocs)
	assert.ErrorIs(t, p.put(12345), ErrShape)
	require.NoError(t, p.put(b2))
	assert.ErrorIs(t, p.put(b2), ErrShape, "double free")

	// Out of memory: idle blocks go back to the driver and the call retries.
	_, _, err = p.get(8000)
	require.NoError(t, err)
	assert.Equal(t, 0, p.idle)
	_, _, err = p.get(8000)
	assert.Error(t, err)

	require.NoError(t, p.release())
	assert.Empty(t, fa.live, "release frees everything")
}

func TestSizeClass(t *testing.T) {
	prev := 0
	for n := 1; n < 1<<22; n = n*5/4 + 1 {
		c := sizeClass(n)
		assert.GreaterOrEqual(t, c, n)
		assert.LessOrEqual(t, float64(c), max(float64(minBlock), 1.25*float64(n)+1), "n=%d", n)
		assert.GreaterOrEqual(t, c, prev)
		prev = c
	}
}

// h200 is the target of the host tests: 132 multiprocessors, wgmma on,
// the descriptor offsets the self-check picks first.
var h200 = target{sms: 132, wgmma: true, lbo: 128, sbo: 256}

// intLaunch is one dense a-bit by b-bit MulInt product, m×n with ksteps
// 256-bit k-steps, whose outputs do not fit uint16.
func intLaunch(a, b, m, n, ksteps int) launch {
	return launch{abits: a, bbits: b, m: m, n: n, ksteps: ksteps, nprob: 1, mode: modeInt, allInt: true}
}

func TestConfigs(t *testing.T) {
	for a := 1; a <= 32; a++ {
		for b := 1; b <= 32; b++ {
			for _, mn := range [][2]int{{1, 1}, {100, 16}, {4096, 64}, {16384, 256}, {50, 1000}} {
				c := chooseConfig(intLaunch(a, b, mn[0], mn[1], 64), target{sms: 132}, tuning{})
				require.Equal(t, PathMMA, c.path, "no wgmma on the target")
				assert.Zero(t, c.bm%c.wm)
				assert.Zero(t, c.bn%c.wn)
				assert.Zero(t, c.wm%16)
				assert.Zero(t, c.wn%8)
				assert.LessOrEqual(t, c.threads(), 128)
				assert.GreaterOrEqual(t, c.threads(), 32)
				regs := min(a+b-1, 31) * (c.wm / 16) * (c.wn / 8) * 4
				assert.LessOrEqual(t, regs, 128, "%v", c)
				assert.LessOrEqual(t, c.smem(modeBit), 227<<10, "%v", c)
				assert.Contains(t, c.opts(), "--fmad=false")
				if w := chooseConfig(intLaunch(a, b, mn[0], mn[1], 64), h200, tuning{}); w.path == PathWGMMA {
					assert.True(t, wgmmaNs[b*w.bn], "%v", w)
					assert.LessOrEqual(t, a*b*w.bn, 256)
					assert.Equal(t, 64*w.wgs, w.bm)
					assert.LessOrEqual(t, w.smem(modeBit), 227<<10, "%v", w)
					assert.LessOrEqual(t, w.smem(modeInt), 227<<10, "%v", w)
					assert.LessOrEqual(t, w.tail, w.stages, "%v", w)
				}
			}
		}
	}
	c := chooseConfig(intLaunch(1, 4, 16384, 256, 64), h200, tuning{})
	require.Equal(t, PathWGMMA, c.path)
	assert.Equal(t, 64, c.bn)
	assert.Equal(t, 2, c.wgs)
	c = chooseConfig(intLaunch(1, 5, 4096, 8, 16), h200, tuning{})
	assert.Equal(t, PathMMA, c.path, "40 columns is not a wgmma N")
	c = chooseConfig(intLaunch(1, 3, 4096, 64, 16), h200, tuning{minTiles: -1})
	require.Equal(t, PathWGMMA, c.path)
	assert.Equal(t, 64, c.bn, "three planes of 64 columns: N=192")
	c = chooseConfig(intLaunch(1, 1, 16384, 256, 64), target{sms: 132, wgmma: true, force: PathMMA, lbo: 128, sbo: 256}, tuning{})
	assert.Equal(t, PathMMA, c.path, "forced")
	// MulBit launches keep N tiles of 32 columns or more where an int
	// launch narrows to 16.
	l := intLaunch(1, 1, 1024, 64, 4)
	assert.Equal(t, 16, chooseConfig(l, h200, tuning{}).bn)
	l.allInt, l.anyBit, l.mode = false, true, modeBit
	assert.Equal(t, 32, chooseConfig(l, h200, tuning{}).bn)
}

// TestTail checks which launches take the tail (chooseTail): int
// products long enough for the kernel to run it, with the producer
// warpgroup; the large shapes' 256-column tiles the tail of 3 and its
// shared-memory rows, which must fit beside the stages.
func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name          string
		b, ksteps     int
		allInt, dense bool
		tu            tuning
		tail, tailepi int
	}{
		{"s=1 int32", 1, 64, true, true, tuning{}, 3, 1},
		{"s=1 int32, zero-tile lists", 1, 64, true, false, tuning{}, 0, 0},
		{"s=4 int32", 4, 64, true, true, tuning{}, 2, 0},
		{"s=1 MulBit", 1, 64, false, true, tuning{}, 0, 0},
		{"s=1 int32, 8 stages", 1, 32, true, true, tuning{}, 2, 0},
		{"s=1 int32, 7 stages", 1, 28, true, true, tuning{}, 0, 0},
		{"s=1 int32, no tail", 1, 64, true, true, tuning{tail: -1}, 0, 0},
		{"s=1 int32, no shared-memory rows", 1, 64, true, true, tuning{tailepi: -1}, 3, 0},
		{"s=1 int32, no producer", 1, 64, true, true, tuning{ws: -1}, 0, 0},
		{"s=1 int32, tuned", 1, 64, true, true, tuning{tail: 1}, 1, 0},
		{"s=1 int32, tuned past the stages", 1, 64, true, true, tuning{tail: 5}, 0, 0},
		{"s=1 MulBit, tuned", 1, 64, false, true, tuning{tail: 3, tailepi: 1}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := intLaunch(1, tc.b, 16384, 256, tc.ksteps)
			l.dense = func(int) bool { return tc.dense }
			if !tc.allInt {
				l.allInt, l.anyBit, l.mode = false, true, modeBit // by columns
			}
			c := chooseConfig(l, h200, tc.tu)
			require.Equal(t, PathWGMMA, c.path)
			assert.Equal(t, tc.tail, c.tail, "%v", c)
			assert.Equal(t, tc.tailepi, c.tailepi, "%v", c)
			assert.LessOrEqual(t, c.smem(modeInt), 227<<10, "%v", c)
			if c.tailepi == 1 {
				assert.Equal(t, c.stages*c.stageBytes()+c.tailEpiBytes(), c.smem(modeInt))
				assert.Contains(t, c.opts(), "-DTAILEPI=1")
			}
		})
	}
}

// TestOut16: uint16 outputs on the device exactly where every product
// fits, K·(2^a-1)·(2^b-1) <= 65535, and the staged rows they make.
func TestOut16(t *testing.T) {
	for _, tc := range []struct {
		a, b, k int
		want    bool
	}{
		{1, 1, 65535, true}, {1, 1, 65536, false}, {1, 1, 16384, true}, {2, 2, 7281, true}, {2, 2, 7282, false},
		{1, 4, 4096, true}, {1, 4, 4369, true}, {1, 4, 4370, false}, {16, 1, 1, true}, {16, 1, 2, false},
		{17, 1, 1, false}, {1, 17, 1, false}, {16, 16, 1, false}, {8, 8, 1, true}, {32, 32, 1 << 20, false},
	} {
		assert.Equal(t, tc.want, fitsOut16(tc.a, tc.b, tc.k), "a%d b%d K=%d", tc.a, tc.b, tc.k)
	}
	l := intLaunch(1, 1, 16384, 256, 64)
	c := chooseConfig(l, h200, tuning{})
	assert.Equal(t, 4, c.outBytes())
	assert.Equal(t, 264*4, c.epiRowBytes())
	assert.Contains(t, c.opts(), "-DOUT16=0")
	l.fits16 = true
	c = chooseConfig(l, h200, tuning{})
	assert.Equal(t, 1, c.out16, "every product fits")
	assert.Equal(t, 2, c.outBytes())
	assert.Equal(t, 264*2, c.epiRowBytes(), "bmm_wgmma.cu EPI_LD")
	assert.Equal(t, 2*16*264*2, c.tailEpiBytes(), "bmm_wgmma.cu TAILEPI_BYTES")
	assert.Contains(t, c.opts(), "-DOUT16=1")
	assert.Zero(t, chooseConfig(l, h200, tuning{out16: -1}).out16, "tuned off")
	m := chooseConfig(l, target{sms: 132}, tuning{})
	require.Equal(t, PathMMA, m.path)
	assert.Contains(t, m.opts(), "-DOUT16=1", "both kernels store through common.cuh")
	l.allInt, l.anyBit, l.mode = false, true, modeBit
	assert.Zero(t, chooseConfig(l, h200, tuning{}).out16, "int outputs only")
	dst := make([]int32, 3)
	widen16(dst, []uint16{0, 65535, 1234, 7})
	assert.Equal(t, []int32{0, 65535, 1234}, dst, "zero-extended, not sign-extended")
	// Chunks on several goroutines, and a part-filled last one.
	src := make([]uint16, 3*widenChunk+13)
	for i := range src {
		src[i] = uint16(i * 40503)
	}
	dst = make([]int32, len(src))
	widen16(dst, src)
	for i, v := range src {
		if dst[i] != int32(v) {
			t.Fatalf("dst[%d] = %d, want %d", i, dst[i], v)
		}
	}
}

// TestL2Policy: the evict-first int32 stores are the default of tiles
// stored through shared memory (256 columns), off elsewhere, and a tuning
// value of 1 or more asks for the one policy there is.
func TestL2Policy(t *testing.T) {
	for _, tc := range []struct {
		b, l2, want int
	}{{1, 0, 1}, {4, 0, 0}, {1, -1, 0}, {4, 1, 1}, {4, 2, 1}} {
		c := chooseConfig(intLaunch(1, tc.b, 16384, 256, 64), h200, tuning{l2: tc.l2})
		assert.Equal(t, tc.want, c.l2, "b=%d l2=%d (%v)", tc.b, tc.l2, c)
		assert.Contains(t, c.opts(), "-DL2HINT="+strconv.Itoa(tc.want))
	}
}

func TestTiledWords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ lines, k, bits, tile, pad, ks int }{
		{1, 1, 1, 64, 64, 4}, {37, 700, 2, 32, 64, 2}, {130, 256, 3, 64, 128, 4}, {8, 1300, 1, 16, 16, 1}, {200, 1024, 2, 64, 64, 4},
	} {
		x := randomBits(r, c.lines, c.k, c.bits, bittensor.ByRows)
		w, lines, steps, tw := tiledWords(x, c.tile, c.pad, c.ks)
		require.Equal(t, roundUp(c.lines, c.pad), lines)
		require.Equal(t, (c.k+255)/256, steps)
		stepsP := roundUp(steps+1, c.ks)
		require.Equal(t, stepsP*c.bits*c.tile*4, tw)
		require.Len(t, w, lines/c.tile*tw)
		seen := make([]bool, len(w))
		for p := 0; p < c.bits; p++ {
			for l := 0; l < c.lines; l++ {
				src := x.Line(p, l)
				for i, v := range src {
					s, h, j := i/4, (i%4)/2, i%2
					lt := l % c.tile
					at := (l/c.tile)*tw + (s*c.bits+p)*c.tile*4 + (lt/8)*32 + h*16 + (lt%8)*2 + j
					require.Equal(t, v, w[at], "plane %d line %d word %d", p, l, i)
					seen[at] = true
				}
			}
		}
		for i, v := range w {
			if !seen[i] {
				require.Zero(t, v, "word %d is padding", i)
			}
		}
	}
}

// BenchmarkFetch compares fetch's two ways of handing back a large
// product's int outputs (16384×256, N=16384, D=256): widening uint16
// (config.out16) against copying int32.
func BenchmarkFetch(b *testing.B) {
	const n = 16384 * 256
	dst := make([]int32, n)
	b.Run("widen16", func(b *testing.B) {
		src := make([]uint16, n)
		b.SetBytes(2 * n)
		for i := 0; i < b.N; i++ {
			widen16(dst, src)
		}
	})
	b.Run("copy32", func(b *testing.B) {
		src := make([]byte, 4*n)
		b.SetBytes(4 * n)
		for i := 0; i < b.N; i++ {
			copy(asBytes(dst), src)
		}
	})
}

// TestAggKernelsListed checks that NewBackend loads every entry point of
// kernels/agg.cu: one it does not load would launch a null function.
func TestAggKernelsListed(t *testing.T) {
	src, _ := kernelSource("agg.cu")
	var entries []string
	for _, m := range regexp.MustCompile(`extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\(`).FindAllStringSubmatch(src, -1) {
		entries = append(entries, m[1])
	}
	require.NotEmpty(t, entries)
	assert.ElementsMatch(t, entries, aggKernels)
}

// TestKernelParamsFit checks that every kernel of kernels/*.cu takes no
// more parameters than Device.launch passes (maxParams), a parameter
// macro (agg.cu's AGG_PARAMS) counted for its parameters and a Prob by
// value for its words: one past it launches nowhere, and only on a GPU.
func TestKernelParamsFit(t *testing.T) {
	names, err := fs.Glob(kernelFS, "kernels/*.cu")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	// macros counts each macro's comma-separated items in src.
	macroRe := regexp.MustCompile(`(?s)#define (\w+)\s+(.*?[^\\])\n`)
	macros := func(src string) map[string]int {
		n := map[string]int{}
		for _, m := range macroRe.FindAllStringSubmatch(src, -1) {
			n[m[1]] = len(strings.Split(m[2], ","))
		}
		return n
	}
	sigRe := regexp.MustCompile(`(?s)extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\((.*?)\)\s*\{`)
	kernels := 0
	for _, name := range names {
		src, _ := kernelSource(path.Base(name))
		items := macros(src)
		for _, m := range sigRe.FindAllStringSubmatch(src, -1) {
			n := 0
			for _, p := range strings.Split(m[2], ",") {
				switch k, ok := items[strings.TrimSpace(p)]; {
				case ok:
					n += k
				case strings.Contains(p, "__grid_constant__ Prob "):
					n += probBytes / 8 // a descriptor by value, a parameter a word (probParams)
				default:
					n++
				}
			}
			kernels++
			assert.LessOrEqual(t, n, maxParams, "kernel %s of %s takes %d parameters", m[1], name, n)
		}
	}
	assert.GreaterOrEqual(t, kernels, len(aggKernels), "kernels found")
	src, _ := kernelSource("agg.cu")
	agg := map[string]int{}
	for _, m := range macroRe.FindAllStringSubmatch(src, -1) {
		agg[m[1]] = len(strings.Split(m[2], ","))
	}
	require.Positive(t, agg["AGG_PARAMS"], "AGG_PARAMS in agg.cu")
	assert.Equal(t, agg["AGG_PARAMS"], agg["AGG_ARGS"], "AGG_PARAMS and AGG_ARGS")
}

// TestPreferEdgesUploads: a pass that uploads what it aggregates over pays
// for the dense adjacency's bytes (a bit per pair of the batch's nodes)
// against the edge list's four bytes an entry and a row. A 50,000-node
// batch whose dense product the model finds cheaper on the device takes
// its edge list when each pass uploads it (the 2M graph's cold 1-bit
// passes: bench/e2e/RESULTS.md), and so do 40 such batches merged.
func TestPreferEdgesUploads(t *testing.T) {
	be := &Backend{}
	dense := int64(50000) * 50176 / 8
	one := bmm.AggCost{Rows: 50000, Cols: 64, Edges: 2000000, DenseTiles: 15000, Bits: 1, DenseBytes: dense}
	assert.False(t, be.PreferEdges(one), "kept on the device: the dense product's work is less")
	one.Uploaded = true
	assert.True(t, be.PreferEdges(one), "uploaded each pass")
	all := bmm.AggCost{Rows: 40 * 50000, Cols: 64, Edges: 40 * 2000000, DenseTiles: 40 * 15000, Bits: 1, Batches: 40, DenseBytes: 40 * dense, Uploaded: true}
	assert.True(t, be.PreferEdges(all), "40 batches uploaded each pass")
}

// TestPreferEdgesLaunches checks the launch term of the GPU cost model:
// a small batch whose dense product does less work than its edge list
// still merges with its like into one edge-list launch when there are
// enough of them (a Coauthor Physics pass: 18 batches of ~1,900 nodes).
func TestPreferEdgesLaunches(t *testing.T) {
	be := &Backend{}
	one := bmm.AggCost{Rows: 1900, Cols: 64, Edges: 14000, DenseTiles: 20, Bits: 4}
	all := bmm.AggCost{Rows: 18 * 1900, Cols: 64, Edges: 18 * 14000, DenseTiles: 18 * 20, Bits: 4, Batches: 18}
	assert.False(t, be.PreferEdges(one), "one batch: the dense product's work is less")
	assert.True(t, be.PreferEdges(all), "18 batches: one edge-list launch beats 18 dense ones")
	assert.True(t, be.PreferMerged(18, 18*1900))
	assert.False(t, be.PreferMerged(1, 1900))
	// Amazon Computers in 7 batches, where one merged edge-list pass beat
	// the dense products on an H100 (bench/e2e/RESULTS.md).
	computers := bmm.AggCost{Rows: 13752, Cols: 64, Edges: 401634, DenseTiles: 1349, Bits: 4, Batches: 7}
	assert.True(t, be.PreferEdges(computers), "Amazon Computers, 7 batches")
	// A 50,000-node batch of the 2M-node synthetic graph, whose dense
	// products lost to edge lists (bench/multigpu/RESULTS.md).
	synth := bmm.AggCost{Rows: 50000, Cols: 64, Edges: 1800000, DenseTiles: 152000, Bits: 4}
	assert.True(t, be.PreferEdges(synth), "2M-node synthetic graph, one batch")
	// The same graph's batches as the 40-part partition makes them, at 1
	// bit, kept on the device, where the dense products lost to the edge
	// lists (bench/e2e/RESULTS.md).
	synth1 := bmm.AggCost{Rows: 49999, Cols: 64, Edges: 1846729, DenseTiles: 59347, Bits: 1}
	assert.True(t, be.PreferEdges(synth1), "2M-node synthetic graph at 1 bit, one batch")
	synth1.Rows, synth1.Edges, synth1.DenseTiles, synth1.Batches = 2000000, 73603282, 2361496, 40
	assert.True(t, be.PreferEdges(synth1), "2M-node synthetic graph at 1 bit, 40 batches")
}

// TestPreferEdgesFeatures: the first product's choice between the
// features' code lists and their planes times the weights, for the
// 100M-node graph's features (16 of 128 codes set a node, 4 bits, 4-bit
// weights, 64 outputs): kept on the device, the lists; streamed from the
// file, where every pass makes the lists from the planes on the host, the
// planes. Each was the faster there (bench/scale/RESULTS.md, call d2).
func TestPreferEdgesFeatures(t *testing.T) {
	be := &Backend{}
	feats := bmm.AggCost{Rows: 100000000, Cols: 64, Edges: 1600000000, DenseTiles: 1562500, Bits: 16}
	assert.True(t, be.PreferEdges(feats), "kept: the lists")
	feats.HostLists = true
	assert.False(t, be.PreferEdges(feats), "streamed: the planes")
}

// TestHeavyRows: the rows a block of warps takes are exactly those longer
// than aggHeavyDeg, longest first by powers of two and in row order within
// one, and a graph with none uploads no list.
func TestHeavyRows(t *testing.T) {
	indptr := []int32{0}
	for _, d := range []int32{0, aggHeavyDeg, aggHeavyDeg + 1, 3 * aggHeavyDeg, 0, aggHeavyDeg + 5, 9 * aggHeavyDeg, 2*aggHeavyDeg + 1} {
		indptr = append(indptr, indptr[len(indptr)-1]+d)
	}
	assert.Equal(t, []int32{6, 3, 7, 2, 5}, heavyRows(indptr, 9*aggHeavyDeg))
	assert.Nil(t, heavyRows([]int32{0, aggHeavyDeg, 2 * aggHeavyDeg}, aggHeavyDeg))
}

// TestRegionRows: rows added by addRows land in pinned memory laid out
// dstW apart with zeros after them, narrower or wider than their source,
// between plain parts, whatever the spans' cut.
func TestRegionRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct{ srcW, dstW, rows int }{{16, 32, 1}, {16, 32, 40000}, {32, 16, 300}, {8, 8, 7}, {24, 4096, 100}} {
		src := make([]byte, tc.srcW*tc.rows)
		for i := range src {
			src[i] = byte(r.IntN(255) + 1)
		}
		head, tail := []byte{1, 2, 3}, []byte{4, 5}
		var reg region
		h := reg.add(head, len(head))
		o := reg.addRows(src, tc.srcW, tc.dstW, tc.rows)
		e := reg.add(tail, len(tail))
		want := make([]byte, reg.size)
		copy(want[h:], head)
		for i := range tc.rows {
			copy(want[o+i*tc.dstW:], src[i*tc.srcW:i*tc.srcW+min(tc.srcW, tc.dstW)])
		}
		copy(want[e:], tail)
		for _, spread := range []bool{false, true} {
			dst := make([]byte, reg.size)
			for i := range dst {
				dst[i] = 0xee
			}
			reg.fill(dst, spread)
			assert.Equal(t, want, dst, "%+v, spread %v", tc, spread)
		}
	}
}

// TestRegionFillRange: a region written piece by piece, cut anywhere
// (inside rows, parts and the gaps between them), equals the region laid
// out byte by byte, whatever was in the pieces' buffers before.
func TestRegionFillRange(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	fresh := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(1 + r.IntN(255))
		}
		return b
	}
	for trial := range 40 {
		var reg region
		for range 1 + r.IntN(5) {
			switch r.IntN(3) {
			case 0:
				d := fresh(r.IntN(3000))
				reg.add(d, len(d)+r.IntN(2)*r.IntN(300)) // a tail of zeros past the data
			case 1:
				srcW := 1 + r.IntN(40)
				rows := r.IntN(200)
				reg.addRows(fresh(srcW*rows), srcW, srcW+r.IntN(3)*r.IntN(24), rows)
			default:
				reg.add(nil, r.IntN(700))
			}
		}
		want := make([]byte, reg.size)
		for _, p := range reg.parts {
			if p.dstW == 0 {
				copy(want[p.off:], p.data)
				continue
			}
			for row := range len(p.data) / p.srcW {
				copy(want[p.off+row*p.dstW:p.off+(row+1)*p.dstW], p.data[row*p.srcW:(row+1)*p.srcW])
			}
		}
		got := make([]byte, 0, reg.size)
		for lo := 0; lo < reg.size; {
			hi := min(reg.size, lo+1+r.IntN(900))
			piece := fresh(hi - lo) // stale contents must not show
			reg.fillRange(piece, lo, hi, trial%2 == 0)
			got = append(got, piece...)
			lo = hi
		}
		require.Equal(t, want, got, "trial %d", trial)
		whole := fresh(reg.size)
		reg.fill(whole, false)
		require.Equal(t, want, whole, "trial %d, fill", trial)
	}
}
