package cpu

import (
	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// The reference loops of the fused epilogue, always compiled: the assembly
// paths are checked against them bit for bit, and they run the rows (or row
// tails) that the assembly does not take.

// applyRowFloatGeneric is bmm.Epilogue.ApplyFloat over row m, in place:
// out[j] = ep.ApplyFloat(out[j], m, j), one step at a time over the whole
// row so that each loop is simple. Each step rounds to float32 exactly as
// ApplyFloat does (the explicit conversions forbid fused multiply-adds), so
// the results are bit for bit the same.
func applyRowFloatGeneric(out []float32, m int, ep *bmm.Epilogue) {
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

// applyRowGeneric is bmm.Epilogue.Apply over row m: out[j] = ep.Apply(c[j], m, j).
func applyRowGeneric(out []float32, c []int32, m int, ep *bmm.Epilogue) {
	out = out[:len(c)]
	for j, v := range c {
		out[j] = float32(v)
	}
	applyRowFloatGeneric(out, m, ep)
}

// codes are the types of re-quantized codes: bytes (bits <= 8) or dwords.
type codes interface{ uint8 | uint32 }

// quantizeRowGeneric is bmm.Requant.Quantize over a row: q[j] =
// rq.Quantize(y[j], bits), for bits <= 8 when the codes are bytes. For
// 0 < v < 2^bits−1 the floor of v is its truncation, so no float64 round
// trip is needed.
func quantizeRowGeneric[T codes](q []T, y []float32, rq bmm.Requant, bits int) {
	q = q[:len(y)]
	top := T(uint64(1)<<bits - 1)
	maxq := float32(top)
	for j, x := range y {
		v := float32(x*rq.Scale) + rq.Offset
		switch {
		case !(v > 0): // also NaN
			q[j] = 0
		case v >= maxq:
			q[j] = top
		default:
			q[j] = T(v)
		}
	}
}

// epChunk is the column chunk of the generic block loops: their float32
// rows live on the stack.
const epChunk = 256

// epColumns is ep for columns [j0, j1): its column vectors start at j0
// (row vectors and ReLU as they are). It is ep itself when j0 == 0, else
// *sub, which the caller provides so that it can stay on the stack.
func epColumns(sub, ep *bmm.Epilogue, j0, j1 int) *bmm.Epilogue {
	if ep == nil || j0 == 0 {
		return ep
	}
	cut := func(v []float32) []float32 {
		if v == nil {
			return nil
		}
		return v[j0:j1]
	}
	*sub = *ep
	sub.ColScale, sub.ColTerm, sub.ColConst, sub.ColBias = cut(ep.ColScale), cut(ep.ColTerm), cut(ep.ColConst), cut(ep.ColBias)
	return sub
}

// applyRowsGeneric is applyRowGeneric over a block: out[r*ldo+j] =
// ep.Apply(c[r*ldc+j], m0+r, j) for r < rows, j < n.
func applyRowsGeneric(out []float32, ldo int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue) {
	for r := 0; r < rows; r++ {
		applyRowGeneric(out[r*ldo:r*ldo+n], c[r*ldc:r*ldc+n], m0+r, ep)
	}
}

// applyQuantizeRowsGeneric is applyRowGeneric then quantizeRowGeneric over
// a block: q[r*ldq+j] = rq.Quantize(ep.Apply(c[r*ldc+j], m0+r, j), bits).
func applyQuantizeRowsGeneric[T codes](q []T, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) {
	applyQuantizeRowsVia(false, q, ldq, c, ldc, m0, rows, n, ep, rq, bits)
}

// applyQuantizeRowsVia is applyQuantizeRowsGeneric with the epilogue of
// each row run by applyRow (its vector path where there is one) when vec
// is set, through a stack row of at most epChunk values. (A function
// argument instead of vec would move the row to the heap.)
func applyQuantizeRowsVia[T codes](vec bool, q []T, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) {
	var buf [epChunk]float32
	var sub bmm.Epilogue
	for j0 := 0; j0 < n; j0 += epChunk {
		j1 := min(n, j0+epChunk)
		cep, y := epColumns(&sub, ep, j0, j1), buf[:j1-j0]
		for r := 0; r < rows; r++ {
			if vec {
				applyRow(y, c[r*ldc+j0:r*ldc+j1], m0+r, cep)
			} else {
				applyRowGeneric(y, c[r*ldc+j0:r*ldc+j1], m0+r, cep)
			}
			quantizeRowGeneric(q[r*ldq+j0:r*ldq+j1], y, rq, bits)
		}
	}
}

// packBitBlockGeneric is packBitBlock for any width: it writes rows [m0, m0+rows) of an m×n matrix of values q
// (row-major, stride n) into dst's bit planes. m0 is a multiple of 64 and
// rows <= 64, so for a column-packed dst the block is one word per line and
// plane, owned by the caller alone.
func packBitBlockGeneric(dst *bittensor.Tensor, q []uint32, m0, rows, n int) {
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

// transposeTilesGeneric is transposeBits64 on each 64-word tile of a.
func transposeTilesGeneric(a []uint64) {
	for p := 0; p+64 <= len(a); p += 64 {
		transposeBits64((*[64]uint64)(a[p:]))
	}
}
