package bittensor

import (
	"fmt"
	"math/bits"
)

// TileMask marks which tiles of a 1-bit (or any-bit) matrix hold a non-zero
// entry, so kernels and cost models skip or count the zero tiles of a
// block-diagonal batch adjacency. A tile is Rows×Cols entries: the GPU's
// b1 mma tile is 16×256 (DefaultPadding: subgraph's batches and tcu's
// zero-tile lists), the CPU bit kernels mark 1×256 chunks of a row and
// layers' cost model counts 64×256 blocks (Coarsen). Whoever builds the
// operand marks it once: from its edge list (Set) or its words.
//
// Each row of tiles takes Stride words, bit ct%64 of Bits[rt*Stride+ct/64]
// standing for tile (rt, ct): a row of tiles is a bit set on its own, which
// is how the CPU kernels compare and walk it.
type TileMask struct {
	Rows, Cols         int // tile extent in entries
	RowTiles, ColTiles int // tiles down and across
	Stride             int // words per row of tiles: ⌈ColTiles/64⌉
	Bits               []uint64
}

// NewTileMask returns the all-zero mask of an nrows×ncols matrix in tiles
// of rows×cols entries. It panics when a tile extent is not positive (a
// programmer error: tile sizes are constants of the caller).
func NewTileMask(nrows, ncols, rows, cols int) TileMask {
	if rows < 1 || cols < 1 || nrows < 0 || ncols < 0 {
		panic(fmt.Sprintf("bittensor: tile mask of %d×%d tiles over %d×%d", rows, cols, nrows, ncols))
	}
	m := TileMask{Rows: rows, Cols: cols, RowTiles: (nrows + rows - 1) / rows, ColTiles: (ncols + cols - 1) / cols}
	m.Stride = (m.ColTiles + 63) / 64
	m.Bits = make([]uint64, m.RowTiles*m.Stride)
	return m
}

// Set marks the tile holding entry (r, c).
func (m *TileMask) Set(r, c int) {
	ct := c / m.Cols
	m.Bits[(r/m.Rows)*m.Stride+ct/64] |= 1 << (ct % 64)
}

// NonZero reports whether tile (rt, ct) holds a non-zero entry.
func (m *TileMask) NonZero(rt, ct int) bool {
	return m.Bits[rt*m.Stride+ct/64]>>(ct%64)&1 != 0
}

// Row is the bit set of row of tiles rt (a view).
func (m *TileMask) Row(rt int) []uint64 { return m.Bits[rt*m.Stride : (rt+1)*m.Stride] }

// Count is the number of non-zero tiles.
func (m *TileMask) Count() int {
	c := 0
	for _, w := range m.Bits {
		c += bits.OnesCount64(w)
	}
	return c
}

// Coarsen returns the mask of tiles f times taller: tile (rt, ct) of the
// result is non-zero when any of tiles (f·rt .. f·rt+f-1, ct) is. It
// panics when f < 1.
func (m *TileMask) Coarsen(f int) TileMask {
	if f < 1 {
		panic(fmt.Sprintf("bittensor: coarsen a tile mask by %d", f))
	}
	c := TileMask{Rows: m.Rows * f, Cols: m.Cols, RowTiles: (m.RowTiles + f - 1) / f, ColTiles: m.ColTiles, Stride: m.Stride}
	c.Bits = make([]uint64, c.RowTiles*c.Stride)
	for rt := 0; rt < m.RowTiles; rt++ {
		dst := c.Bits[(rt/f)*c.Stride:]
		for i, w := range m.Row(rt) {
			dst[i] |= w
		}
	}
	return c
}
