//go:build !purego

package cpu

import (
	"unsafe"

	"github.com/qgtc/qgtc/bmm"
)

// Which epilogue loops run: AVX-512 (16 lanes, every bit width) before
// AVX2 (8 lanes; the Go loops take 32-bit codes and the last n%8 bytes of
// quantizeRowBytes). Both take row tails with masked loads and stores.
// Tests and benchmarks switch them off to compare with the generic loops.
var (
	useEpilogueAVX2   = hasAVX2
	useEpilogueAVX512 = hasAVX512
	useEpilogueGFNI   = hasGFNI // the bit transposes of column packing, with AVX-512
)

// The flags of epilogueRowAVX2/AVX512 (cpu/_asm/epilogue mirrors them).
const (
	epColScale = 1 << iota
	epRowTerm
	epColConst
	epRowScale
	epColBias
	epReLU
	epConvert
)

// colPtr is the data of a column vector's first n entries (panicking as
// the generic loop would when it is short), or nil when the step is absent.
func colPtr(v []float32, n int) *float32 {
	if v == nil {
		return nil
	}
	return unsafe.SliceData(v[:n])
}

// epOperands are the data of ep's column vectors over n columns (nil when
// absent, panicking as the generic loop would when short) and the flags
// of the steps ep runs.
func epOperands(ep *bmm.Epilogue, n int) (cs, ct, cc, cb *float32, flags uint64) {
	if ep == nil {
		return nil, nil, nil, nil, 0
	}
	cs, cc, cb = colPtr(ep.ColScale, n), colPtr(ep.ColConst, n), colPtr(ep.ColBias, n)
	if ep.ColScale != nil {
		flags |= epColScale
	}
	if ep.RowTerm != nil {
		ct = unsafe.SliceData(ep.ColTerm[:n]) // a nil ColTerm panics here
		flags |= epRowTerm
	}
	if ep.ColConst != nil {
		flags |= epColConst
	}
	if ep.RowScale != nil {
		flags |= epRowScale
	}
	if ep.ColBias != nil {
		flags |= epColBias
	}
	if ep.ReLU {
		flags |= epReLU
	}
	return cs, ct, cc, cb, flags
}

// applyRowAsm runs the epilogue on row m (the kernels take the row tail
// with masked loads and stores) and reports whether it could; false means
// run the generic loop. c == nil means out holds float32 values in place
// (the tests' applyRowFloat).
func applyRowAsm(out []float32, c []int32, m int, ep *bmm.Epilogue) bool {
	n := len(out)
	if n == 0 || !useEpilogueAVX2 && !useEpilogueAVX512 {
		return false
	}
	cs, ct, cc, cb, flags := epOperands(ep, n)
	var cp *int32
	if c != nil {
		flags, cp = flags|epConvert, unsafe.SliceData(c[:n])
	}
	var rt, rs float32
	if flags&epRowTerm != 0 {
		rt = ep.RowTerm[m]
	}
	if flags&epRowScale != 0 {
		rs = ep.RowScale[m]
	}
	// Direct calls, not through a func variable: the kernels' noescape
	// lets callers keep their rows on the stack.
	if useEpilogueAVX512 {
		epilogueRowAVX512(unsafe.SliceData(out), cp, n, cs, ct, cc, cb, rt, rs, flags)
	} else {
		epilogueRowAVX2(unsafe.SliceData(out), cp, n, cs, ct, cc, cb, rt, rs, flags)
	}
	return true
}

// quantLimits are the clamp bounds of a bits-wide code.
func quantLimits(bits int) (maxf float32, top uint32) {
	top = uint32(uint64(1)<<bits - 1)
	return float32(top), top
}

// quantizeRowAsm runs quantizeRow on the head of the row that the assembly
// takes and returns its length.
func quantizeRowAsm(q []uint32, y []float32, rq bmm.Requant, bits int) int {
	n := len(y)
	if n == 0 || bits < 1 || bits > 32 {
		return 0
	}
	maxf, top := quantLimits(bits)
	switch {
	case useEpilogueAVX512:
		quantizeRowAVX512(unsafe.SliceData(q[:n]), unsafe.SliceData(y), n, rq.Scale, rq.Offset, maxf, top)
	case useEpilogueAVX2 && bits <= 31:
		quantizeRowAVX2(unsafe.SliceData(q[:n]), unsafe.SliceData(y), n, rq.Scale, rq.Offset, maxf, top)
	default:
		return 0
	}
	return n
}

// quantizeRowBytesAsm is quantizeRowAsm into bytes (bits <= 8).
func quantizeRowBytesAsm(q []uint8, y []float32, rq bmm.Requant, bits int) int {
	n := len(y)
	if useEpilogueAVX2 && !useEpilogueAVX512 {
		n &^= 7 // no byte-masked store: the Go loop takes the last n%8
	}
	if n == 0 || bits < 1 || bits > 8 {
		return 0
	}
	maxf, top := quantLimits(bits)
	switch {
	case useEpilogueAVX512:
		quantizeRowBytesAVX512(unsafe.SliceData(q[:n]), unsafe.SliceData(y), n, rq.Scale, rq.Offset, maxf, top)
	case useEpilogueAVX2:
		quantizeRowBytesAVX2(unsafe.SliceData(q[:n]), unsafe.SliceData(y), n, rq.Scale, rq.Offset, maxf, top)
	default:
		return 0
	}
	return n
}

// bitPlanes8 runs bitPlanes8AVX512 or bitPlanes8AVX2 (bitPlanes8Bytes* on
// byte codes; see there) after checking the bounds they rely on.
func bitPlanes8[T codes](out []uint64, q []T, chunks, nbits, ps, ws int) {
	if chunks <= 0 {
		return
	}
	if nbits < 1 || nbits > 8 {
		panic("cpu: bitPlanes8 takes 1..8 bits")
	}
	_ = q[64*chunks-1]
	_ = out[(nbits-1)*ps+(chunks-1)*ws]
	o, p := unsafe.SliceData(out), unsafe.Pointer(unsafe.SliceData(q))
	switch {
	case unsafe.Sizeof(q[0]) == 1 && useEpilogueAVX512:
		bitPlanes8BytesAVX512(o, (*uint8)(p), chunks, nbits, ps, ws)
	case unsafe.Sizeof(q[0]) == 1:
		bitPlanes8BytesAVX2(o, (*uint8)(p), chunks, nbits, ps, ws)
	case useEpilogueAVX512:
		bitPlanes8AVX512(o, (*uint32)(p), chunks, nbits, ps, ws)
	default:
		bitPlanes8AVX2(o, (*uint32)(p), chunks, nbits, ps, ws)
	}
}

// transposeTiles is transposeBits64 on each 64-word tile of a.
func transposeTiles(a []uint64) {
	if useEpilogueGFNI && useEpilogueAVX512 && len(a) >= 64 {
		transposeBits64GFNI(&a[0], len(a)/64)
		return
	}
	transposeTilesGeneric(a)
}

// epOne is the RowTerm or RowScale entry of every row where the epilogue
// has none (the block kernels read it with stride 0).
var epOne = float32(1)

// epRowsNarrow is the widest row the block kernels run on ymm registers
// under AVX-512 (one 8-lane vector a row does half a zmm's work); tests
// move it to run either kernel on every width.
var epRowsNarrow = 8

// rowsArgs are the epilogue operands of a block kernel call: column
// vectors (nil when absent), row m0's RowTerm and RowScale entries and
// their byte strides (epOne and 0 when absent), and the flags of the
// steps that run.
type rowsArgs struct {
	cs, ct, cc, cb *float32
	rt, rs         *float32
	rtStep, rsStep int
	flags          uint64
}

// newRowsArgs checks the epilogue against rows [m0, m0+rows) and n columns
// (panicking as the generic loop would) and collects its operands.
func newRowsArgs(ep *bmm.Epilogue, m0, rows, n int) rowsArgs {
	a := rowsArgs{rt: &epOne, rs: &epOne}
	a.cs, a.ct, a.cc, a.cb, a.flags = epOperands(ep, n)
	if a.flags&epRowTerm != 0 {
		a.rt, a.rtStep = unsafe.SliceData(ep.RowTerm[m0:m0+rows]), 4
	}
	if a.flags&epRowScale != 0 {
		a.rs, a.rsStep = unsafe.SliceData(ep.RowScale[m0:m0+rows]), 4
	}
	return a
}

// rowsISA picks the block kernel for rows of n columns: 2 for AVX-512 on
// zmm, 1 for AVX-512 on ymm, 0 for AVX2, -1 for none.
func rowsISA(n int) int {
	switch {
	case useEpilogueAVX512 && n > epRowsNarrow:
		return 2
	case useEpilogueAVX512:
		return 1
	case useEpilogueAVX2:
		return 0
	}
	return -1
}

// applyRowsAsm runs applyRows in one assembly call (rows, n >= 1, shapes
// checked) and reports whether it could.
func applyRowsAsm(out []float32, ldo int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue) bool {
	isa := rowsISA(n)
	if isa < 0 {
		return false
	}
	a := newRowsArgs(ep, m0, rows, n)
	applyRowsKernels[isa](unsafe.SliceData(out), ldo, unsafe.SliceData(c), ldc, rows, n, a.cs, a.ct, a.cc, a.cb, a.rt, a.rtStep, a.rs, a.rsStep, a.flags)
	return true
}

// quantizeRowsKernel is the signature of the re-quantizing block kernels.
type quantizeRowsKernel[T codes] = func(dst *T, ldd int, c *int32, ldc int, rows, n int, colScale, colTerm, colConst, colBias, rowTerm *float32, rtStep int, rowScale *float32, rsStep int, flags uint64, scale, offset float32, top uint32)

// The block kernels, indexed by rowsISA.
var (
	applyRowsKernels = [...]func(dst *float32, ldd int, c *int32, ldc int, rows, n int, colScale, colTerm, colConst, colBias, rowTerm *float32, rtStep int, rowScale *float32, rsStep int, flags uint64){
		applyRowsAVX2, applyRowsAVX512Y, applyRowsAVX512}
	quantizeRowsBytes = [...]quantizeRowsKernel[uint8]{
		applyQuantizeRowsAVX2, applyQuantizeRowsAVX512Y, applyQuantizeRowsAVX512}
	quantizeRowsDwords = [...]quantizeRowsKernel[uint32]{
		applyQuantizeRows32AVX2, applyQuantizeRows32AVX512Y, applyQuantizeRows32AVX512}
)

// applyQuantizeRowsAsm runs applyQuantizeRows in one assembly call (rows,
// n >= 1, shapes and bits checked) and reports whether it could.
func applyQuantizeRowsAsm(q []uint8, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) bool {
	return quantizeRowsAsm(&quantizeRowsBytes, rowsISA(n), q, ldq, c, ldc, m0, rows, n, ep, rq, bits)
}

// applyQuantizeRows32Asm is applyQuantizeRowsAsm into uint32 codes; AVX2
// takes bits <= 31 only.
func applyQuantizeRows32Asm(q []uint32, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) bool {
	isa := rowsISA(n)
	if isa == 0 && bits > 31 {
		return false
	}
	return quantizeRowsAsm(&quantizeRowsDwords, isa, q, ldq, c, ldc, m0, rows, n, ep, rq, bits)
}

// quantizeRowsAsm runs kernels[isa] on the block, or reports that there
// is none (isa < 0).
func quantizeRowsAsm[T codes](kernels *[3]quantizeRowsKernel[T], isa int, q []T, ldq int, c []int32, ldc int, m0, rows, n int, ep *bmm.Epilogue, rq bmm.Requant, bits int) bool {
	if isa < 0 {
		return false
	}
	a := newRowsArgs(ep, m0, rows, n)
	_, top := quantLimits(bits)
	kernels[isa](unsafe.SliceData(q), ldq, unsafe.SliceData(c), ldc, rows, n, a.cs, a.ct, a.cc, a.cb, a.rt, a.rtStep, a.rs, a.rsStep, a.flags,
		rq.Scale, rq.Offset, top)
	return true
}
