package subgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
)

// ErrPacked reports a malformed packed batch buffer.
var ErrPacked = errors.New("subgraph: bad packed batch")

// Packed batch buffer, version 1. Everything is little-endian and every
// section starts at a multiple of PackAlign bytes from the buffer start
// (which is itself PackAlign-aligned when Pack allocates it):
//
//	off  size  field
//	0    4     magic "QGPB"
//	4    2     version (1)
//	6    2     flags: 1 = 32-bit column indices (else 16-bit), 2 = self-loops
//	8    4     nodes n
//	12   4     edges e (CSR entries, diagonal not stored)
//	16   4     feature columns F (0 = no features)
//	20   4     feature bits b
//	24   4     padding lines (tile rows)
//	28   4     padding bits (tile columns)
//	32   8     offset of indptr: n+1 uint32
//	40   8     offset of indices: e int16 or int32, rows sorted
//	48   8     offset of feature planes: b planes of roundUp(n, lines) rows
//	           × roundUp(F, bits)/64 words, the bittensor ByRows layout
//	56   8     total size
//
// Unpacking the adjacency is one pass over the indices setting one bit
// each, which a GPU thread block does the same way on the device.
const (
	PackVersion = 1
	PackAlign   = 64
	packHeader  = 64

	packFlagIdx32     = 1
	packFlagSelfLoops = 2
)

var packMagic = [4]byte{'Q', 'G', 'P', 'B'}

// Packed is a validated view of a packed batch buffer.
type Packed struct {
	Nodes, Edges       int
	SelfLoops          bool
	Index32            bool // column indices are 32-bit
	FeatCols, FeatBits int
	Padding            bittensor.Padding
	buf                []byte
	indptrOff          int
	indicesOff         int
	featOff            int
}

// Padding limits of packed buffers: a header's tile must not make a few
// nodes unpack into a huge tensor. Real tiles are 16×256 (mma) or so.
const (
	MaxPackLines = 256
	MaxPackBits  = 4096
	// MaxPackNodes bounds a batch: its dense 1-bit adjacency is then at
	// most 512 MiB.
	MaxPackNodes = 1 << 16
)

func checkPackPadding(pad bittensor.Padding) error {
	if _, err := bittensor.New(0, 0, 1, bittensor.ByRows, pad); err != nil {
		return fmt.Errorf("%w: %w", ErrPacked, err)
	}
	if pad.Lines > MaxPackLines || pad.Bits > MaxPackBits {
		return fmt.Errorf("%w: padding %d lines × %d bits exceeds %d × %d", ErrPacked, pad.Lines, pad.Bits, MaxPackLines, MaxPackBits)
	}
	return nil
}

// Size is the buffer's length in bytes.
func (p *Packed) Size() int { return len(p.buf) }

// Bytes is the buffer itself.
func (p *Packed) Bytes() []byte { return p.buf }

func alignUp(x int) int { return (x + PackAlign - 1) / PackAlign * PackAlign }

// alignedBytes returns n zero bytes starting at a PackAlign-aligned address.
func alignedBytes(n int) []byte {
	raw := make([]byte, n+PackAlign)
	skip := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (PackAlign - 1))
	return raw[skip : skip+n : skip+n]
}

// featWords is the word count of b planes of an n×f ByRows tensor.
func featWords(n, f, b int, pad bittensor.Padding) int {
	if f == 0 || n == 0 {
		return 0
	}
	lines := (n + pad.Lines - 1) / pad.Lines * pad.Lines
	lw := (f + pad.Bits - 1) / pad.Bits * pad.Bits / 64
	return b * lines * lw
}

// Pack lays batch b and its rows of feat (the whole graph's N×F feature
// tensor packed ByRows, or nil) out in one aligned buffer. The feature
// planes keep feat's bit width and padding; the adjacency padding is b's.
func (b *Batch) Pack(feat *bittensor.Tensor) ([]byte, error) {
	return b.pack(feat, len(b.Nodes) > 1<<15)
}

// pack is Pack with the index width chosen by the caller (tests use 32-bit
// indices on small batches).
func (b *Batch) pack(feat *bittensor.Tensor, idx32 bool) ([]byte, error) {
	n, e := len(b.Nodes), len(b.Indices)
	pad := b.pad
	if b.Adj != nil {
		pad = b.Adj.Padding()
	}
	if err := checkPackPadding(pad); err != nil {
		return nil, err
	}
	if n > MaxPackNodes {
		return nil, fmt.Errorf("%w: batch of %d nodes exceeds %d", ErrPacked, n, MaxPackNodes)
	}
	fcols, fbits := 0, 0
	if feat != nil {
		if feat.Packing() != bittensor.ByRows {
			return nil, fmt.Errorf("%w: features packed %v, want rows", ErrPacked, feat.Packing())
		}
		if feat.Padding() != pad {
			return nil, fmt.Errorf("%w: feature padding %+v differs from the adjacency's %+v", ErrPacked, feat.Padding(), pad)
		}
		for _, v := range b.Nodes {
			if int(v) >= feat.Rows() {
				return nil, fmt.Errorf("%w: node %d but features have %d rows", ErrPacked, v, feat.Rows())
			}
		}
		fcols, fbits = feat.Cols(), feat.Bits()
	}
	isz := 2
	if idx32 {
		isz = 4
	}
	indptrOff := packHeader
	indicesOff := alignUp(indptrOff + 4*(n+1))
	featOff := alignUp(indicesOff + isz*e)
	total := alignUp(featOff + 8*featWords(n, fcols, fbits, pad))
	buf := alignedBytes(total)
	copy(buf, packMagic[:])
	le := binary.LittleEndian
	le.PutUint16(buf[4:], PackVersion)
	flags := uint16(0)
	if idx32 {
		flags |= packFlagIdx32
	}
	if b.SelfLoops {
		flags |= packFlagSelfLoops
	}
	le.PutUint16(buf[6:], flags)
	le.PutUint32(buf[8:], uint32(n))
	le.PutUint32(buf[12:], uint32(e))
	le.PutUint32(buf[16:], uint32(fcols))
	le.PutUint32(buf[20:], uint32(fbits))
	le.PutUint32(buf[24:], uint32(pad.Lines))
	le.PutUint32(buf[28:], uint32(pad.Bits))
	le.PutUint64(buf[32:], uint64(indptrOff))
	le.PutUint64(buf[40:], uint64(indicesOff))
	le.PutUint64(buf[48:], uint64(featOff))
	le.PutUint64(buf[56:], uint64(total))
	for i, x := range b.Indptr {
		le.PutUint32(buf[indptrOff+4*i:], uint32(x))
	}
	if idx32 {
		for i, c := range b.Indices {
			le.PutUint32(buf[indicesOff+4*i:], uint32(c))
		}
	} else {
		for i, c := range b.Indices {
			le.PutUint16(buf[indicesOff+2*i:], uint16(c))
		}
	}
	if fcols > 0 && n > 0 {
		lw := feat.LineWords()
		lines := (n + pad.Lines - 1) / pad.Lines * pad.Lines
		for p := 0; p < fbits; p++ {
			base := featOff + 8*p*lines*lw
			for i, v := range b.Nodes {
				dst := buf[base+8*i*lw:]
				for w, x := range feat.Line(p, int(v)) {
					le.PutUint64(dst[8*w:], x)
				}
			}
		}
	}
	return buf, nil
}

// ReadPacked validates a packed batch buffer (header, section bounds and
// order, monotone indptr, sorted in-range indices) and returns a view of
// it; the buffer is not copied.
func ReadPacked(buf []byte) (*Packed, error) { return readPacked(buf, true) }

// readPacked is ReadPacked, checking the indices themselves only when
// indices is set (PackedFile does on a batch's first use, with its
// checksum; Adjacency checks what it indexes by).
func readPacked(buf []byte, indices bool) (*Packed, error) {
	if len(buf) < packHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrPacked, len(buf), packHeader)
	}
	if [4]byte(buf[:4]) != packMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrPacked, buf[:4], packMagic[:])
	}
	le := binary.LittleEndian
	if v := le.Uint16(buf[4:]); v != PackVersion {
		return nil, fmt.Errorf("%w: version %d, this reader knows %d", ErrPacked, v, PackVersion)
	}
	flags := le.Uint16(buf[6:])
	if flags&^(packFlagIdx32|packFlagSelfLoops) != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrPacked, flags)
	}
	p := &Packed{
		Nodes:     int(le.Uint32(buf[8:])),
		Edges:     int(le.Uint32(buf[12:])),
		FeatCols:  int(le.Uint32(buf[16:])),
		FeatBits:  int(le.Uint32(buf[20:])),
		Padding:   bittensor.Padding{Lines: int(le.Uint32(buf[24:])), Bits: int(le.Uint32(buf[28:]))},
		Index32:   flags&packFlagIdx32 != 0,
		SelfLoops: flags&packFlagSelfLoops != 0,
		buf:       buf,
	}
	offs := [4]uint64{le.Uint64(buf[32:]), le.Uint64(buf[40:]), le.Uint64(buf[48:]), le.Uint64(buf[56:])}
	if offs[3] != uint64(len(buf)) {
		return nil, fmt.Errorf("%w: header says %d bytes, buffer has %d", ErrPacked, offs[3], len(buf))
	}
	if p.Nodes > MaxPackNodes || p.Edges > 1<<31-1 || p.FeatCols > 1<<24 || p.FeatBits > bittensor.MaxBits {
		return nil, fmt.Errorf("%w: counts nodes=%d edges=%d features=%d×%d bits out of range", ErrPacked, p.Nodes, p.Edges, p.FeatCols, p.FeatBits)
	}
	if (p.FeatCols == 0) != (p.FeatBits == 0) {
		return nil, fmt.Errorf("%w: %d feature columns with %d bits", ErrPacked, p.FeatCols, p.FeatBits)
	}
	if err := checkPackPadding(p.Padding); err != nil {
		return nil, err
	}
	if !p.Index32 && p.Nodes > 1<<15 {
		return nil, fmt.Errorf("%w: %d nodes need 32-bit indices", ErrPacked, p.Nodes)
	}
	isz := 2
	if p.Index32 {
		isz = 4
	}
	fw := featWords(p.Nodes, p.FeatCols, p.FeatBits, p.Padding)
	need := [3]uint64{uint64(4 * (p.Nodes + 1)), uint64(isz) * uint64(p.Edges), 8 * uint64(fw)}
	prev := uint64(packHeader)
	for i, name := range [3]string{"indptr", "indices", "features"} {
		if offs[i]%PackAlign != 0 || offs[i] < prev || offs[i] > offs[3] || need[i] > offs[3]-offs[i] {
			return nil, fmt.Errorf("%w: %s section at %d (%d bytes) does not fit after %d in %d bytes", ErrPacked, name, offs[i], need[i], prev, offs[3])
		}
		prev = offs[i] + need[i]
	}
	p.indptrOff, p.indicesOff, p.featOff = int(offs[0]), int(offs[1]), int(offs[2])
	prevPtr := uint32(0)
	for r := 0; r <= p.Nodes; r++ {
		x := le.Uint32(buf[p.indptrOff+4*r:])
		if (r == 0 && x != 0) || x < prevPtr || int64(x) > int64(p.Edges) || (r == p.Nodes && int(x) != p.Edges) {
			return nil, fmt.Errorf("%w: indptr[%d]=%d (previous %d, %d edges)", ErrPacked, r, x, prevPtr, p.Edges)
		}
		prevPtr = x
	}
	if !indices {
		return p, nil
	}
	if err := p.checkIndices(); err != nil {
		return nil, err
	}
	return p, nil
}

// checkIndices checks that each row's indices rise, lie in the batch and
// skip the diagonal: one pass per index width, no per-entry decode call
// (every pass over a file reads every batch's indices here).
func (p *Packed) checkIndices() error {
	le := binary.LittleEndian
	ptr := p.buf[p.indptrOff : p.indptrOff+4*(p.Nodes+1)]
	isz := 2
	if p.Index32 {
		isz = 4
	}
	idx := p.buf[p.indicesOff : p.indicesOff+isz*p.Edges]
	n := int64(p.Nodes)
	lo := int(le.Uint32(ptr))
	if v, pv := int32View(idx), int32View(ptr); p.Index32 && v != nil && pv != nil {
		// In place, in one flat pass over the indices rather than a loop
		// per row (short rows): indptr, checked, rises from 0 to Edges, so
		// its rows cover the indices in order.
		r, end, last := 0, pv[1], int32(-1)
		for e, c := range v {
			for int32(e) == end { // the next row starts here (past any empty ones)
				r++
				end, last = pv[r+1], -1
			}
			if c <= last || int64(c) >= n || c == int32(r) {
				return fmt.Errorf("%w: row %d entry %d: column %d (previous %d, %d nodes, no diagonal)", ErrPacked, r, e, c, last, p.Nodes)
			}
			last = c
		}
		return nil
	}
	for r := 0; r < p.Nodes; r++ {
		hi := int(le.Uint32(ptr[4*r+4:]))
		row, last := idx[isz*lo:isz*hi], int64(-1)
		for k := 0; k < len(row); k += isz {
			var c int64
			if isz == 4 {
				c = int64(int32(le.Uint32(row[k:])))
			} else {
				c = int64(int16(le.Uint16(row[k:])))
			}
			if c <= last || c >= n || c == int64(r) {
				return fmt.Errorf("%w: row %d entry %d: column %d (previous %d, %d nodes, no diagonal)", ErrPacked, r, lo+k/isz, c, last, p.Nodes)
			}
			last = c
		}
		lo = hi
	}
	return nil
}

// Adjacency rebuilds the batch's 1-bit adjacency (packed ByRows) in one
// linear pass over the edge list.
func (p *Packed) Adjacency() (*bittensor.Tensor, error) {
	t, err := bittensor.New(p.Nodes, p.Nodes, 1, bittensor.ByRows, p.Padding)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacked, err)
	}
	w, lw := t.Words(), t.LineWords()
	le := binary.LittleEndian
	ptr := p.buf[p.indptrOff:]
	lo := uint32(0)
	for r := 0; r < p.Nodes; r++ {
		hi := le.Uint32(ptr[4*r+4:])
		row := w[r*lw : (r+1)*lw]
		if p.Index32 {
			sec := p.buf[p.indicesOff+4*int(lo) : p.indicesOff+4*int(hi)]
			for k := 0; k+4 <= len(sec); k += 4 {
				c := le.Uint32(sec[k:])
				if c >= uint32(p.Nodes) {
					return nil, fmt.Errorf("%w: row %d: column %d of %d nodes", ErrPacked, r, c, p.Nodes)
				}
				row[c>>6] |= 1 << (c & 63)
			}
		} else {
			sec := p.buf[p.indicesOff+2*int(lo) : p.indicesOff+2*int(hi)]
			for k := 0; k+2 <= len(sec); k += 2 {
				c := le.Uint16(sec[k:])
				if int(c) >= p.Nodes {
					return nil, fmt.Errorf("%w: row %d: column %d of %d nodes", ErrPacked, r, c, p.Nodes)
				}
				row[c>>6] |= 1 << (c & 63)
			}
		}
		if p.SelfLoops {
			row[r>>6] |= 1 << (r & 63)
		}
		lo = hi
	}
	return t, nil
}
