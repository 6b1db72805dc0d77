package cpu

import (
	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

//go:generate sh -c "cd _asm && go run ./epilogue -out ../epilogue_amd64.s -stubs ../epilogue_amd64.go -pkg cpu"

// The fused epilogue of the bit kernels: the float32 epilogue, the
// re-quantizer and the bit-plane packing of each block of output rows.
// Each function runs the assembly path cpuid allows (AVX-512 or AVX2; see
// epilogue_asm_amd64.go) on as much of the row as it takes and the generic
// loop of epilogue_generic.go on the rest; every path gives the same bits.

// applyRow is bmm.Epilogue.Apply over row m: out[j] = ep.Apply(c[j], m, j).
// out must hold len(c) values.
func applyRow(out []float32, c []int32, m int, ep *bmm.Epilogue) {
	out = out[:len(c)]
	done := applyRowAsm(out, c, m, ep)
	if done == 0 {
		applyRowGeneric(out, c, m, ep)
		return
	}
	if done < len(out) {
		cvtRowGeneric(out[done:], c[done:])
		applyTail(out, done, m, ep)
	}
}

// applyRowFloat is bmm.Epilogue.ApplyFloat over row m, in place: out[j] =
// ep.ApplyFloat(out[j], m, j), for callers whose products are float32 sums.
func applyRowFloat(out []float32, m int, ep *bmm.Epilogue) {
	if ep == nil {
		return
	}
	done := applyRowAsm(out, nil, m, ep)
	if done == 0 {
		applyRowFloatGeneric(out, m, ep)
		return
	}
	applyTail(out, done, m, ep)
}

// applyTail runs the epilogue on out[j0:], the few values past the last
// whole vector.
func applyTail(out []float32, j0, m int, ep *bmm.Epilogue) {
	for j := j0; j < len(out); j++ {
		out[j] = ep.ApplyFloat(out[j], m, j)
	}
}

// quantizeRow is bmm.Requant.Quantize over a row: q[j] = rq.Quantize(y[j], bits).
func quantizeRow(q []uint32, y []float32, rq bmm.Requant, bits int) {
	q = q[:len(y)]
	done := quantizeRowAsm(q, y, rq, bits)
	if done < len(y) {
		quantizeRowGeneric(q[done:], y[done:], rq, bits)
	}
}

// quantizeRowBytes is quantizeRow into bytes, for bits <= 8: q[j] =
// uint8(rq.Quantize(y[j], bits)). It panics when bits > 8.
func quantizeRowBytes(q []uint8, y []float32, rq bmm.Requant, bits int) {
	if bits > 8 {
		panic("cpu: quantizeRowBytes with more than 8 bits")
	}
	q = q[:len(y)]
	done := quantizeRowBytesAsm(q, y, rq, bits)
	if done < len(y) {
		quantizeRowBytesGeneric(q[done:], y[done:], rq, bits)
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
