package bittensor_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
)

func encode(t testing.TB, x *bittensor.Tensor) []byte {
	var buf bytes.Buffer
	n, err := x.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n, "WriteTo's count")
	require.Equal(t, 36+8*len(x.Words())+4, buf.Len(), "stream length")
	return buf.Bytes()
}

func TestSerialRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	shapes := [][2]int{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {63, 65}, {64, 64}, {65, 63}, {255, 257}, {257, 255}, {256, 1}, {1, 256}}
	for _, packing := range packings {
		for nbits := 1; nbits <= bittensor.MaxBits; nbits++ {
			if testing.Short() && !spread(nbits) {
				continue
			}
			for i, sh := range shapes {
				pad := paddings[(nbits+i)%len(paddings)]
				vals := randVals(r, sh[0]*sh[1], nbits)
				x, err := bittensor.Pack(vals, sh[0], sh[1], nbits, packing, pad)
				require.NoError(t, err)
				y, err := bittensor.Read(bytes.NewReader(encode(t, x)))
				require.NoError(t, err, "%v %v b%d", packing, sh, nbits)
				if !assert.True(t, x.Equal(y), "%v %v b%d pad %+v", packing, sh, nbits, pad) {
					return
				}
				assert.Equal(t, vals, y.Ints())
			}
		}
	}
}

// TestSerialLayout pins the byte layout of the format.
func TestSerialLayout(t *testing.T) {
	x, err := bittensor.Pack([]int32{1, 2, 3}, 1, 3, 2, bittensor.ByRows, bittensor.Padding{Lines: 1, Bits: 64})
	require.NoError(t, err)
	b := encode(t, x)
	require.Len(t, b, 36+2*8+4)
	assert.Equal(t, "QGBT", string(b[:4]))
	assert.Equal(t, []byte{1, 0, 1, 2}, b[4:8]) // version 1, ByRows, 2 bits
	assert.Equal(t, uint64(1), binary.LittleEndian.Uint64(b[8:]))
	assert.Equal(t, uint64(3), binary.LittleEndian.Uint64(b[16:]))
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(b[24:]))
	assert.Equal(t, uint32(64), binary.LittleEndian.Uint32(b[28:]))
	cast := crc32.MakeTable(crc32.Castagnoli)
	assert.Equal(t, crc32.Checksum(b[:32], cast), binary.LittleEndian.Uint32(b[32:]))
	assert.Equal(t, uint64(0b101), binary.LittleEndian.Uint64(b[36:])) // plane 0: values 1 and 3
	assert.Equal(t, uint64(0b110), binary.LittleEndian.Uint64(b[44:])) // plane 1: values 2 and 3
	assert.Equal(t, crc32.Checksum(b[36:52], cast), binary.LittleEndian.Uint32(b[52:]))
}

func TestSerialStream(t *testing.T) {
	a, err := bittensor.PackRows([]int32{1, 0, 1, 1}, 2, 2, 1)
	require.NoError(t, err)
	b, err := bittensor.PackCols([]int32{7, 6, 5}, 3, 1, 3)
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = a.WriteTo(&buf)
	require.NoError(t, err)
	_, err = b.WriteTo(&buf)
	require.NoError(t, err)
	r := bytes.NewReader(buf.Bytes())
	a2, err := bittensor.Read(r)
	require.NoError(t, err)
	b2, err := bittensor.Read(r)
	require.NoError(t, err)
	assert.True(t, a.Equal(a2))
	assert.True(t, b.Equal(b2))
	_, err = bittensor.Read(r)
	assert.ErrorIs(t, err, io.EOF, "end of stream")
	assert.ErrorIs(t, err, bittensor.ErrFormat)
}

func TestSerialTruncated(t *testing.T) {
	x, err := bittensor.Pack(randVals(rand.New(rand.NewPCG(1, 1)), 70*3, 3), 70, 3, 3, bittensor.ByCols, bittensor.Padding{Lines: 2, Bits: 128})
	require.NoError(t, err)
	b := encode(t, x)
	for n := 1; n < len(b); n++ {
		_, err := bittensor.Read(bytes.NewReader(b[:n]))
		require.ErrorIs(t, err, bittensor.ErrFormat, "cut at %d of %d", n, len(b))
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
		assert.Contains(t, err.Error(), "truncated", "cut at %d", n)
	}
}

func TestSerialCorrupt(t *testing.T) {
	x, err := bittensor.Pack(randVals(rand.New(rand.NewPCG(2, 2)), 5*70, 4), 5, 70, 4, bittensor.ByRows, bittensor.Padding{Lines: 4, Bits: 128})
	require.NoError(t, err)
	b := encode(t, x)
	// Every single-bit flip anywhere is caught (CRC-32C detects them all).
	for i := 0; i < len(b)*8; i++ {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		_, err := bittensor.Read(bytes.NewReader(c))
		require.ErrorIs(t, err, bittensor.ErrFormat, "bit %d flipped", i)
	}
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		msg  string
	}{
		{"magic", func(b []byte) { b[0] = 'X' }, `magic "XGBT"`},
		{"header checksum", func(b []byte) { b[10] ^= 4 }, "header checksum"},
		{"words checksum", func(b []byte) { b[40] ^= 4 }, "words checksum"},
		{"trailer", func(b []byte) { b[len(b)-1] ^= 4 }, "words checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bytes.Clone(b)
			tc.edit(c)
			_, err := bittensor.Read(bytes.NewReader(c))
			require.ErrorIs(t, err, bittensor.ErrFormat)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// craft builds a stream with valid checksums from a header and words.
func craft(version uint16, packing, nbits byte, rows, cols uint64, padLines, padBits uint32, words []uint64, withTail bool) []byte {
	b := make([]byte, 36)
	copy(b, "QGBT")
	binary.LittleEndian.PutUint16(b[4:], version)
	b[6], b[7] = packing, nbits
	binary.LittleEndian.PutUint64(b[8:], rows)
	binary.LittleEndian.PutUint64(b[16:], cols)
	binary.LittleEndian.PutUint32(b[24:], padLines)
	binary.LittleEndian.PutUint32(b[28:], padBits)
	cast := crc32.MakeTable(crc32.Castagnoli)
	binary.LittleEndian.PutUint32(b[32:], crc32.Checksum(b[:32], cast))
	start := len(b)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	if withTail {
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], cast))
	}
	return b
}

func TestSerialBadFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
		msg    string
	}{
		{"version", craft(2, 1, 1, 1, 1, 1, 64, []uint64{1}, true), "version 2"},
		{"packing", craft(1, 3, 1, 1, 1, 1, 64, []uint64{1}, true), "packing Packing(3)"},
		{"bits 0", craft(1, 1, 0, 1, 1, 1, 64, []uint64{1}, true), "bits=0"},
		{"bits 33", craft(1, 1, 33, 1, 1, 1, 64, []uint64{1}, true), "bits=33"},
		{"pad bits", craft(1, 1, 1, 1, 1, 1, 65, []uint64{1}, true), "bits tile 65"},
		{"pad lines", craft(1, 1, 1, 1, 1, 0, 64, []uint64{1}, true), "lines tile 0"},
		{"huge rows", craft(1, 1, 1, 1<<63, 1, 1, 64, nil, true), "extent over 2^40"},
		{"too large", craft(1, 2, 32, 1<<30, 1<<30, 1, 64, nil, true), "too large"},
		{"padding bit past K", craft(1, 1, 1, 1, 3, 1, 64, []uint64{0b1000}, true), "padding bits 0x8 set in plane 0, line 0, word 0"},
		{"padding line", craft(1, 1, 1, 1, 3, 2, 64, []uint64{0b1, 0b1}, true), "padding bits 0x1 set in plane 0, line 1, word 0"},
		{"padding word", craft(1, 2, 1, 3, 1, 1, 128, []uint64{0b1, 1 << 40}, true), "line 0, word 1"},
		{"no checksum", craft(1, 1, 1, 1, 1, 1, 64, []uint64{1}, false), "missing the words' checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bittensor.Read(bytes.NewReader(tc.stream))
			require.ErrorIs(t, err, bittensor.ErrFormat)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestSerialLyingHeader: a valid header that claims 512 GiB of words, followed
// by a few bytes, fails as truncated without allocating anywhere near that.
func TestSerialLyingHeader(t *testing.T) {
	stream := craft(1, 1, 4, 1<<20, 1<<20, 16, 256, []uint64{1, 2, 3}, false) // 4·2^20·2^14 words
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := bittensor.Read(bytes.NewReader(stream))
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, bittensor.ErrFormat)
	assert.Contains(t, err.Error(), "truncated: 3 of 68719476736 words")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated for a 24-byte body")
}

type failingWriter struct{ left int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errDiskFull
	}
	w.left -= len(p)
	return len(p), nil
}

func TestWriteToErrors(t *testing.T) {
	x, err := bittensor.Pack(make([]int32, 300*3000), 300, 3000, 2, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	full := len(encode(t, x))
	for _, left := range []int{0, 20, 36, 36 + 8*8192 + 5, full - 2} {
		t.Run(fmt.Sprint(left), func(t *testing.T) {
			n, err := x.WriteTo(&failingWriter{left: left})
			require.ErrorIs(t, err, errDiskFull)
			assert.Equal(t, int64(left), n)
		})
	}
}

// FuzzRead: arbitrary bytes never panic; whatever Read accepts is exactly
// what WriteTo writes back, and holds zero padding. With fix set, the
// checksums are recomputed first, so that mutations reach the checks
// behind them (fields, sizes, padding) instead of all failing the CRC.
func FuzzRead(f *testing.F) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, sh := range [][3]int{{0, 0, 1}, {1, 1, 1}, {3, 70, 4}, {65, 2, 32}} {
		for _, packing := range packings {
			x, err := bittensor.Pack(randVals(r, sh[0]*sh[1], sh[2]), sh[0], sh[1], sh[2], packing, bittensor.Padding{Lines: 2, Bits: 64})
			require.NoError(f, err)
			f.Add(encode(f, x), false)
			f.Add(encode(f, x), true)
		}
	}
	f.Add([]byte("QGBT"), false)
	f.Add(craft(1, 1, 1, 1, 3, 1, 64, []uint64{0b1000}, true), true)
	cast := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, data []byte, fix bool) {
		if fix && len(data) >= 40 {
			data = bytes.Clone(data)
			binary.LittleEndian.PutUint32(data[32:], crc32.Checksum(data[:32], cast))
			end := len(data) - 4
			binary.LittleEndian.PutUint32(data[end:], crc32.Checksum(data[36:end], cast))
		}
		x, err := bittensor.Read(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, bittensor.ErrFormat)
			return
		}
		assert.Empty(t, paddingViolation(x))
		var buf bytes.Buffer
		_, err = x.WriteTo(&buf)
		require.NoError(t, err)
		require.LessOrEqual(t, buf.Len(), len(data))
		assert.Equal(t, data[:buf.Len()], buf.Bytes())
	})
}

func BenchmarkSerial(b *testing.B) {
	x, err := bittensor.Pack(randVals(rand.New(rand.NewPCG(1, 1)), 4096*512, 4), 4096, 512, 4, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(b, err)
	stream := encode(b, x)
	b.Run("WriteTo", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		var buf bytes.Buffer
		buf.Grow(len(stream))
		for b.Loop() {
			buf.Reset()
			if _, err := x.WriteTo(&buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bittensor.Read(bytes.NewReader(stream)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSerialLarge crosses the eager-allocation bound (2^20 words), so the
// words are grown chunk by chunk.
func TestSerialLarge(t *testing.T) {
	x, err := bittensor.New(4100, 4096, 8, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	require.Greater(t, len(x.Words()), 1<<20)
	r := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < 5000; i++ {
		x.Set(r.IntN(4100), r.IntN(4096), r.Uint32())
	}
	y, err := bittensor.Read(bytes.NewReader(encode(t, x)))
	require.NoError(t, err)
	assert.True(t, x.Equal(y))
}
