package cpu

import (
	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// The fused epilogue of the bit kernels: the float32 epilogue, the
// re-quantizer and the bit-plane packing of each block of output rows.

// applyRow is bmm.Epilogue.Apply over row m: out[j] = ep.Apply(c[j], m, j),
// one step at a time over the whole row so that each loop is simple. Each
// step rounds to float32 exactly as Apply does (the explicit conversions
// forbid fused multiply-adds), so the results are bit for bit the same.
func applyRow(out []float32, c []int32, m int, ep *bmm.Epilogue) {
	out = out[:len(c)]
	for j, v := range c {
		out[j] = float32(v)
	}
	if ep == nil {
		return
	}
	if ep.ColScale != nil {
		s := ep.ColScale[:len(out)]
		for j := range out {
			out[j] = float32(out[j] * s[j])
		}
	}
	if ep.RowTerm != nil {
		rt, ct := ep.RowTerm[m], ep.ColTerm[:len(out)]
		for j := range out {
			out[j] = out[j] + float32(rt*ct[j])
		}
	}
	if ep.ColConst != nil {
		cc := ep.ColConst[:len(out)]
		for j := range out {
			out[j] = out[j] + cc[j]
		}
	}
	if ep.RowScale != nil {
		rs := ep.RowScale[m]
		for j := range out {
			out[j] = float32(out[j] * rs)
		}
	}
	if ep.ColBias != nil {
		cb := ep.ColBias[:len(out)]
		for j := range out {
			out[j] = out[j] + cb[j]
		}
	}
	if ep.ReLU {
		for j, v := range out {
			if !(v > 0) {
				out[j] = 0
			}
		}
	}
}

// quantizeRow is bmm.Requant.Quantize over a row: q[j] = rq.Quantize(y[j], bits).
// For 0 < v < 2^bits−1 the floor of v is its truncation, so no float64
// round trip is needed.
func quantizeRow(q []uint32, y []float32, rq bmm.Requant, bits int) {
	q = q[:len(y)]
	top := uint32(uint64(1)<<bits - 1)
	maxq := float32(top)
	for j, x := range y {
		v := float32(x*rq.Scale) + rq.Offset
		switch {
		case !(v > 0): // also NaN
			q[j] = 0
		case v >= maxq:
			q[j] = top
		default:
			q[j] = uint32(v)
		}
	}
}

// packBitBlock writes rows [m0, m0+rows) of an m×n matrix of values q
// (row-major, stride n) into dst's bit planes. m0 is a multiple of 64 and
// rows <= 64, so for a column-packed dst the block is one word per line and
// plane, owned by the caller alone.
func packBitBlock(dst *bittensor.Tensor, q []uint32, m0, rows, n int) {
	nbits := dst.Bits()
	var vals [64]uint32
	var planes [bittensor.MaxBits]uint64
	if dst.Packing() == bittensor.ByRows {
		for r := 0; r < rows; r++ {
			row := q[r*n : (r+1)*n]
			for w := 0; w*64 < n; w++ {
				k := copy(vals[:], row[w*64:])
				clear(vals[k:])
				transpose64(&planes, &vals, nbits)
				for pl := 0; pl < nbits; pl++ {
					dst.Line(pl, m0+r)[w] = planes[pl]
				}
			}
		}
		return
	}
	w := m0 / 64
	clear(vals[rows:])
	for c := 0; c < n; c++ {
		for r := 0; r < rows; r++ {
			vals[r] = q[r*n+c]
		}
		transpose64(&planes, &vals, nbits)
		for pl := 0; pl < nbits; pl++ {
			dst.Line(pl, c)[w] = planes[pl]
		}
	}
}

// transpose64 sets planes[p] bit j to bit p of vals[j], for p < nbits.
// Eight values at a time, byte b of each goes into one lane of a word, and
// a multiply gathers bit p of the eight lanes into one byte.
func transpose64(planes *[bittensor.MaxBits]uint64, vals *[64]uint32, nbits int) {
	const lanes, gather = 0x0101010101010101, 0x0102040810204080
	for b := 0; b*8 < nbits; b++ {
		var x [8]uint64
		for g := range x {
			v := (*[8]uint32)(vals[8*g:])
			sh := uint(8 * b)
			x[g] = uint64(uint8(v[0]>>sh)) | uint64(uint8(v[1]>>sh))<<8 | uint64(uint8(v[2]>>sh))<<16 |
				uint64(uint8(v[3]>>sh))<<24 | uint64(uint8(v[4]>>sh))<<32 | uint64(uint8(v[5]>>sh))<<40 |
				uint64(uint8(v[6]>>sh))<<48 | uint64(uint8(v[7]>>sh))<<56
		}
		for p := 8 * b; p < min(nbits, 8*b+8); p++ {
			s := uint(p - 8*b)
			var word uint64
			for g, xg := range x {
				word |= (xg >> s & lanes * gather >> 56) << (8 * g)
			}
			planes[p] = word
		}
	}
}
