package tcu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
)

// aggEmu compiles agg.cu and its driver for the CPU emulation of a warp
// (testdata/fp_emu.h, agg_emu.h) and returns the program, or skips.
func aggEmu(t *testing.T, defs ...string) string {
	t.Helper()
	clang := emuTool(t)
	dir := t.TempDir()
	src, hdrs := kernelSource("agg.cu")
	src = strings.Join(defs, "") + src
	for _, h := range hdrs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, h.name), []byte(h.src), 0o644))
	}
	mainSrc, err := os.ReadFile("testdata/agg_emu_main.inc")
	require.NoError(t, err)
	return emuBuild(t, clang, dir, "agg", src+string(mainSrc), "testdata/fp_emu.h", "testdata/agg_emu.h")
}

// aggLockstep, put before agg.cu, makes each of its shuffles first check
// that every lane of the warp is at the same one: the same line, after as
// many exchanges as its neighbour lane (a lane that left the warp's loop,
// or returned, shows as a stale or different key). The emulation pairs
// shuffles by count alone, so without it a shuffle that only some lanes
// reach (divergence, which a real warp does not survive) could pass.
const aggLockstep = `
static void emuLockstep(int line, unsigned m) {
  const long long key = (long long)line << 32 | (unsigned)emuCur->shuffles;
  const long long next = emuExchange(m, key, (int)((threadIdx.x + 1) & 31u), 32);
  if (next != key) {
    fprintf(stderr, "lane %u: a shuffle at line %d after %lld exchanges; the next lane's key is %#llx\n", threadIdx.x,
            line, key & 0xffffffffll, next);
    abort();
  }
}
#define __shfl_sync(m, v, src) (emuLockstep(__LINE__, m), __shfl_sync(m, v, src))
#define __shfl_xor_sync(m, v, o) (emuLockstep(__LINE__, m), __shfl_xor_sync(m, v, o))
#line 1 "agg.cu"
`

type aggEmuCase struct {
	cols, qbits int
	mode        int // outFloat, outCodes, outBits (agg.cu's AGG_*)
	byCols      bool
	weights     bool
	warps       int  // a block's warps: 8 (agg8) or 32 (agg32)
	lane        int  // columns a lane where rows allow: 8 (the kernel's) or 4 (AGG_V 4)
	xbits       int  // the codes summed: 4 or 8 bits
	packLimit   int  // unweighted: entries a lane adds between flushes (0: aggPackLimit's)
	sums        bool // the row sums of the output codes too
	argmax      int  // float, cols <= 32: 1 the argmax at argOff + row, 2 through an index
	nanCol      int  // with argmax: the column (1 + it) whose scale is NaN; 0 none
	light       bool // no heavy rows: a warp (or group) each, the longest too
	rowWarp     bool // a warp a light row however narrow (no groups of lanes)
	ties        bool // with argmax: every value 0, −0 or 1, so rows tie
}

func (c aggEmuCase) String() string {
	return fmt.Sprintf("cols=%d/mode=%d/bits=%d/bycols=%v/weights=%v/warps=%d/lane=%d/x=%d/pack=%d/sums=%v/argmax=%d/nan=%d/light=%v/rowwarp=%v/ties=%v",
		c.cols, c.mode, c.qbits, c.byCols, c.weights, c.warps, c.lane, c.xbits, c.packLimit, c.sums, c.argmax, c.nanCol, c.light, c.rowWarp, c.ties)
}

// TestAggKernelEmulated runs agg.cu's aggregation on the CPU (lanes as
// coroutines meeting at every shuffle, vote and barrier) over rows of 0 to
// 200 entries and one of 600: light rows a warp each over one or more 32-entry tiles,
// rows past aggHeavyDeg a block of 8 or 32 warps each, summed across warps
// in shared memory. Widths cover 4 and 8 columns a lane, narrow, odd
// (rows not aligned) and multi-chunk outputs, 4- and 8-bit codes (the
// unweighted 16-bit pair sums flushed often with a small pack limit),
// with and without edge weights, into each output mode, with the fused
// row sums and argmax, against the sums, bmm's epilogue and
// re-quantization, the code sums and layers' argmax computed here: exact,
// bit for bit. The GPU's conformance tests remain the word on the real
// device; this one checks the kernel's indexing without one.
func TestAggKernelEmulated(t *testing.T) {
	progs := map[int]string{8: aggEmu(t, aggLockstep), 4: aggEmu(t, "#define AGG_V 4\n", aggLockstep)}
	r := rand.New(rand.NewPCG(7, 11))
	// longest: row 40's entries, past what a lane's 16-bit pair sums hold
	// of 8-bit codes.
	const rows, nsrc, longest = 70, 90, 600
	indptr := make([]int32, rows+1)
	var indices []int32
	for v := range rows {
		var d int
		switch x := r.IntN(10); {
		case x < 2:
			d = 0
		case x < 7:
			d = 1 + r.IntN(20)
		default:
			d = 30 + r.IntN(170)
		}
		if v == 40 {
			d = longest
		}
		for range d {
			indices = append(indices, int32(r.IntN(nsrc)))
		}
		indptr[v+1] = int32(len(indices))
	}
	heavy := heavyRows(indptr, longest)
	require.NotEmpty(t, heavy)
	wts := make([]uint8, len(indices))
	for i := range wts {
		wts[i] = uint8(1 + r.IntN(3))
	}
	var cases []aggEmuCase
	for _, cols := range []int{1, 3, 10, 16, 24, 28, 64, 130, 528} {
		cases = append(cases,
			aggEmuCase{cols: cols, mode: outFloat, weights: cols%2 == 1, warps: 8},
			aggEmuCase{cols: cols, mode: outCodes, qbits: 4, weights: cols == 16, warps: 8, sums: true},
			aggEmuCase{cols: cols, mode: outBits, qbits: 3, warps: 8, sums: cols != 3},
			aggEmuCase{cols: cols, mode: outBits, qbits: 2, byCols: true, weights: true, warps: 8},
			aggEmuCase{cols: cols, mode: outCodes, qbits: 8, warps: 8, xbits: 8, packLimit: 40, sums: true})
		if cols <= 32 {
			cases = append(cases,
				aggEmuCase{cols: cols, mode: outFloat, warps: 8, argmax: 1},
				aggEmuCase{cols: cols, mode: outFloat, weights: true, warps: 8, argmax: 2, xbits: 8})
		}
	}
	cases = append(cases, aggEmuCase{cols: 64, mode: outCodes, qbits: 4, weights: true, warps: 32, sums: true},
		aggEmuCase{cols: 130, mode: outFloat, warps: 32},
		aggEmuCase{cols: 64, mode: outBits, qbits: 4, warps: 32, xbits: 8, packLimit: 33, sums: true},
		aggEmuCase{cols: 10, mode: outFloat, warps: 32, argmax: 2},
		aggEmuCase{cols: 10, mode: outFloat, warps: 8, argmax: 1, nanCol: 1},
		aggEmuCase{cols: 10, mode: outFloat, warps: 8, argmax: 2, nanCol: 4},
		aggEmuCase{cols: 10, mode: outFloat, warps: 8, argmax: 1, ties: true},
		aggEmuCase{cols: 10, mode: outFloat, warps: 8, argmax: 2, ties: true, rowWarp: true},
		aggEmuCase{cols: 3, mode: outFloat, warps: 32, argmax: 1, ties: true},
		aggEmuCase{cols: 528, mode: outCodes, qbits: 8, warps: 8, xbits: 8, sums: true, light: true},
		aggEmuCase{cols: 64, mode: outCodes, qbits: 8, warps: 8, xbits: 8, sums: true, light: true},
		aggEmuCase{cols: 3, mode: outFloat, warps: 8, xbits: 8, light: true},
		aggEmuCase{cols: 10, mode: outFloat, warps: 8, argmax: 2, rowWarp: true},
		aggEmuCase{cols: 64, mode: outBits, qbits: 3, warps: 8, sums: true, rowWarp: true},
		aggEmuCase{cols: 16, mode: outCodes, qbits: 4, weights: true, warps: 8, sums: true, rowWarp: true},
		aggEmuCase{cols: 40, mode: outBits, qbits: 4, warps: 8, sums: true},
		aggEmuCase{cols: 40, mode: outBits, qbits: 2, byCols: true, warps: 8},
		aggEmuCase{cols: 64, mode: outBits, qbits: 13, warps: 8, sums: true},
		aggEmuCase{cols: 10, mode: outBits, qbits: 20, warps: 8, xbits: 8})
	for i := range cases {
		c := cases[i]
		c.lane = 4
		cases[i].lane = 8
		cases = append(cases, c)
	}
	for _, c := range cases {
		prog := progs[c.lane]
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(c.cols), uint64(c.mode)))
			xbits := max(c.xbits, 4)
			// The codes, then the slack every code buffer ends with, full
			// of codes no row holds (a read past a row would show).
			x := make([]uint8, nsrc*c.cols+codesSlack)
			for i := range x {
				x[i] = uint8(r.IntN(1 << xbits))
			}
			vec := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(r.NormFloat64())
				}
				return v
			}
			ep := &bmm.Epilogue{ColScale: vec(c.cols), RowTerm: vec(rows), ColTerm: vec(c.cols), ColConst: vec(c.cols),
				RowScale: vec(rows), ColBias: vec(c.cols), ReLU: c.mode != outFloat}
			if c.nanCol > 0 {
				ep.ColScale[c.nanCol-1] = float32(math.NaN())
			}
			if c.ties {
				// Every value is the bias (0 or 1), or 0 signed by the row scale.
				for i := range ep.ColScale {
					ep.ColScale[i], ep.ColTerm[i], ep.ColConst[i], ep.ColBias[i] = 0, 0, 0, float32(r.IntN(2))
				}
			}
			rq := bmm.Requant{Scale: 0.7, Offset: 2}
			switch {
			case c.qbits > 8:
				rq.Scale = 300 // codes past a byte
			case c.xbits == 8:
				rq.Scale = 0.05
			}
			var w []byte
			if c.weights {
				w = wts
			}
			// Reference: the sums, then the epilogue (and re-quantization).
			ref := make([]float32, rows*c.cols)
			for v := range rows {
				for col := range c.cols {
					var s int32
					for p := indptr[v]; p < indptr[v+1]; p++ {
						wt := int32(1)
						if w != nil {
							wt = int32(w[p])
						}
						s += wt * int32(x[int(indices[p])*c.cols+col])
					}
					ref[v*c.cols+col] = ep.Apply(s, v, col)
				}
			}
			lw32, plane32 := 0, 0
			var out []byte
			switch c.mode {
			case outFloat:
				out = make([]byte, 4*rows*c.cols)
			case outCodes:
				// The slack every code buffer ends with, which no store
				// may reach (a lane past its row's end would).
				out = make([]byte, rows*c.cols+codesSlack)
			default:
				// Packed by rows, lines and words padded as the device's
				// layout pads them; the kernel writes every word of them.
				lines := roundUp(rows, 16)
				lw32 = roundUp(c.cols, 256) / 32
				if c.byCols {
					lines, lw32 = c.cols, (rows+31)/32
				}
				plane32 = lines * lw32
				out = make([]byte, 4*plane32*c.qbits)
			}
			if c.mode != outBits || !c.byCols {
				for i := range out {
					out[i] = 0xFF
				}
			}
			// The argmax goes to argOff + row, or to a permutation of
			// the rows after argOff; the other values stay −1.
			const argOff = 5
			var argIdx []int32
			var argOut []byte
			if c.argmax > 0 {
				argOut = asBytes(slices.Repeat([]int32{-1}, rows+argOff))
			}
			if c.argmax == 2 {
				argIdx = make([]int32, rows)
				for i, p := range r.Perm(rows) {
					argIdx[i] = int32(argOff + p)
				}
			}
			var sums []byte
			if c.sums {
				sums = asBytes(slices.Repeat([]float32{float32(math.NaN())}, rows))
			}
			hv := heavy
			if c.light {
				hv = nil
			}
			limit := c.packLimit
			if limit == 0 {
				limit = aggPackLimit(xbits)
			}
			width := 4
			if c.lane == 8 {
				width = aggLaneWidth(c.cols)
			}
			lightMax := int64(aggHeavyDeg)
			if c.light {
				lightMax = longest // every row on the light path
			}
			lg, split := aggLanes(c.cols, width, xbits, lightMax, c.weights)
			if c.rowWarp {
				lg, split = 5, false
			}
			f := func(v []float32) []byte { return asBytes(v) }
			got := runEmu(t, prog, "agg", []int64{0, rows, int64(c.cols), int64(c.mode), b2i64(ep.ReLU),
				int64(math.Float32bits(rq.Scale)), int64(math.Float32bits(rq.Offset)), int64(c.qbits), b2i64(c.byCols),
				int64(lw32), int64(plane32), int64(c.warps), aggHeavyDeg, int64(limit), argOff, int64(lg), b2i64(split)},
				asBytes(indptr), asBytes(indices), w, x, asBytes(hv),
				f(ep.ColScale), f(ep.RowTerm), f(ep.ColTerm), f(ep.ColConst), f(ep.RowScale), f(ep.ColBias), out,
				asBytes(argIdx), argOut, sums)
			require.Len(t, got, len(out)+len(argOut)+len(sums))
			gotArg, gotSums := got[len(out):len(out)+len(argOut)], got[len(out)+len(argOut):]
			for v := range rows {
				var rs int64
				for col := range c.cols {
					want := ref[v*c.cols+col]
					i := v*c.cols + col
					switch c.mode {
					case outFloat:
						g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
						if want != want {
							require.True(t, g != g, "row %d column %d: %v, want NaN", v, col, g)
							continue
						}
						require.Equal(t, math.Float32bits(want), math.Float32bits(g), "row %d column %d: %v, want %v", v, col, g, want)
					case outCodes:
						q := rq.Quantize(want, c.qbits)
						rs += int64(q)
						require.Equal(t, uint8(q), got[i], "row %d column %d", v, col)
					default:
						q := rq.Quantize(want, c.qbits)
						rs += int64(q)
						line, pos := v, col
						if c.byCols {
							line, pos = col, v
						}
						for p := range c.qbits {
							word := binary.LittleEndian.Uint32(got[4*(p*plane32+line*lw32+pos/32):])
							require.Equal(t, q>>p&1, word>>(pos%32)&1, "row %d column %d plane %d", v, col, p)
						}
					}
				}
				if c.sums {
					g := math.Float32frombits(binary.LittleEndian.Uint32(gotSums[4*v:]))
					require.Equal(t, float32(rs), g, "row %d's code sum", v)
				}
				if c.argmax > 0 {
					at := argOff + v
					if argIdx != nil {
						at = int(argIdx[v])
					}
					g := int32(binary.LittleEndian.Uint32(gotArg[4*at:]))
					require.Equal(t, bmm.ArgmaxRow(ref[v*c.cols:(v+1)*c.cols]), g, "row %d's argmax", v)
				}
			}
			if c.mode == outCodes {
				for i, b := range got[rows*c.cols : len(out)] {
					require.Equal(t, uint8(0xFF), b, "slack byte %d past the codes", i)
				}
			}
			if c.mode == outBits && !c.byCols {
				for p := range c.qbits {
					for line := range plane32 / lw32 {
						for wd := range lw32 {
							if line < rows && wd < (c.cols+31)/32 {
								continue
							}
							word := binary.LittleEndian.Uint32(got[4*(p*plane32+line*lw32+wd):])
							require.Zero(t, word, "plane %d, line %d, padding word %d", p, line, wd)
						}
					}
				}
			}
			if c.argmax > 0 {
				for i := range argOff {
					require.Equal(t, int32(-1), int32(binary.LittleEndian.Uint32(gotArg[4*i:])), "argmax value %d, before argOff", i)
				}
			}
		})
	}
}

// TestRowSumsKernelEmulated runs agg.cu's rowsums on the CPU (rows of 1 to
// 40 words: one lane a row up to a whole warp a row) against the code sums
// Σ_p 2^p popcount computed here.
func TestRowSumsKernelEmulated(t *testing.T) {
	prog := aggEmu(t)
	r := rand.New(rand.NewPCG(3, 5))
	const rows = 77
	for _, lw := range []int{1, 3, 4, 9, 40} {
		for _, nbits := range []int{1, 4} {
			t.Run(fmt.Sprintf("lw=%d/bits=%d", lw, nbits), func(t *testing.T) {
				t.Parallel()
				planeWords := rows*lw + 5 // planes need not abut
				a := make([]uint64, planeWords*nbits)
				for i := range a {
					a[i] = r.Uint64()
				}
				g := rowsumsLanes(lw)
				blocks := (rows + 8*(32/g) - 1) / (8 * (32 / g))
				out := make([]float32, rows)
				for i := range out {
					out[i] = float32(math.NaN())
				}
				got := runEmu(t, prog, "rowsums", []int64{1, rows, int64(nbits), int64(lw), int64(planeWords), int64(blocks)},
					asBytes(a), asBytes(out))
				for v := range rows {
					var s int64
					for p := range nbits {
						for i := range lw {
							s += int64(bits.OnesCount64(a[p*planeWords+v*lw+i])) << p
						}
					}
					g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*v:]))
					require.Equal(t, float32(s), g, "row %d", v)
				}
			})
		}
	}
}

func b2i64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
