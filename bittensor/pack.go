package bittensor

import (
	"runtime"

	"github.com/qgtc/qgtc/internal/par"
)

// Packing is on the inference hot path: every quantized layer bit-decomposes
// its features. The core, planes64, turns 64 values into their bit planes
// eight values and one byte of each at a time: the byte of each of eight
// values goes into one uint64, and for each plane one multiply gathers the
// plane's bit of all eight (bit 8j moves to bit 56+j) into a byte of the
// plane word. No per-bit loop, no branch on values.

const (
	lsbs    = 0x0101010101010101 // bit 0 of each byte
	gather8 = 0x0102040810204080 // Σ 2^(56−7j): moves bit 8j to bit 56+j
)

// planes64 sets out[p], for p < nbits, to the word whose bit j is bit p of
// v[j]. Values are read as uint32 bit patterns.
func planes64(out *[MaxBits]uint64, v *[64]int32, nbits int) {
	for g := 0; g*8 < nbits; g++ {
		sh := uint(8 * g)
		var x [8]uint64 // x[c]: byte g of values 8c..8c+7, one per byte
		for c := range x {
			b := (*[8]int32)(v[8*c : 8*c+8])
			if nbits <= 8 { // values are bytes already: no shift, no mask
				x[c] = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
					uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
				continue
			}
			x[c] = uint64(uint8(uint32(b[0])>>sh)) | uint64(uint8(uint32(b[1])>>sh))<<8 |
				uint64(uint8(uint32(b[2])>>sh))<<16 | uint64(uint8(uint32(b[3])>>sh))<<24 |
				uint64(uint8(uint32(b[4])>>sh))<<32 | uint64(uint8(uint32(b[5])>>sh))<<40 |
				uint64(uint8(uint32(b[6])>>sh))<<48 | uint64(uint8(uint32(b[7])>>sh))<<56
		}
		np := min(8, nbits-8*g)
		o := out[8*g : 8*g+np]
		for p := range o {
			o[p] = gatherPlane(&x, uint(p))
		}
	}
}

// gatherPlane returns the word whose bit 8c+j is bit p of byte j of x[c].
func gatherPlane(x *[8]uint64, p uint) uint64 {
	return (x[0]>>p&lsbs*gather8)>>56 |
		(x[1]>>p&lsbs*gather8)>>56<<8 |
		(x[2]>>p&lsbs*gather8)>>56<<16 |
		(x[3]>>p&lsbs*gather8)>>56<<24 |
		(x[4]>>p&lsbs*gather8)>>56<<32 |
		(x[5]>>p&lsbs*gather8)>>56<<40 |
		(x[6]>>p&lsbs*gather8)>>56<<48 |
		(x[7]>>p&lsbs*gather8)>>56<<56
}

// pack writes vals (row-major Rows×Cols, range-checked) into t, rewriting
// every word that holds values; padding bits stay zero.
func (t *Tensor) pack(vals []int32) {
	if len(vals) == 0 {
		return
	}
	if t.packing == ByRows {
		parallel(t.rows, t.cols*t.bits, func(r0, r1 int) { t.packRows(vals, r0, r1) })
		return
	}
	blocks := (t.rows + 63) / 64
	parallel(blocks, 64*t.cols*t.bits, func(w0, w1 int) { t.packCols(vals, w0, w1) })
}

// packRows packs rows [r0, r1): each row is contiguous in vals, 64 values a word.
func (t *Tensor) packRows(vals []int32, r0, r1 int) {
	var out [MaxBits]uint64
	var tail [64]int32
	pw, lw, nb := t.PlaneWords(), t.lineWords, t.bits
	for r := r0; r < r1; r++ {
		row := vals[r*t.cols : (r+1)*t.cols]
		for w := 0; w*64 < len(row); w++ {
			var chunk *[64]int32
			if (w+1)*64 <= len(row) {
				chunk = (*[64]int32)(row[w*64:])
			} else {
				tail = [64]int32{}
				copy(tail[:], row[w*64:])
				chunk = &tail
			}
			planes64(&out, chunk, nb)
			off := r*lw + w
			for p := 0; p < nb; p++ {
				t.words[p*pw+off] = out[p]
			}
		}
	}
}

// packCols packs row blocks [w0, w1) of 64 rows: word w of every column.
// A column's values are strided in vals, so eight columns are gathered at
// once from contiguous runs of each row.
func (t *Tensor) packCols(vals []int32, w0, w1 int) {
	var out [MaxBits]uint64
	var buf [8][64]int32
	pw, lw, nb, cols := t.PlaneWords(), t.lineWords, t.bits, t.cols
	for w := w0; w < w1; w++ {
		n := min(64, t.rows-w*64)
		if n < 64 {
			buf = [8][64]int32{}
		}
		block := vals[w*64*cols : (w*64+n)*cols]
		for c := 0; c < cols; c += 8 {
			g := min(8, cols-c)
			if g == 8 {
				for j := 0; j < n; j++ {
					run := (*[8]int32)(block[j*cols+c:])
					buf[0][j], buf[1][j], buf[2][j], buf[3][j] = run[0], run[1], run[2], run[3]
					buf[4][j], buf[5][j], buf[6][j], buf[7][j] = run[4], run[5], run[6], run[7]
				}
			} else {
				for j := 0; j < n; j++ {
					for cc := 0; cc < g; cc++ {
						buf[cc][j] = block[j*cols+c+cc]
					}
				}
			}
			for cc := 0; cc < g; cc++ {
				planes64(&out, &buf[cc], nb)
				off := (c+cc)*lw + w
				for p := 0; p < nb; p++ {
					t.words[p*pw+off] = out[p]
				}
			}
		}
	}
}

// parallelMin is the work (values × bits) below which packing stays on the
// calling goroutine: a goroutine costs about as much as packing 16k bits.
const parallelMin = 1 << 18

// parallel calls f on disjoint ranges covering [0, n), on up to GOMAXPROCS
// goroutines when n items of the given cost each are worth it.
func parallel(n, cost int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n, n*max(cost, 0)/parallelMin)
	if workers <= 1 {
		f(0, n)
		return
	}
	par.Run(workers, func(i int) { f(n*i/workers, n*(i+1)/workers) })
}
