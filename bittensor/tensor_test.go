package bittensor_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
)

var (
	sizes    = []int{0, 1, 63, 64, 65, 255, 256, 257}
	paddings = []bittensor.Padding{bittensor.DefaultPadding, {Lines: 1, Bits: 64}, {Lines: 3, Bits: 192}, {Lines: 32, Bits: 512}}
	packings = []bittensor.Packing{bittensor.ByRows, bittensor.ByCols}
)

// spread is a subset of widths for the slower test modes: each end, around
// the byte boundaries, and a few between.
func spread(nbits int) bool {
	switch nbits {
	case 1, 2, 7, 8, 9, 16, 17, 31, 32:
		return true
	}
	return false
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// refWords is the layout written out from the package comment, one bit at
// a time: word(p, l, w) = words[p*planeWords + l*lineWords + w], bit k of
// line l in plane p = word(p, l, k/64) >> (k%64) & 1.
func refWords(vals []int32, rows, cols, nbits int, packing bittensor.Packing, pad bittensor.Padding) []uint64 {
	lines, k := rows, cols
	if packing == bittensor.ByCols {
		lines, k = cols, rows
	}
	lineWords := roundUp(k, pad.Bits) / 64
	planeWords := roundUp(lines, pad.Lines) * lineWords
	words := make([]uint64, nbits*planeWords)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			v := uint32(vals[r*cols+c])
			l, kk := r, c
			if packing == bittensor.ByCols {
				l, kk = c, r
			}
			for p := 0; p < nbits; p++ {
				if v>>p&1 != 0 {
					words[p*planeWords+l*lineWords+kk/64] |= 1 << (kk % 64)
				}
			}
		}
	}
	return words
}

// randVals draws rows·cols values of nbits bits; for 32 bits, half of them
// have the top bit set (negative as int32).
func randVals(r *rand.Rand, n, nbits int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(uint32(r.Uint64() & (1<<nbits - 1)))
	}
	return v
}

// paddingViolation describes the first padding bit of x that is set, or "".
func paddingViolation(x *bittensor.Tensor) string {
	if x.LineWords() == 0 {
		return ""
	}
	for p := 0; p < x.Bits(); p++ {
		for l := 0; l < x.PaddedLines(); l++ {
			for w, word := range x.Line(p, l) {
				valid := uint64(0)
				switch k := x.K(); {
				case l >= x.Lines() || w*64 >= k:
				case (w+1)*64 <= k:
					valid = ^uint64(0)
				default:
					valid = 1<<(k-w*64) - 1
				}
				if word&^valid != 0 {
					return fmt.Sprintf("plane %d line %d word %d: %#x", p, l, w, word&^valid)
				}
			}
		}
	}
	return ""
}

func checkTensor(t *testing.T, x *bittensor.Tensor, vals []int32, rows, cols, nbits int, packing bittensor.Packing, pad bittensor.Padding) {
	t.Helper()
	require.Equal(t, [3]int{rows, cols, nbits}, [3]int{x.Rows(), x.Cols(), x.Bits()})
	require.Equal(t, packing, x.Packing())
	require.Equal(t, pad, x.Padding())
	want := refWords(vals, rows, cols, nbits, packing, pad)
	if !assert.Equal(t, len(want), len(x.Words()), "storage length") {
		return
	}
	for i := range want {
		if want[i] != x.Words()[i] {
			assert.Failf(t, "packed word differs from the reference", "word %d: got %#x, want %#x", i, x.Words()[i], want[i])
			return
		}
	}
	assert.Empty(t, paddingViolation(x))
	assert.Equal(t, vals, x.Ints())
}

func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, packing := range packings {
		for _, rows := range sizes {
			for _, cols := range sizes {
				for nbits := 1; nbits <= bittensor.MaxBits; nbits++ {
					// Every width on the small shapes; a spread on the large
					// ones, and on all in -short (the race detector runs it).
					if (testing.Short() || rows*cols > 65*256) && !spread(nbits) ||
						testing.Short() && rows*cols > 65*256 && nbits != 1 && nbits != 32 {
						continue
					}
					pad := paddings[r.IntN(len(paddings))]
					name := fmt.Sprintf("%v/%dx%d/b%d/pad%d.%d", packing, rows, cols, nbits, pad.Lines, pad.Bits)
					vals := randVals(r, rows*cols, nbits)
					x, err := bittensor.Pack(vals, rows, cols, nbits, packing, pad)
					require.NoError(t, err, name)
					t.Run(name, func(t *testing.T) {
						checkTensor(t, x, vals, rows, cols, nbits, packing, pad)
						if rows*cols > 0 {
							i := r.IntN(rows * cols)
							assert.Equal(t, uint32(vals[i]), x.At(i/cols, i%cols))
						}
					})
				}
			}
		}
	}
}

func TestPackRowsCols(t *testing.T) {
	vals := []int32{0, 1, 2, 3, 4, 5}
	a, err := bittensor.PackRows(vals, 2, 3, 3)
	require.NoError(t, err)
	checkTensor(t, a, vals, 2, 3, 3, bittensor.ByRows, bittensor.DefaultPadding)
	assert.Equal(t, [4]int{2, 3, 16, 4}, [4]int{a.Lines(), a.K(), a.PaddedLines(), a.LineWords()})
	b, err := bittensor.PackCols(vals, 2, 3, 3)
	require.NoError(t, err)
	checkTensor(t, b, vals, 2, 3, 3, bittensor.ByCols, bittensor.DefaultPadding)
	assert.Equal(t, [4]int{3, 2, 16, 4}, [4]int{b.Lines(), b.K(), b.PaddedLines(), b.LineWords()})
	assert.Equal(t, 16*4, b.PlaneWords())
	assert.Len(t, b.Plane(2), 64)
	assert.Len(t, b.Line(1, 15), 4)
	// Column 2 of B is the line with values 2 (row 0) and 5 (row 1): bits 0b010, 0b101.
	assert.Equal(t, uint64(0b10), b.Line(0, 2)[0])
	assert.Equal(t, uint64(0b01), b.Line(1, 2)[0])
	assert.Equal(t, uint64(0b10), b.Line(2, 2)[0])
}

func TestPack32BitPatterns(t *testing.T) {
	vals := []int32{-1, -2147483648, 2147483647, 0, 12345, -7}
	for _, packing := range packings {
		x, err := bittensor.Pack(vals, 3, 2, 32, packing, bittensor.DefaultPadding)
		require.NoError(t, err)
		checkTensor(t, x, vals, 3, 2, 32, packing, bittensor.DefaultPadding)
		assert.Equal(t, uint32(0xFFFFFFFF), x.At(0, 0))
		assert.Equal(t, uint32(0x80000000), x.At(0, 1))
	}
}

func TestPackErrors(t *testing.T) {
	bad := make([]int32, 3*40)
	bad[70], bad[80] = 16, -1
	neg := make([]int32, 6)
	neg[4] = -3
	for _, tc := range []struct {
		name             string
		vals             []int32
		rows, cols, bits int
		packing          bittensor.Packing
		pad              bittensor.Padding
		err              error
		msg              string
	}{
		{"bits 0", nil, 0, 0, 0, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrBits, "bits=0"},
		{"bits 33", nil, 0, 0, 33, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrBits, "bits=33"},
		{"negative rows", nil, -1, 2, 1, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrShape, "-1×2"},
		{"huge extent", nil, 1 << 41, 0, 1, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrShape, "over 2^40"},
		{"too large", nil, 1 << 30, 1 << 30, 1, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrShape, "too large"},
		{"packing 0", nil, 0, 0, 1, 0, bittensor.DefaultPadding, bittensor.ErrShape, "Packing(0)"},
		{"pad lines 0", nil, 0, 0, 1, bittensor.ByRows, bittensor.Padding{Lines: 0, Bits: 64}, bittensor.ErrPadding, "lines tile 0"},
		{"pad bits 100", nil, 0, 0, 1, bittensor.ByRows, bittensor.Padding{Lines: 1, Bits: 100}, bittensor.ErrPadding, "bits tile 100"},
		{"pad bits 0", nil, 0, 0, 1, bittensor.ByCols, bittensor.Padding{Lines: 1, Bits: 0}, bittensor.ErrPadding, "bits tile 0"},
		{"short vals", make([]int32, 5), 2, 3, 1, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrShape, "len(vals)=5, want 2×3=6"},
		{"first bad value", bad, 3, 40, 4, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrValue, "vals[70] (row 1, col 30) = 16 is outside [0, 2^4)"},
		{"first bad value cols", bad, 3, 40, 4, bittensor.ByCols, bittensor.DefaultPadding, bittensor.ErrValue, "vals[70] (row 1, col 30) = 16"},
		{"negative", neg, 3, 2, 31, bittensor.ByCols, bittensor.DefaultPadding, bittensor.ErrValue, "vals[4] (row 2, col 0) = -3 is outside [0, 2^31)"},
		{"one bit", []int32{1, 2}, 1, 2, 1, bittensor.ByRows, bittensor.DefaultPadding, bittensor.ErrValue, "vals[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := bittensor.Pack(tc.vals, tc.rows, tc.cols, tc.bits, tc.packing, tc.pad)
			require.ErrorIs(t, err, tc.err)
			assert.Nil(t, x)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestSetInts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, packing := range packings {
		x, err := bittensor.Pack(randVals(r, 65*130, 5), 65, 130, 5, packing, bittensor.DefaultPadding)
		require.NoError(t, err)
		vals := randVals(r, 65*130, 5)
		require.NoError(t, x.SetInts(vals))
		checkTensor(t, x, vals, 65, 130, 5, packing, bittensor.DefaultPadding)
		before := x.Clone()
		bad := append([]int32(nil), vals...)
		bad[200] = 32
		require.ErrorIs(t, x.SetInts(bad), bittensor.ErrValue)
		require.ErrorIs(t, x.SetInts(vals[1:]), bittensor.ErrShape)
		assert.True(t, before.Equal(x), "a failed SetInts changed the tensor")
	}
}

func TestAtSet(t *testing.T) {
	for _, packing := range packings {
		x, err := bittensor.New(70, 65, 6, packing, bittensor.Padding{Lines: 8, Bits: 128})
		require.NoError(t, err)
		want := make([]int32, 70*65)
		r := rand.New(rand.NewPCG(5, 6))
		for i := 0; i < 2000; i++ {
			row, col, v := r.IntN(70), r.IntN(65), r.Uint32()
			x.Set(row, col, v) // only the low 6 bits are kept
			want[row*65+col] = int32(v & 63)
			require.Equal(t, v&63, x.At(row, col))
		}
		checkTensor(t, x, want, 70, 65, 6, packing, bittensor.Padding{Lines: 8, Bits: 128})
		for _, rc := range [][2]int{{-1, 0}, {70, 0}, {0, 65}, {0, -1}} {
			assert.PanicsWithValue(t, fmt.Sprintf("bittensor: index (%d, %d) out of range 70×65", rc[0], rc[1]),
				func() { x.At(rc[0], rc[1]) })
			assert.Panics(t, func() { x.Set(rc[0], rc[1], 1) })
		}
	}
}

func TestSliceRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, packing := range packings {
		for _, pad := range paddings {
			const rows, cols, nbits = 300, 70, 3
			vals := randVals(r, rows*cols, nbits)
			x, err := bittensor.Pack(vals, rows, cols, nbits, packing, pad)
			require.NoError(t, err)
			for _, rng := range [][2]int{{0, 0}, {0, 300}, {0, 1}, {1, 64}, {63, 65}, {64, 128}, {65, 300}, {299, 300}, {300, 300}, {37, 293}} {
				t.Run(fmt.Sprintf("%v/pad%d.%d/%d-%d", packing, pad.Lines, pad.Bits, rng[0], rng[1]), func(t *testing.T) {
					s, err := x.SliceRows(rng[0], rng[1])
					require.NoError(t, err)
					checkTensor(t, s, vals[rng[0]*cols:rng[1]*cols], rng[1]-rng[0], cols, nbits, packing, pad)
				})
			}
			for _, rng := range [][2]int{{-1, 2}, {5, 4}, {0, 301}} {
				_, err := x.SliceRows(rng[0], rng[1])
				assert.ErrorIs(t, err, bittensor.ErrShape)
				assert.ErrorContains(t, err, fmt.Sprintf("rows [%d, %d) of a 300-row tensor", rng[0], rng[1]))
			}
		}
	}
}

func TestCloneEqual(t *testing.T) {
	x, err := bittensor.PackRows([]int32{1, 2, 3, 0}, 2, 2, 2)
	require.NoError(t, err)
	c := x.Clone()
	assert.True(t, x.Equal(c))
	c.Set(1, 1, 3)
	assert.False(t, x.Equal(c), "Clone shares storage")
	assert.Equal(t, uint32(0), x.At(1, 1))
	y, err := bittensor.PackCols([]int32{1, 2, 3, 0}, 2, 2, 2)
	require.NoError(t, err)
	assert.False(t, x.Equal(y), "different packings are not equal")
	assert.False(t, x.Equal(nil))
	assert.True(t, (*bittensor.Tensor)(nil).Equal(nil))
}

func TestPackingString(t *testing.T) {
	assert.Equal(t, "rows", bittensor.ByRows.String())
	assert.Equal(t, "cols", bittensor.ByCols.String())
	assert.Equal(t, "Packing(7)", bittensor.Packing(7).String())
}

// FuzzPackRoundTrip packs values drawn from the fuzz input with a shape,
// width, packing and padding drawn from it too, and checks the words
// against the reference and the round trip through Ints.
func FuzzPackRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint16(3), uint16(3), uint8(4), true, uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(65), uint16(1), uint8(32), false, uint8(1))
	f.Add([]byte{}, uint16(0), uint16(257), uint8(1), true, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, rows, cols uint16, nbits uint8, byRows bool, padSel uint8) {
		r, c := int(rows%300), int(cols%300)
		b := int(nbits%32) + 1
		packing := bittensor.ByCols
		if byRows {
			packing = bittensor.ByRows
		}
		pad := paddings[int(padSel)%len(paddings)]
		vals := make([]int32, r*c)
		for i := range vals {
			var v uint32
			for j := 0; j < 4 && len(data) > 0; j++ {
				v |= uint32(data[(i*4+j)%len(data)]) << (8 * j)
			}
			vals[i] = int32(v & uint32(1<<b-1))
		}
		x, err := bittensor.Pack(vals, r, c, b, packing, pad)
		require.NoError(t, err)
		checkTensor(t, x, vals, r, c, b, packing, pad)
	})
}

func BenchmarkPack(b *testing.B) {
	for _, nbits := range []int{1, 2, 4, 8, 16, 32} {
		for _, packing := range packings {
			const rows, cols = 4096, 512
			vals := randVals(rand.New(rand.NewPCG(1, 1)), rows*cols, nbits)
			x, err := bittensor.Pack(vals, rows, cols, nbits, packing, bittensor.DefaultPadding)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("bits=%d/%v/%dx%d/impl=fast", nbits, packing, rows, cols), func(b *testing.B) {
				b.SetBytes(int64(4 * rows * cols))
				b.ReportAllocs()
				for b.Loop() {
					if err := x.SetInts(vals); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)*rows*cols/b.Elapsed().Seconds(), "values/s")
			})
			b.Run(fmt.Sprintf("bits=%d/%v/%dx%d/impl=reference", nbits, packing, rows, cols), func(b *testing.B) {
				b.SetBytes(int64(4 * rows * cols))
				for b.Loop() {
					refWords(vals, rows, cols, nbits, packing, bittensor.DefaultPadding)
				}
				b.ReportMetric(float64(b.N)*rows*cols/b.Elapsed().Seconds(), "values/s")
			})
		}
	}
}

// NewIn uses a buffer that can hold the tensor (cleared, shared with the
// tensor), allocates when it cannot, and rejects what New rejects.
func TestNewIn(t *testing.T) {
	big, err := bittensor.New(100, 300, 3, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	for i := range big.Words() {
		big.Words()[i] = ^uint64(0)
	}
	small, err := bittensor.NewIn(big.Words(), 20, 300, 2, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.Equal(t, &big.Words()[0], &small.Words()[0], "reuses the buffer")
	fresh, err := bittensor.New(20, 300, 2, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.Equal(t, len(fresh.Words()), len(small.Words()))
	assert.True(t, fresh.Equal(small), "cleared, same layout as New")
	assert.Equal(t, make([]int32, 20*300), small.Ints())

	grown, err := bittensor.NewIn(small.Words()[:0:1], 100, 300, 3, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.Len(t, grown.Words(), len(big.Words()), "allocates when the buffer is short")

	_, err = bittensor.NewIn(big.Words(), 4, 4, 0, bittensor.ByRows, bittensor.DefaultPadding)
	assert.ErrorIs(t, err, bittensor.ErrBits)
	_, err = bittensor.NewIn(nil, -1, 4, 1, bittensor.ByRows, bittensor.DefaultPadding)
	assert.ErrorIs(t, err, bittensor.ErrShape)
}

// TestNewOver: NewIn's layout in the same reused buffer, its words left as
// they were (the caller writes them all), or fresh zeros when it is short.
func TestNewOver(t *testing.T) {
	buf := make([]uint64, 4000)
	for i := range buf {
		buf[i] = uint64(i) + 1
	}
	over, err := bittensor.NewOver(buf, 20, 300, 2, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, err)
	fresh, err := bittensor.New(20, 300, 2, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(t, err)
	require.Len(t, over.Words(), len(fresh.Words()))
	assert.Equal(t, &buf[0], &over.Words()[0], "reuses the buffer")
	assert.Equal(t, buf[:len(fresh.Words())], over.Words(), "not cleared")
	assert.Equal(t, fresh.PaddedLines(), over.PaddedLines())
	assert.Equal(t, fresh.LineWords(), over.LineWords())
	grown, err := bittensor.NewOver(buf[:0:1], 100, 300, 3, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	assert.Equal(t, make([]uint64, len(grown.Words())), grown.Words(), "fresh storage is zero")
	_, err = bittensor.NewOver(buf, 4, 4, 0, bittensor.ByRows, bittensor.DefaultPadding)
	assert.ErrorIs(t, err, bittensor.ErrBits)
}

// TestBytes: Bytes is the storage New allocates, and 0 for a shape New
// refuses.
func TestBytes(t *testing.T) {
	for _, c := range []struct{ rows, cols, bits int }{{0, 0, 1}, {1, 1, 1}, {1000, 700, 1}, {17, 300, 3}} {
		for _, pk := range []bittensor.Packing{bittensor.ByRows, bittensor.ByCols} {
			x, err := bittensor.New(c.rows, c.cols, c.bits, pk, bittensor.DefaultPadding)
			require.NoError(t, err)
			assert.Equal(t, 8*int64(len(x.Words())), bittensor.Bytes(c.rows, c.cols, c.bits, pk, bittensor.DefaultPadding), "%+v %v", c, pk)
		}
	}
	assert.Zero(t, bittensor.Bytes(4, 4, 0, bittensor.ByRows, bittensor.DefaultPadding))
}
