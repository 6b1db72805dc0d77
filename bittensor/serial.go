package bittensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// The serialized form, all integers little-endian:
//
//	offset  size  field
//	0       4     magic "QGBT"
//	4       2     format version (1)
//	6       1     packing (1 = rows, 2 = cols)
//	7       1     bits (1..32)
//	8       8     rows
//	16      8     cols
//	24      4     padding lines
//	28      4     padding bits
//	32      4     CRC-32C (Castagnoli) of bytes 0..31
//	36      8·W   the words, W = bits · PaddedLines · LineWords, as in Words()
//	36+8W   4     CRC-32C of the word bytes
//
// The header has its own checksum so that a corrupt size is caught before
// anything is allocated; the words are then read in bounded chunks, so even
// a header that is valid but lies about the size allocates no more than
// 8 MiB or about twice what the stream actually holds before the error.
const (
	magic         = "QGBT"
	formatVersion = 1
	headerSize    = 32
	chunkWords    = 1 << 13 // 64 KiB per read or write
	eagerWords    = 1 << 20 // up to 8 MiB of words is allocated at once
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteTo writes t in the versioned binary format described in serial.go
// (read it back with Read). It implements io.WriterTo.
func (t *Tensor) WriteTo(w io.Writer) (int64, error) {
	var hdr [headerSize + 4]byte
	copy(hdr[0:4], magic)
	binary.LittleEndian.PutUint16(hdr[4:], formatVersion)
	hdr[6] = byte(t.packing)
	hdr[7] = byte(t.bits)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(t.rows))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(t.cols))
	binary.LittleEndian.PutUint32(hdr[24:], uint32(t.pad.Lines))
	binary.LittleEndian.PutUint32(hdr[28:], uint32(t.pad.Bits))
	binary.LittleEndian.PutUint32(hdr[32:], crc32.Checksum(hdr[:headerSize], castagnoli))
	n, err := w.Write(hdr[:])
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("bittensor: writing header: %w", err)
	}
	buf := make([]byte, 8*min(len(t.words), chunkWords))
	var crc uint32
	for i := 0; i < len(t.words); i += chunkWords {
		chunk := t.words[i:min(len(t.words), i+chunkWords)]
		b := buf[:8*len(chunk)]
		for j, v := range chunk {
			binary.LittleEndian.PutUint64(b[8*j:], v)
		}
		crc = crc32.Update(crc, castagnoli, b)
		n, err := w.Write(b)
		total += int64(n)
		if err != nil {
			return total, fmt.Errorf("bittensor: writing words %d..%d of %d: %w", i, i+len(chunk), len(t.words), err)
		}
	}
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], crc)
	n, err = w.Write(tail[:])
	total += int64(n)
	if err != nil {
		return total, fmt.Errorf("bittensor: writing checksum: %w", err)
	}
	return total, nil
}

// Read reads one tensor written by WriteTo, consuming exactly its bytes, so
// tensors can be concatenated in one stream. Any truncation, corruption or
// invalid field is an error wrapping ErrFormat that says what is wrong; an
// empty stream also wraps io.EOF, so a loop can read tensors until then.
func Read(r io.Reader) (*Tensor, error) {
	var hdr [headerSize + 4]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: empty stream: %w", ErrFormat, io.EOF)
		}
		return nil, fmt.Errorf("%w: truncated header: %d of %d bytes: %w", ErrFormat, n, len(hdr), err)
	}
	if string(hdr[0:4]) != magic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrFormat, hdr[0:4], magic)
	}
	if got, want := binary.LittleEndian.Uint32(hdr[32:]), crc32.Checksum(hdr[:headerSize], castagnoli); got != want {
		return nil, fmt.Errorf("%w: header checksum %#08x, computed %#08x", ErrFormat, got, want)
	}
	if v := binary.LittleEndian.Uint16(hdr[4:]); v != formatVersion {
		return nil, fmt.Errorf("%w: version %d, this build reads version %d", ErrFormat, v, formatVersion)
	}
	rows, cols := binary.LittleEndian.Uint64(hdr[8:]), binary.LittleEndian.Uint64(hdr[16:])
	if rows > maxExtent || cols > maxExtent {
		return nil, fmt.Errorf("%w: shape %d×%d has an extent over 2^40", ErrFormat, rows, cols)
	}
	pad := Padding{Lines: int(binary.LittleEndian.Uint32(hdr[24:])), Bits: int(binary.LittleEndian.Uint32(hdr[28:]))}
	t, err := layout(int(rows), int(cols), int(hdr[7]), Packing(hdr[6]), pad)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrFormat, err)
	}

	total := t.numWords()
	buf := make([]byte, 8*min(total, chunkWords))
	words := make([]uint64, 0, min(total, eagerWords))
	var crc uint32
	for len(words) < total {
		k := min(total-len(words), chunkWords)
		b := buf[:8*k]
		if n, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("%w: truncated: %d of %d words of a %d×%d %d-bit tensor: %w",
				ErrFormat, len(words)+n/8, total, rows, cols, t.bits, unexpected(err))
		}
		crc = crc32.Update(crc, castagnoli, b)
		start := len(words)
		words = slices.Grow(words, k)[:start+k]
		for j, dst := 0, words[start:]; j < len(dst); j++ {
			dst[j] = binary.LittleEndian.Uint64(b[8*j:])
		}
	}
	t.words = words
	var tail [4]byte
	if _, err := io.ReadFull(r, tail[:]); err != nil {
		return nil, fmt.Errorf("%w: truncated: missing the words' checksum: %w", ErrFormat, unexpected(err))
	}
	if got := binary.LittleEndian.Uint32(tail[:]); got != crc {
		return nil, fmt.Errorf("%w: words checksum %#08x, computed %#08x", ErrFormat, got, crc)
	}
	if err := t.checkPadding(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return t, nil
}

// unexpected turns a clean EOF in the middle of a tensor into ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// checkPadding returns an error naming the first padding bit that is set.
// Kernels rely on padding being zero, so a stream that breaks it is refused.
func (t *Tensor) checkPadding() error {
	if t.lineWords == 0 {
		return nil // no words: a header may claim 2^40 empty lines
	}
	k := t.K()
	full, rem := k/64, k%64
	for p := 0; p < t.bits; p++ {
		for l := 0; l < t.paddedLines; l++ {
			line := t.Line(p, l)
			start := full
			if l >= t.Lines() {
				start = 0
			} else if rem != 0 {
				if extra := line[full] &^ (1<<rem - 1); extra != 0 {
					return fmt.Errorf("padding bits %#x set in plane %d, line %d, word %d", extra, p, l, full)
				}
				start = full + 1
			}
			for w := start; w < len(line); w++ {
				if line[w] != 0 {
					return fmt.Errorf("padding bits %#x set in plane %d, line %d, word %d", line[w], p, l, w)
				}
			}
		}
	}
	return nil
}
