package tcu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	mbits "math/bits"
	"runtime"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/internal/par"
)

// The kernels read a line's K bits in 256-bit steps of 16-byte copies, so
// on the device a line is a whole number of steps: LineWords rounded up to
// 4. Tensors with the default padding already are and go up unchanged;
// others are re-laid out on the host (lines keep their order, extra words
// are zero).
const stepWords = 4 // 64-bit words per 256-bit k-step

// operandLayout is how a tensor sits in device memory.
type operandLayout struct {
	lines int // stored lines (PaddedLines)
	lw    int // 64-bit words per line, a multiple of stepWords
}

func layoutOf(t *bittensor.Tensor) operandLayout {
	return operandLayout{lines: t.PaddedLines(), lw: roundUp(t.LineWords(), stepWords)}
}

func (l operandLayout) planeWords() int { return l.lines * l.lw }

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// deviceWords returns t's words in the device layout: t.Words() itself
// when it already fits, else a re-laid-out copy.
func deviceWords(t *bittensor.Tensor) []uint64 {
	l := layoutOf(t)
	if l.lw == t.LineWords() {
		return t.Words()
	}
	out := make([]uint64, t.Bits()*l.planeWords())
	for p := 0; p < t.Bits(); p++ {
		for line := 0; line < l.lines; line++ {
			copy(out[p*l.planeWords()+line*l.lw:], t.Line(p, line))
		}
	}
	return out
}

// tiledWords returns t's words in the wgmma kernel's tiled layout: lines
// in tiles of tile lines (the block tile), and for each tile its k-steps,
// and for each k-step its planes, each plane's tile one block of tile·32
// bytes in which every group of 8 lines holds two 128-byte core matrices
// (k-halves 0 and 1, 16 bytes per line), exactly as the kernel's shared
// memory operand (bmm_wgmma.cu's header: line l's k-half h at byte
// (l/8)·256 + h·128 + (l%8)·16). So consecutive k-steps of a
// tile, every plane, are one contiguous block the kernel fetches with a
// single bulk copy. Lines are padded with zeros to a multiple of padLines
// (a multiple of tile), and k-steps with zero steps to a multiple of ks
// past the last one (at least one: the kernel fetches it for the unused
// sub-steps of a part-filled stage). It returns the words, the padded line
// count, the number of real k-steps and the 64-bit words of one tile.
func tiledWords(t *bittensor.Tensor, tile, padLines, ks int) (words []uint64, lines, steps, tileWords int) {
	l := layoutOf(t)
	lines = roundUp(max(t.Lines(), 1), padLines)
	steps = l.lw / stepWords
	stepsP := roundUp(steps+1, ks)
	blockWords := tile * stepWords // one plane's tile at one k-step
	tileWords = stepsP * t.Bits() * blockWords
	words = make([]uint64, lines/tile*tileWords)
	for p := 0; p < t.Bits(); p++ {
		for line := 0; line < t.Lines(); line++ {
			src := t.Line(p, line)
			lt := line % tile
			// Line lt's 16-byte pieces: group g, row r, half h at
			// g·32 + h·16 + r·2 words into its block.
			off := (line/tile)*tileWords + p*blockWords + (lt>>3)*32 + (lt&7)*2
			stride := t.Bits() * blockWords // from one k-step to the next
			full := len(src) / stepWords
			for s := 0; s < full; s++ {
				w := src[s*stepWords : s*stepWords+stepWords]
				d := words[off+s*stride:]
				d[0], d[1], d[16], d[17] = w[0], w[1], w[2], w[3]
			}
			for i, w := range src[full*stepWords:] { // a part-filled last step
				words[off+full*stride+[4]int{0, 1, 16, 17}[i]] = w
			}
		}
	}
	return words, lines, steps, tileWords
}

// maskGroup is the row granularity of an operand's tile mask: the b1 mma
// tile is maskGroup rows by one 256-bit k-step.
const maskGroup = 16

// newTileMask records which 256-bit k-steps of each group of 16 rows of an
// A operand (its device words) hold a one in any plane. It is computed
// once per operand; row tiles of any multiple of 16 rows derive their
// zero-tile lists from it (tileList). With spread, large operands are
// scanned on several cores.
func newTileMask(words []uint64, srcLW, bits int, l operandLayout, spread bool) bittensor.TileMask {
	steps := l.lw / stepWords
	m := bittensor.NewTileMask(l.lines, steps*stepWords*64, maskGroup, stepWords*64)
	pw := l.lines * srcLW
	// Tile (group, s) is bit s of its group's row of tiles: set directly,
	// at the first line of the group with a one there (the rest are not
	// read). Each group's first lines are a cache miss (the words were
	// written long before, by another core), hence the cores, maskChunk
	// groups at a time.
	groups := (l.lines + maskGroup - 1) / maskGroup
	chunks := (groups + maskChunk - 1) / maskChunk
	workers := 1
	if spread {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	par.For(chunks, workers, func(c int) {
		for g := c * maskChunk; g < min(groups, (c+1)*maskChunk); g++ {
			tiles := m.Bits[g*m.Stride:][:m.Stride]
			end := min(l.lines, (g+1)*maskGroup)
			for s := 0; s < steps; s++ {
				lo, hi := min(s*stepWords, srcLW), min((s+1)*stepWords, srcLW)
				for line := g * maskGroup; line < end; line++ {
					var v uint64
					for p := 0; p < bits; p++ {
						for _, x := range words[p*pw+line*srcLW+lo : p*pw+line*srcLW+hi] {
							v |= x
						}
					}
					if v != 0 {
						tiles[s/64] |= uint64(1) << (s % 64)
						break
					}
				}
			}
		}
	})
	return m
}

// maskChunk is newTileMask's unit of parallel work, in groups of 16 lines.
const maskChunk = 256

// tileList returns, for row tiles of bm rows (a multiple of 16), the CSR
// list of their non-zero k-steps: tile t visits kidx[kptr[t]:kptr[t+1]].
func tileList(m bittensor.TileMask, bm int) (kptr, kidx []int32) {
	c := m.Coarsen(bm / maskGroup)
	kptr = make([]int32, c.RowTiles+1)
	for t := 0; t < c.RowTiles; t++ {
		for i, w := range c.Row(t) {
			for ; w != 0; w &= w - 1 {
				kidx = append(kidx, int32(64*i+mbits.TrailingZeros64(w)))
			}
		}
		kptr[t+1] = int32(len(kidx))
	}
	return kptr, kidx
}

// Output modes of a product (Prob.mode).
const (
	modeInt   = 0
	modeFloat = 1
	modeBit   = 2
	modeCodes = 3 // byte codes, row-major: MulCodes without a float pass between
)

// prob is one product of a launch; its binary form is kernels/common.cuh's
// struct Prob (little-endian, no padding: 168 bytes).
type prob struct {
	A, B, Out, Kptr, Kidx                                   uint64
	ColScale, RowTerm, ColTerm, ColConst, RowScale, ColBias uint64
	APlane, BPlane, OutPlane                                int64
	M, N, Lw32, ALines, BLines, TilesN, TileStart, Mode     int32
	OutBits, OutByCols, OutLw32, ReLU                       int32
	RqScale, RqOffset                                       float32
}

const probBytes = 168

// packLaunch assigns each problem a block per bm×bn tile, in order, and
// returns the encoded descriptors (followed, for several problems, by the
// block → problem map) and the number of blocks. Problems with no tiles
// (M or N zero) take no blocks.
func packLaunch(ps []prob, bm, bn int) ([]byte, int, error) {
	total := 0
	for i := range ps {
		p := &ps[i]
		if p.M < 0 || p.N < 0 {
			return nil, 0, fmt.Errorf("%w: problem %d is %d×%d", ErrShape, i, p.M, p.N)
		}
		tilesM := (int(p.M) + bm - 1) / bm
		p.TilesN = int32((int(p.N) + bn - 1) / bn)
		p.TileStart = int32(total)
		total += tilesM * int(p.TilesN)
		if total > 1<<31-1 {
			return nil, 0, fmt.Errorf("%w: %d blocks in one launch", ErrShape, total)
		}
	}
	var buf bytes.Buffer
	buf.Grow(len(ps)*probBytes + 4*total)
	if err := binary.Write(&buf, binary.LittleEndian, ps); err != nil {
		return nil, 0, err
	}
	if len(ps) > 1 {
		// The block → problem map (int32 per block) follows the
		// descriptors: one load in the kernel instead of a binary search
		// of dependent loads.
		m := make([]int32, total)
		for i := range ps {
			end := total
			if i+1 < len(ps) {
				end = int(ps[i+1].TileStart)
			}
			for b := int(ps[i].TileStart); b < end; b++ {
				m[b] = int32(i)
			}
		}
		if err := binary.Write(&buf, binary.LittleEndian, m); err != nil {
			return nil, 0, err
		}
	}
	return buf.Bytes(), total, nil
}

// probParams is the encoded descriptor of a one-product launch (desc from
// packLaunch) as the words of the kernels' by-value parameter p1:
// Device.launch lays the parameter words out back to back and points the
// driver at the first word of each, so the words from the third parameter
// on are p1's bytes (the driver reads as many parameters as the kernel has).
func probParams(desc []byte) (w [probBytes / 8]uint64) {
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(desc[8*i:])
	}
	return w
}
