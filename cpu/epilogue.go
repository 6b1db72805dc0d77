package cpu

import (
	"fmt"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

//go:generate sh -c "cd _asm && go run ./epilogue -out ../epilogue_gen_amd64.s -stubs ../epilogue_gen_amd64.go -pkg cpu"

// The fused epilogue of the bit kernels: the float32 epilogue, the
// re-quantizer and the bit-plane packing of each block of output rows.
// Each function runs the assembly path cpuid allows (AVX-512 or AVX2; see
// epilogue_amd64.go) on as much of the row as it takes and the generic
// loop of epilogue_generic.go on the rest; every path gives the same bits.

// applyRow is bmm.Epilogue.Apply over row m: out[j] = ep.Apply(c[j], m, j).
// out must hold len(c) values.
func applyRow(out []float32, c []int32, m int, ep *bmm.Epilogue) {
	out = out[:len(c)]
	if !applyRowAsm(out, c, m, ep) {
		applyRowGeneric(out, c, m, ep)
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
		quantizeRowGeneric(q[done:], y[done:], rq, bits)
	}
}

// The block entry points run the epilogue (and the re-quantizer) of a
// block of rows in one assembly call, with no float32 row between the two:
// the rows of GNN inference are 10 to 64 columns wide, where a call per
// row and step costs more than the arithmetic. Row r of each operand
// starts at r times its stride (in elements); the rows are rows m0..
// m0+rows-1 of the product, for RowTerm and RowScale. Each panics on
// operands too short for the block, or strides below n.

// applyRows is applyRow over a block: out[r*ldo+j] = ep.Apply(c[r*ldc+j], m0+r, j)
// for r < rows, j < n.
func applyRows(out []float32, ldo int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue) {
	if !checkRows(len(out), ldo, len(c), ldc, rows, n) {
		return
	}
	if !applyRowsAsm(out, ldo, c, ldc, m0, rows, n, ep) {
		applyRowsGeneric(out, ldo, c, ldc, m0, rows, n, ep)
	}
}

// applyQuantizeRows is the fused epilogue and re-quantizer into bytes, for
// bits <= 8: q[r*ldq+j] = uint8(rq.Quantize(ep.Apply(c[r*ldc+j], m0+r, j), bits)),
// as applyRow then quantizeRowBytes give. It panics when bits is not 1..8.
func applyQuantizeRows(q []uint8, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) {
	if bits < 1 || bits > 8 {
		panic("cpu: applyQuantizeRows takes 1..8 bits")
	}
	if !checkRows(len(q), ldq, len(c), ldc, rows, n) {
		return
	}
	if !applyQuantizeRowsAsm(q, ldq, c, ldc, m0, rows, n, ep, rq, bits) {
		applyQuantizeRowsGeneric(q, ldq, c, ldc, m0, rows, n, ep, rq, bits)
	}
}

// applyQuantizeRows32 is applyQuantizeRows into uint32 codes of 1..32
// bits, as applyRow then quantizeRow give. Widths the block assembly does
// not take (32 bits with AVX2 only) run through applyRow.
func applyQuantizeRows32(q []uint32, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) {
	if bits < 1 || bits > 32 {
		panic("cpu: applyQuantizeRows32 takes 1..32 bits")
	}
	if !checkRows(len(q), ldq, len(c), ldc, rows, n) {
		return
	}
	if !applyQuantizeRows32Asm(q, ldq, c, ldc, m0, rows, n, ep, rq, bits) {
		// applyRow takes the epilogue's vector path where there is one;
		// no row re-quantizer of AVX2 takes those widths.
		applyQuantizeRowsVia(true, q, ldq, c, ldc, m0, rows, n, ep, rq, bits)
	}
}

// checkRows panics unless a block of rows×n values with strides ldd and
// ldc fits destination and source of lengths nd and nc; it reports
// whether the block has any value.
func checkRows(nd, ldd, nc, ldc, rows, n int) bool {
	if rows < 0 || n < 0 {
		panic(fmt.Sprintf("cpu: block of %d×%d values", rows, n))
	}
	if rows == 0 || n == 0 {
		return false
	}
	if ldd < n || ldc < n || nd < (rows-1)*ldd+n || nc < (rows-1)*ldc+n {
		panic(fmt.Sprintf("cpu: block of %d×%d values, strides %d and %d, in %d and %d values", rows, n, ldd, ldc, nd, nc))
	}
	return true
}

// packBitBlock writes rows [m0, m0+rows) of an m×n matrix of values q
// (row-major, stride n) into dst's bit planes. m0 is a multiple of 64 and
// rows <= 64, so for a column-packed dst the block is one word per line and
// plane, owned by the caller alone. Codes of up to 8 bits take the vector
// plane gather (bitPlanes8): a row-packed dst straight from each row, a
// column-packed one through the row planes of each 64×64 tile and a bit
// transpose (GFNI with AVX-512); wider codes take the generic loop.
func packBitBlock(dst *bittensor.Tensor, q []uint32, m0, rows, n int) {
	if dst.Bits() > 8 || !useEpilogueAVX2 {
		packBitBlockGeneric(dst, q, m0, rows, n)
		return
	}
	packBitBlockOf(dst, q, m0, rows, n)
}

// packBitBlockBytes is packBitBlock for byte codes: a quarter of the
// memory, and one load a chunk of 64 codes in the plane gather. It needs
// the vector gather (useEpilogueAVX2) and codes of at most 8 bits, and panics
// without them: callers choose it only then.
func packBitBlockBytes(dst *bittensor.Tensor, q []uint8, m0, rows, n int) {
	if dst.Bits() > 8 || !useEpilogueAVX2 {
		panic("cpu: packBitBlockBytes needs AVX2 and codes of at most 8 bits")
	}
	packBitBlockOf(dst, q, m0, rows, n)
}

// packBitBlockOf is packBitBlock's vector path, for codes of up to 8 bits
// held in bytes or in dwords.
func packBitBlockOf[T codes](dst *bittensor.Tensor, q []T, m0, rows, n int) {
	nbits := dst.Bits()
	words, pw, lw := dst.Words(), dst.PlaneWords(), dst.LineWords()
	full := n / 64
	var pad [64]T // a partial chunk, zero-extended
	if dst.Packing() == bittensor.ByRows {
		for r := 0; r < rows; r++ {
			line := words[(m0+r)*lw:]
			if full > 0 {
				bitPlanes8(line, q[r*n:(r+1)*n], full, nbits, pw, 1)
			}
			if n > 64*full {
				clear(pad[copy(pad[:], q[r*n+64*full:(r+1)*n]):])
				bitPlanes8(line[full:], pad[:], 1, nbits, pw, 1)
			}
		}
		return
	}
	// tile[p*64+r] is word (plane p, row r) of a 64×64 tile, then, after
	// the transpose, word (plane p, column c).
	var tile [8 * 64]uint64
	wb := m0 / 64
	for c0 := 0; c0 < n; c0 += 64 {
		cols := min(64, n-c0)
		if rows < 64 {
			clear(tile[:])
		}
		for r := 0; r < rows; r++ {
			src := q[r*n+c0 : r*n+c0+cols]
			if cols < 64 {
				clear(pad[copy(pad[:], src):])
				src = pad[:]
			}
			bitPlanes8(tile[r:], src, 1, nbits, 64, 1)
		}
		transposeTiles(tile[:64*nbits])
		for p := 0; p < nbits; p++ {
			t, plane := tile[64*p:64*p+cols], words[p*pw:]
			for c, v := range t {
				plane[(c0+c)*lw+wb] = v
			}
		}
	}
}

// applyQuantizePackRows is applyQuantizeRows32 then packBitBlock: rows
// [m0, m0+rows) of ep(c) (row r at c[r*ldc:]) re-quantized with rq to
// dst.Bits() bits into dst's planes, under packBitBlock's conditions on m0
// and rows. buf is the caller's scratch, grown as needed. Codes of up to 8
// bits go through bytes when the vector plane gather runs.
func applyQuantizePackRows(dst *bittensor.Tensor, buf *[]uint32, c []int32, ldc, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant) {
	bits := dst.Bits()
	if bits <= 8 && useEpilogueAVX2 {
		*buf = growSlice(*buf, (rows*n+3)/4)
		qb := unsafe.Slice((*uint8)(unsafe.Pointer(unsafe.SliceData(*buf))), rows*n)
		applyQuantizeRows(qb, n, c, ldc, m0, rows, n, ep, rq, bits)
		packBitBlockBytes(dst, qb, m0, rows, n)
		return
	}
	*buf = growSlice(*buf, rows*n)
	q := (*buf)[:rows*n]
	applyQuantizeRows32(q, n, c, ldc, m0, rows, n, ep, rq, bits)
	packBitBlock(dst, q, m0, rows, n)
}

// transposeBits64 transposes a 64×64 bit matrix in place: bit c of a[r]
// becomes bit r of a[c]. Each of the six rounds swaps the off-diagonal
// j×j blocks of every 2j×2j block (Hacker's Delight 7-3).
func transposeBits64(a *[64]uint64) {
	m := uint64(0x00000000ffffffff)
	for j := uint(32); j != 0; j >>= 1 {
		for b := uint(0); b < 64; b += 2 * j {
			for k := b; k < b+j; k++ {
				x, y := &a[k&63], &a[(k+j)&63] // the masks drop the bounds checks
				t := (*x>>(j&63) ^ *y) & m
				*y ^= t
				*x ^= t << (j & 63)
			}
		}
		m ^= m << (j >> 1 & 63)
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
