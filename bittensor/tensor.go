package bittensor

import (
	"errors"
	"fmt"
	"math/bits"
)

// Packing says which axis of the stored matrix is bit-packed into words.
type Packing uint8

const (
	// ByRows packs each row: the matrix is the left operand A (M×K) of A·B.
	ByRows Packing = 1
	// ByCols packs each column: the matrix is the right operand B (K×N) of A·B.
	ByCols Packing = 2
)

func (p Packing) String() string {
	switch p {
	case ByRows:
		return "rows"
	case ByCols:
		return "cols"
	}
	return fmt.Sprintf("Packing(%d)", uint8(p))
}

// MaxBits is the widest value a Tensor holds.
const MaxBits = 32

// Padding is the tile a tensor's extents are rounded up to. Lines (rows of
// A, columns of B) round up to a multiple of Lines, the packed axis to a
// multiple of Bits (itself a multiple of 64).
type Padding struct {
	Lines int
	Bits  int
}

// DefaultPadding fits the GPU's b1 tiles: mma m16n8k256 and wgmma k256.
var DefaultPadding = Padding{Lines: 16, Bits: 256}

// Errors returned by this package; wrapped with details.
var (
	ErrBits    = errors.New("bittensor: bit width out of range 1..32")
	ErrShape   = errors.New("bittensor: bad shape")
	ErrValue   = errors.New("bittensor: value out of range")
	ErrPadding = errors.New("bittensor: bad padding")
	ErrFormat  = errors.New("bittensor: bad serialized tensor")
)

// Tensor is a rows×cols matrix of unsigned bits-bit integers stored as bit
// planes packed along one axis. See the package comment for the layout.
type Tensor struct {
	rows, cols, bits int
	packing          Packing
	pad              Padding
	paddedLines      int
	lineWords        int
	words            []uint64
}

func (p Padding) validate() error {
	if p.Lines < 1 || p.Lines > 1<<16 {
		return fmt.Errorf("%w: lines tile %d not in 1..65536", ErrPadding, p.Lines)
	}
	if p.Bits < 64 || p.Bits%64 != 0 || p.Bits > 1<<16 {
		return fmt.Errorf("%w: bits tile %d is not a multiple of 64 in 64..65536", ErrPadding, p.Bits)
	}
	return nil
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// Limits on a tensor's size, so that shapes from a file or a user can
// neither overflow int nor ask for absurd allocations.
const (
	maxExtent = 1 << 40 // rows or cols
	maxWords  = 1 << 36 // 512 GiB of storage
)

// New returns a zero rows×cols tensor of the given bit width, packing and padding.
func New(rows, cols, nbits int, packing Packing, pad Padding) (*Tensor, error) {
	t, err := layout(rows, cols, nbits, packing, pad)
	if err != nil {
		return nil, err
	}
	t.words = make([]uint64, t.numWords())
	return t, nil
}

// NewIn is New on reused storage: when buf can hold the tensor's words it
// is cleared and used (the tensor then shares it: buf must not be used for
// anything else while the tensor lives), otherwise New allocates. Loops
// that make one tensor per batch keep its memory warm in cache this way
// instead of allocating (and zeroing) fresh memory every time.
func NewIn(buf []uint64, rows, cols, nbits int, packing Packing, pad Padding) (*Tensor, error) {
	t, err := NewOver(buf, rows, cols, nbits, packing, pad)
	if err != nil {
		return nil, err
	}
	clear(t.words)
	return t, nil
}

// NewOver is NewIn for a caller that writes every word of the tensor
// itself (a copy of whole planes): buf's words are left as they are, not
// cleared first, which would write the whole tensor one more time.
func NewOver(buf []uint64, rows, cols, nbits int, packing Packing, pad Padding) (*Tensor, error) {
	t, err := layout(rows, cols, nbits, packing, pad)
	if err != nil {
		return nil, err
	}
	n := t.numWords()
	if cap(buf) < n {
		buf = make([]uint64, n)
	}
	t.words = buf[:n]
	return t, nil
}

// Bytes is the storage New allocates for a tensor of that shape, 0 for
// one it refuses.
func Bytes(rows, cols, nbits int, packing Packing, pad Padding) int64 {
	t, err := layout(rows, cols, nbits, packing, pad)
	if err != nil {
		return 0
	}
	return 8 * int64(t.numWords())
}

// layout validates a shape and returns a tensor with every field but the
// storage set.
func layout(rows, cols, nbits int, packing Packing, pad Padding) (*Tensor, error) {
	if nbits < 1 || nbits > MaxBits {
		return nil, fmt.Errorf("%w: bits=%d", ErrBits, nbits)
	}
	if rows < 0 || cols < 0 {
		return nil, fmt.Errorf("%w: %d×%d has a negative extent", ErrShape, rows, cols)
	}
	if rows > maxExtent || cols > maxExtent {
		return nil, fmt.Errorf("%w: %d×%d has an extent over 2^40", ErrShape, rows, cols)
	}
	if packing != ByRows && packing != ByCols {
		return nil, fmt.Errorf("%w: packing %v", ErrShape, packing)
	}
	if err := pad.validate(); err != nil {
		return nil, err
	}
	t := &Tensor{rows: rows, cols: cols, bits: nbits, packing: packing, pad: pad}
	lines, k := rows, cols
	if packing == ByCols {
		lines, k = cols, rows
	}
	t.paddedLines = roundUp(lines, pad.Lines)
	t.lineWords = roundUp(k, pad.Bits) / 64
	// Each factor is below 2^41, so compare by division rather than multiply.
	if t.paddedLines > 0 && t.lineWords > 0 &&
		(t.lineWords > maxWords/t.paddedLines || t.paddedLines*t.lineWords > maxWords/nbits) {
		return nil, fmt.Errorf("%w: %d×%d×%d bits is too large", ErrShape, rows, cols, nbits)
	}
	return t, nil
}

func (t *Tensor) numWords() int { return t.bits * t.paddedLines * t.lineWords }

// PackRows packs a row-major rows×cols matrix along its rows, as the left
// operand A of a product, with DefaultPadding.
func PackRows(vals []int32, rows, cols, nbits int) (*Tensor, error) {
	return Pack(vals, rows, cols, nbits, ByRows, DefaultPadding)
}

// PackCols packs a row-major rows×cols matrix along its columns, as the right
// operand B of a product, with DefaultPadding.
func PackCols(vals []int32, rows, cols, nbits int) (*Tensor, error) {
	return Pack(vals, rows, cols, nbits, ByCols, DefaultPadding)
}

// Pack packs a row-major rows×cols matrix of values in [0, 2^nbits) with the
// given packing and padding. The first bad value is named in the error.
// For nbits = 32 every int32 is valid and stands for its uint32 bit pattern
// (the inverse of Ints).
func Pack(vals []int32, rows, cols, nbits int, packing Packing, pad Padding) (*Tensor, error) {
	t, err := layout(rows, cols, nbits, packing, pad)
	if err != nil {
		return nil, err
	}
	if err := t.checkVals(vals); err != nil {
		return nil, err
	}
	t.words = make([]uint64, t.numWords())
	t.pack(vals)
	return t, nil
}

// SetInts overwrites every value of t with vals (row-major Rows×Cols, as
// for Pack), reusing t's storage: a layer re-packs its features into the
// same tensor each step. On error t is unchanged.
func (t *Tensor) SetInts(vals []int32) error {
	if err := t.checkVals(vals); err != nil {
		return err
	}
	t.pack(vals)
	return nil
}

func (t *Tensor) checkVals(vals []int32) error {
	if len(vals) != t.rows*t.cols {
		return fmt.Errorf("%w: len(vals)=%d, want %d×%d=%d", ErrShape, len(vals), t.rows, t.cols, t.rows*t.cols)
	}
	if i := firstOutOfRange(vals, t.bits); i >= 0 {
		return fmt.Errorf("%w: vals[%d] (row %d, col %d) = %d is outside [0, 2^%d)",
			ErrValue, i, i/t.cols, i%t.cols, vals[i], t.bits)
	}
	return nil
}

// firstOutOfRange returns the index of the first value that does not fit
// nbits bits, or -1. The common all-good case is one OR over the values.
func firstOutOfRange(vals []int32, nbits int) int {
	if nbits >= 32 {
		return -1
	}
	var acc uint32
	for _, v := range vals {
		acc |= uint32(v)
	}
	if acc>>nbits == 0 {
		return -1
	}
	for i, v := range vals {
		if uint32(v)>>nbits != 0 {
			return i
		}
	}
	return -1
}

// Rows is the number of rows of the stored matrix.
func (t *Tensor) Rows() int { return t.rows }

// Cols is the number of columns of the stored matrix.
func (t *Tensor) Cols() int { return t.cols }

// Bits is the bit width: the number of planes.
func (t *Tensor) Bits() int { return t.bits }

// Packing says which axis is packed.
func (t *Tensor) Packing() Packing { return t.packing }

// Padding is the tile the extents are rounded to.
func (t *Tensor) Padding() Padding { return t.pad }

// Lines is the number of packed lines: Rows for ByRows, Cols for ByCols.
func (t *Tensor) Lines() int {
	if t.packing == ByRows {
		return t.rows
	}
	return t.cols
}

// K is the length of the packed (reduction) axis: Cols for ByRows, Rows for ByCols.
func (t *Tensor) K() int {
	if t.packing == ByRows {
		return t.cols
	}
	return t.rows
}

// PaddedLines is Lines rounded up to Padding().Lines.
func (t *Tensor) PaddedLines() int { return t.paddedLines }

// LineWords is the number of 64-bit words per line: K rounded up to Padding().Bits, over 64.
func (t *Tensor) LineWords() int { return t.lineWords }

// PlaneWords is the number of 64-bit words per plane.
func (t *Tensor) PlaneWords() int { return t.paddedLines * t.lineWords }

// Words is the whole packed storage, plane after plane. Callers that write
// into it must keep the padding bits zero.
func (t *Tensor) Words() []uint64 { return t.words }

// Plane returns the words of plane p (0 = least significant bit).
func (t *Tensor) Plane(p int) []uint64 {
	pw := t.PlaneWords()
	return t.words[p*pw : (p+1)*pw : (p+1)*pw]
}

// Line returns the words of line l in plane p.
func (t *Tensor) Line(p, l int) []uint64 {
	off := p*t.PlaneWords() + l*t.lineWords
	return t.words[off : off+t.lineWords : off+t.lineWords]
}

// At returns the value at row r, column c. It panics if r or c is out of range.
func (t *Tensor) At(r, c int) uint32 {
	l, k := t.lineK(r, c)
	var v uint32
	pw := t.PlaneWords()
	off := l*t.lineWords + k/64
	for p := 0; p < t.bits; p++ {
		v |= uint32(t.words[p*pw+off]>>(k%64)&1) << p
	}
	return v
}

// Set stores v (its low Bits() bits) at row r, column c. It panics if r or c
// is out of range.
func (t *Tensor) Set(r, c int, v uint32) {
	l, k := t.lineK(r, c)
	pw := t.PlaneWords()
	off := l*t.lineWords + k/64
	mask := uint64(1) << (k % 64)
	for p := 0; p < t.bits; p++ {
		if v>>p&1 != 0 {
			t.words[p*pw+off] |= mask
		} else {
			t.words[p*pw+off] &^= mask
		}
	}
}

func (t *Tensor) lineK(r, c int) (int, int) {
	if uint(r) >= uint(t.rows) || uint(c) >= uint(t.cols) {
		panic(fmt.Sprintf("bittensor: index (%d, %d) out of range %d×%d", r, c, t.rows, t.cols))
	}
	if t.packing == ByRows {
		return r, c
	}
	return c, r
}

// Ints returns the values as a row-major rows×cols slice (QGTC's to_val).
// Values of 32-bit tensors with the top bit set wrap to negative int32.
func (t *Tensor) Ints() []int32 {
	out := make([]int32, t.rows*t.cols)
	if len(out) == 0 {
		return out
	}
	pw := t.PlaneWords()
	for l := 0; l < t.Lines(); l++ {
		for w := 0; w*64 < t.K(); w++ {
			n := min(64, t.K()-w*64)
			var acc [64]uint32
			for p := 0; p < t.bits; p++ {
				word := t.words[p*pw+l*t.lineWords+w]
				for word != 0 {
					j := bits.TrailingZeros64(word)
					acc[j] |= 1 << p
					word &= word - 1
				}
			}
			for j := 0; j < n; j++ {
				k := w*64 + j
				if t.packing == ByRows {
					out[l*t.cols+k] = int32(acc[j])
				} else {
					out[k*t.cols+l] = int32(acc[j])
				}
			}
		}
	}
	return out
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	c := *t
	c.words = append([]uint64(nil), t.words...)
	return &c
}

// Equal reports whether t and u hold the same shape, bit width, packing,
// padding and bits.
func (t *Tensor) Equal(u *Tensor) bool {
	if t == nil || u == nil {
		return t == u
	}
	if t.rows != u.rows || t.cols != u.cols || t.bits != u.bits || t.packing != u.packing || t.pad != u.pad {
		return false
	}
	for i := range t.words {
		if t.words[i] != u.words[i] {
			return false
		}
	}
	return true
}

// SliceRows returns a new tensor holding rows [r0, r1) of t, with t's bit
// width, packing and padding: a batch's slice of a larger feature matrix.
func (t *Tensor) SliceRows(r0, r1 int) (*Tensor, error) {
	if r0 < 0 || r1 < r0 || r1 > t.rows {
		return nil, fmt.Errorf("%w: rows [%d, %d) of a %d-row tensor", ErrShape, r0, r1, t.rows)
	}
	s, err := New(r1-r0, t.cols, t.bits, t.packing, t.pad)
	if err != nil || len(s.words) == 0 {
		return s, err
	}
	if t.packing == ByRows {
		for p := 0; p < t.bits; p++ {
			src := t.Plane(p)[r0*t.lineWords : r1*t.lineWords]
			copy(s.Plane(p), src)
		}
		return s, nil
	}
	// ByCols: rows are bit positions inside each line; shift them down.
	for p := 0; p < t.bits; p++ {
		for c := 0; c < t.cols; c++ {
			copyBits(s.Line(p, c), t.Line(p, c), r0, r1-r0)
		}
	}
	return s, nil
}

// copyBits copies n bits of src starting at bit off into dst starting at bit 0.
func copyBits(dst, src []uint64, off, n int) {
	for i := 0; i*64 < n; i++ {
		b := off + i*64
		w := src[b/64] >> (b % 64)
		if b%64 != 0 && b/64+1 < len(src) {
			w |= src[b/64+1] << (64 - b%64)
		}
		if rem := n - i*64; rem < 64 {
			w &= 1<<rem - 1
		}
		dst[i] = w
	}
}
