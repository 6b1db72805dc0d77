package subgraph

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
)

// nativeLE: the host is little-endian, so a packed buffer's int32,
// float32 and uint64 sections, aligned as the format lays them out, can be
// read in place instead of decoded value by value.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// view is b as []T in place, or nil where the host or b's alignment does
// not allow it (the caller decodes then).
func view[T int32 | float32 | uint64](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if !nativeLE || len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(size) != 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

func int32View(b []byte) []int32     { return view[int32](b) }
func float32View(b []byte) []float32 { return view[float32](b) }

// CSR returns the batch's CSR (no diagonal; see SelfLoops): indptr, Nodes+1
// entries, and the column indices. Where the host allows (little-endian,
// and 32-bit indices for them) they are views of the buffer, which must
// not be written; otherwise they are decoded into indptr and indices,
// grown when too short.
func (p *Packed) CSR(indptr, indices []int32) ([]int32, []int32) {
	le := binary.LittleEndian
	pb := p.buf[p.indptrOff : p.indptrOff+4*(p.Nodes+1)]
	ptr := int32View(pb)
	if ptr == nil {
		ptr = growTo(indptr, p.Nodes+1)
		for r := range ptr {
			ptr[r] = int32(le.Uint32(pb[4*r:]))
		}
	}
	var idx []int32
	if p.Index32 {
		ib := p.buf[p.indicesOff : p.indicesOff+4*p.Edges]
		if idx = int32View(ib); idx == nil {
			idx = growTo(indices, p.Edges)
			for e := range idx {
				idx[e] = int32(le.Uint32(ib[4*e:]))
			}
		}
	} else {
		ib := p.buf[p.indicesOff : p.indicesOff+2*p.Edges]
		idx = growTo(indices, p.Edges)
		for e := range idx {
			idx[e] = int32(int16(le.Uint16(ib[2*e:])))
		}
	}
	return ptr, idx
}

// growTo is s resized to n, reallocated when too short.
func growTo(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// Features returns the batch's feature rows as a ByRows tensor, or nil
// when the buffer carries none.
func (p *Packed) Features() (*bittensor.Tensor, error) { return p.FeaturesIn(nil) }

// FeaturesIn is Features in buf's storage where it is large enough
// (bittensor.NewOver): the tensor then shares buf.
func (p *Packed) FeaturesIn(buf []uint64) (*bittensor.Tensor, error) {
	if p.FeatCols == 0 {
		return nil, nil
	}
	// Every word is copied below, padding included: nothing to clear.
	t, err := bittensor.NewOver(buf, p.Nodes, p.FeatCols, p.FeatBits, bittensor.ByRows, p.Padding)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPacked, err)
	}
	w := t.Words()
	src := p.buf[p.featOff : p.featOff+8*len(w)]
	// Padding bits must be zero for kernels that run over the padded
	// extents: past the last row, and past the last column in each row.
	// One OR over them all, block by block as each is copied (it is in
	// cache then); the loop below names the first bad one.
	lw, pw := t.LineWords(), t.PlaneWords()
	full, tail := p.FeatCols/64, p.FeatCols%64
	used := (p.FeatCols + 63) / 64
	var bad uint64
	orPad := func(lines []uint64) (or uint64) { // column by column: no slice a line
		if tail != 0 {
			for i := full; i < len(lines); i += lw {
				or |= lines[i] >> tail
			}
		}
		for j := used; j < lw; j++ {
			for i := j; i < len(lines); i += lw {
				or |= lines[i]
			}
		}
		return or
	}
	v := view[uint64](src)
	if v == nil {
		for i := range w {
			w[i] = binary.LittleEndian.Uint64(src[8*i:])
		}
	}
	const block = 1024 // lines
	for pl := 0; pl < p.FeatBits; pl++ {
		plane, rows := w[pl*pw:(pl+1)*pw], p.Nodes*lw
		if v != nil {
			from := v[pl*pw : (pl+1)*pw]
			for lo := 0; lo < rows; lo += block * lw {
				hi := min(rows, lo+block*lw)
				bad |= orPad(from[lo:hi])
				copy(plane[lo:hi], from[lo:hi])
			}
			copy(plane[rows:], from[rows:])
		} else {
			bad |= orPad(plane[:rows])
		}
		for _, x := range plane[rows:] {
			bad |= x
		}
	}
	if bad == 0 {
		return t, nil
	}
	for pl := 0; pl < p.FeatBits; pl++ {
		plane := w[pl*pw : (pl+1)*pw]
		for l := 0; l < t.PaddedLines(); l++ {
			line := plane[l*lw : (l+1)*lw]
			if l >= p.Nodes {
				for _, x := range line {
					if x != 0 {
						return nil, fmt.Errorf("%w: padding row %d of plane %d is not zero", ErrPacked, l, pl)
					}
				}
				continue
			}
			if tail != 0 && line[full]>>tail != 0 {
				return nil, fmt.Errorf("%w: padding bits of row %d, plane %d are not zero", ErrPacked, l, pl)
			}
			for _, x := range line[used:] {
				if x != 0 {
					return nil, fmt.Errorf("%w: padding words of row %d, plane %d are not zero", ErrPacked, l, pl)
				}
			}
		}
	}
	return nil, fmt.Errorf("%w: padding bits are not zero", ErrPacked) // not reached
}
