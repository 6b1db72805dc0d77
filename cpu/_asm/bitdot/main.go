// Command bitdot generates the AND+popcount kernels of cpu's bit product:
// go run ./bitdot -out ../bitdot_gen_amd64.s -stubs ../bitdot_gen_amd64.go -pkg cpu
package main

import (
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const signature = "func(out *int32, ldo int, a *uint64, lda int, aps int, abits int, b *uint64, ldb int, bps int, bbits int, kw int, ncols int, nrows int)"

func main() {
	ConstraintExpr("!purego")
	lut := GLOBL("popcnt_nibble_lut", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(bits.OnesCount8(uint8(i%16))))
	}
	low := GLOBL("popcnt_low_nibble", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(0x0f))
	}
	rowAVX2(lut, low)
	rowAVX512()
	markAVX2()
	row4AVX512()
	row4AVX2(lut, low)
	vertKernels(lut, low)
	chunkBitsAVX512()
	addChain()
	Generate()
}

// reduce4 adds the four qword sums of each of q[0..3] (ymm, each sum < 2^32)
// to the four 32-bit integers at out. It clobbers q. With evex it uses only
// EVEX-encodable instructions, so any of the 32 vector registers will do.
func reduce4(q [4]VecVirtual, out Register, evex bool) {
	por := func(b, a, dst VecVirtual) { VPOR(b, a, dst) }
	lanes := func(imm uint8, b, a, dst VecVirtual) { VPERM2I128(U8(imm), b, a, dst) }
	if evex {
		// VSHUFI64X2 on ymm: bit 0 picks a's lane, bit 1 b's.
		por = func(b, a, dst VecVirtual) { VPORQ(b, a, dst) }
		lanes = func(imm uint8, b, a, dst VecVirtual) {
			VSHUFI64X2(U8(map[uint8]uint8{0x20: 0, 0x31: 3}[imm]), b, a, dst)
		}
	}
	VPSLLQ(U8(32), q[1], q[1])
	por(q[1], q[0], q[0]) // dwords: q0 sums | q1 sums
	VPSLLQ(U8(32), q[3], q[3])
	por(q[3], q[2], q[2])
	u := YMM()
	lanes(0x20, q[2], q[0], u) // [q0.lo, q2.lo]
	lanes(0x31, q[2], q[0], q[1])
	VPADDQ(q[1], u, u)
	VPSHUFD(U8(0x4e), u, q[1])
	VPADDQ(q[1], u, u) // qword 0: (Σq0, Σq1), qword 2: (Σq2, Σq3)
	VPERMQ(U8(0x08), u, u)
	r := u.AsX()
	VPADDD(Mem{Base: out}, r, r)
	if evex {
		VMOVDQU32(r, Mem{Base: out})
	} else {
		VMOVDQU(r, Mem{Base: out})
	}
}

// reduce1 adds the four qword sums of q (ymm) to the 32-bit integer at
// out; evex as for reduce4.
func reduce1(q VecVirtual, out Register, evex bool) {
	h := XMM()
	if evex {
		VEXTRACTI32X4(U8(1), q, h)
	} else {
		VEXTRACTI128(U8(1), q, h)
	}
	VPADDQ(h, q.AsX(), h)
	l := XMM()
	VPSHUFD(U8(0x4e), h, l)
	VPADDQ(l, h, h)
	s := GP32()
	VMOVD(h, s)
	ADDL(s, Mem{Base: out})
}

// nibbleCounts emits the vpshufb popcount (Muła et al.) of x & src: t
// and h hold, per byte, the bit counts of its low and high nibble (mask:
// 0x0f bytes, table: the nibble counts).
func nibbleCounts(x VecVirtual, src Op, mask, table VecVirtual) (t, h VecVirtual) {
	t, h = YMM(), YMM()
	VPAND(src, x, t)
	VPSRLW(U8(4), t, h)
	VPAND(mask, t, t)
	VPAND(mask, h, h)
	VPSHUFB(t, table, t)
	VPSHUFB(h, table, h)
	return t, h
}

// zeroed allocates n vector registers (zmm with evex, else ymm), each
// cleared.
func zeroed(n int, evex bool) []VecVirtual {
	v := make([]VecVirtual, n)
	for l := range v {
		if evex {
			v[l] = ZMM()
			VPXORQ(v[l], v[l], v[l])
		} else {
			v[l] = YMM()
			VPXOR(v[l], v[l], v[l])
		}
	}
	return v
}

// addStride adds the int parameter param, shifted left by shift (a stride
// in elements to one in bytes), to dst.
func addStride(dst Op, param string, shift uint8) {
	s := Load(Param(param), GP64())
	SHLQ(U8(shift), s)
	ADDQ(s, dst)
}

// nextPlane closes a loop over bit planes: ptr moves on by the plane
// stride param (in words), the weight shift sh goes up by one, and the
// loop repeats at label until count reaches zero.
func nextPlane(ptr Op, param string, sh, count Op, label string) {
	addStride(ptr, param, 3)
	INCQ(sh)
	DECQ(count)
	JNZ(LabelRef(label))
}

// nextRow closes a loop over rows: the row pointers into a and out move
// on by lda words and ldo int32s, and the loop goes back to label.
func nextRow(aRow, outRow, rows Op, label string) {
	addStride(aRow, "lda", 3)
	addStride(outRow, "ldo", 2)
	DECQ(rows)
	JMP(LabelRef(label))
}

// The row kernels compute, for nrows rows of A (row r at a + r*lda words)
// with abits planes (plane i of a row at +i*aps words) and ncols columns of
// B with bbits planes each,
//
//	out[r*ldo+n] += Σ_i Σ_j popcount(A_i[r][0:kw] & B_j[n][0:kw]) << (i+j)
//
// where B_j[n] starts at b + j*bps + n*ldb words and kw is a multiple of 4.
// Four columns at a time share each load of A; the plane weights are
// applied to the 64-bit partial sums, so each output is reduced
// horizontally once for all plane pairs.

// colLoop emits the loop over groups of cols columns (4, then 1 for the
// rest): for each plane pair (i, j), body(ai, bl, shiftX, q) accumulates
// the popcounts of A_i against the cols lines bl, shifted by i+j, into q
// (cols accumulators, zmm with evex, else ymm); then q is reduced into
// out. Values used once per group or plane of A
// live on the stack to leave registers to the inner loop.
func colLoop(prefix string, cols int, st stack, b, out, nc Register, evex bool,
	body func(ai Register, bl []Register, shiftX VecVirtual, q []VecVirtual), reduce func(q []VecVirtual, out Register)) {
	Label(prefix + "_group")
	if cols > 1 {
		CMPQ(nc, U8(cols))
		JL(LabelRef(prefix + "_done"))
	} else {
		TESTQ(nc, nc)
		JZ(LabelRef(prefix + "_done"))
	}
	q := zeroed(cols, evex)
	ai := GP64()
	MOVQ(st.aRow, ai)
	MOVQ(U32(0), st.shBase)
	ic := Load(Param("abits"), GP64())
	MOVQ(ic, st.ic)
	Label(prefix + "_planeA")
	bj := GP64()
	MOVQ(b, bj)
	jc := Load(Param("bbits"), GP64())
	sh := GP64()
	MOVQ(st.shBase, sh)
	Label(prefix + "_planeB")
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(3), ldb)
	bl := []Register{bj}
	if cols == 4 {
		b1, b2, b3 := GP64(), GP64(), GP64()
		LEAQ(Mem{Base: bj, Index: ldb, Scale: 1}, b1)
		LEAQ(Mem{Base: bj, Index: ldb, Scale: 2}, b2)
		LEAQ(Mem{Base: b1, Index: ldb, Scale: 2}, b3)
		bl = append(bl, b1, b2, b3)
	}
	shx := XMM()
	VMOVQ(sh, shx)
	body(ai, bl, shx, q)
	nextPlane(bj, "bps", sh, jc, prefix+"_planeB")
	nextPlane(ai, "aps", st.shBase, st.ic, prefix+"_planeA")
	reduce(q, out)
	ADDQ(U8(4*cols), out)
	ldb2 := Load(Param("ldb"), GP64())
	SHLQ(U8(3), ldb2)
	if cols == 4 {
		SHLQ(U8(2), ldb2)
	}
	ADDQ(ldb2, b)
	SUBQ(U8(cols), nc)
	JMP(LabelRef(prefix + "_group"))
	Label(prefix + "_done")
}

// stack holds the row kernels' rarely used values.
type stack struct{ out, ncols, ic, shBase, aRow, outRow, rows, jc, sh Mem }

func newStack() stack {
	st := stack{out: AllocLocal(8), ncols: AllocLocal(8), ic: AllocLocal(8), shBase: AllocLocal(8),
		aRow: AllocLocal(8), outRow: AllocLocal(8), rows: AllocLocal(8), jc: AllocLocal(8), sh: AllocLocal(8)}
	MOVQ(Load(Param("out"), GP64()), st.outRow)
	MOVQ(Load(Param("a"), GP64()), st.aRow)
	MOVQ(Load(Param("nrows"), GP64()), st.rows)
	return st
}

// rowLoop emits the loop over the rows: per row, the column loops run
// from the first column with the row's A and out pointers.
func rowLoop(prefix string, st stack, cols func(b, out, nc Register)) {
	Label(prefix + "_row")
	CMPQ(st.rows, U8(0))
	JE(LabelRef(prefix + "_rowsdone"))
	out := GP64()
	MOVQ(st.outRow, out)
	nc := Load(Param("ncols"), GP64())
	b := Load(Param("b"), GP64())
	cols(b, out, nc)
	nextRow(st.aRow, st.outRow, st.rows, prefix+"_row")
	Label(prefix + "_rowsdone")
}

// rowAVX2: vpshufb nibble popcount (Muła et al.), byte counts summed with
// vpsadbw every <= 31 steps (a byte gains at most 8 per step).
func rowAVX2(lut, low Mem) {
	TEXT("popcntRowAVX2", NOSPLIT, signature)
	Pragma("noescape")
	Doc("popcntRowAVX2 is popcntRowGeneric: out[r*ldo+n] += Σ_i Σ_j popcount(a[r*lda+i*aps:][:kw] & b[j*bps+n*ldb:][:kw]) << (i+j)",
		"for r < nrows, n < ncols, i < abits, j < bbits; kw a multiple of 4. 1×4 register blocking, vpshufb nibble popcount.")
	st := newStack()
	mask, table, zero := YMM(), YMM(), YMM()
	VMOVDQU(low, mask)
	VMOVDQU(lut, table)
	VPXOR(zero, zero, zero)

	popAdd := func(x VecVirtual, src Mem, c VecVirtual) {
		t, h := nibbleCounts(x, src, mask, table)
		VPADDB(t, c, c)
		VPADDB(h, c, c)
	}
	body := func(prefix string) func(a Register, bl []Register, shx VecVirtual, q []VecVirtual) {
		return func(a Register, bl []Register, shx VecVirtual, q []VecVirtual) {
			off, rem, n := GP64(), GP64(), GP64()
			XORQ(off, off)
			Load(Param("kw"), rem)
			SHRQ(U8(2), rem) // 256-bit steps
			Label(prefix + "_chunk")
			TESTQ(rem, rem)
			JZ(LabelRef(prefix + "_chunkdone"))
			MOVQ(U32(31), n)
			CMPQ(rem, n)
			CMOVQLT(rem, n)
			SUBQ(n, rem)
			c := zeroed(len(bl), false)
			Label(prefix + "_inner")
			x := YMM()
			VMOVDQU(Mem{Base: a, Index: off, Scale: 1}, x)
			for l := range c {
				popAdd(x, Mem{Base: bl[l], Index: off, Scale: 1}, c[l])
			}
			ADDQ(U8(32), off)
			DECQ(n)
			JNZ(LabelRef(prefix + "_inner"))
			for l := range c {
				VPSADBW(zero, c[l], c[l])
				VPSLLQ(shx, c[l], c[l])
				VPADDQ(c[l], q[l], q[l])
			}
			JMP(LabelRef(prefix + "_chunk"))
			Label(prefix + "_chunkdone")
		}
	}
	rowLoop("avx2", st, func(b, out, nc Register) {
		colLoop("avx2x4", 4, st, b, out, nc, false, body("avx2x4"), func(q []VecVirtual, out Register) { reduce4([4]VecVirtual(q), out, false) })
		colLoop("avx2x1", 1, st, b, out, nc, false, body("avx2x1"), func(q []VecVirtual, out Register) { reduce1(q[0], out, false) })
	})
	VZEROUPPER()
	RET()
}

// colLoop8 is the AVX-512 kernel's main column loop: eight columns per
// group, so each load of A serves eight, and a reduction of eight
// accumulators that costs under three instructions per output (pack
// pairs of sums into dwords, fold the 128-bit lanes of two registers at
// a time, permute the totals into column order).
func colLoop8(st stack, b, out, nc Register, idx VecVirtual) {
	Label("avx512x8_group")
	CMPQ(nc, U8(8))
	JL(LabelRef("avx512x8_done"))
	q := [8]VecVirtual(zeroed(8, true))
	ai := GP64()
	MOVQ(st.aRow, ai)
	MOVQ(U32(0), st.shBase)
	ic := Load(Param("abits"), GP64())
	MOVQ(ic, st.ic)
	Label("avx512x8_planeA")
	bj := GP64()
	MOVQ(b, bj)
	jc := Load(Param("bbits"), GP64())
	MOVQ(jc, st.jc)
	sh0 := GP64()
	MOVQ(st.shBase, sh0)
	MOVQ(sh0, st.sh)
	Label("avx512x8_planeB")
	ldb, ldb3, pa, p0, p4, n := GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("ldb"), ldb)
	SHLQ(U8(3), ldb)
	LEAQ(Mem{Base: ldb, Index: ldb, Scale: 2}, ldb3)
	MOVQ(ai, pa)
	MOVQ(bj, p0)
	LEAQ(Mem{Base: bj, Index: ldb, Scale: 4}, p4)
	cols := [8]Mem{{Base: p0}, {Base: p0, Index: ldb, Scale: 1}, {Base: p0, Index: ldb, Scale: 2}, {Base: p0, Index: ldb3, Scale: 1},
		{Base: p4}, {Base: p4, Index: ldb, Scale: 1}, {Base: p4, Index: ldb, Scale: 2}, {Base: p4, Index: ldb3, Scale: 1}}
	t := zeroed(8, true)
	Load(Param("kw"), n)
	SHRQ(U8(3), n) // 512-bit steps
	JZ(LabelRef("avx512x8_tail"))
	Label("avx512x8_inner")
	x := ZMM()
	VMOVDQU64(Mem{Base: pa}, x)
	for l := range t {
		u := ZMM()
		VPANDQ(cols[l], x, u)
		VPOPCNTQ(u, u)
		VPADDQ(u, t[l], t[l])
	}
	ADDQ(U8(64), pa)
	ADDQ(U8(64), p0)
	ADDQ(U8(64), p4)
	DECQ(n)
	JNZ(LabelRef("avx512x8_inner"))
	Label("avx512x8_tail")
	kw := Load(Param("kw"), GP64())
	TESTQ(U32(4), kw)
	JZ(LabelRef("avx512x8_weigh"))
	xt := ZMM()
	VMOVDQU64(Mem{Base: pa}, xt.AsY())
	for l := range t {
		u := ZMM()
		// A 256-bit op zeroes the upper half, so adding the zmm is right.
		VPANDQ(cols[l], xt.AsY(), u.AsY())
		VPOPCNTQ(u.AsY(), u.AsY())
		VPADDQ(u, t[l], t[l])
	}
	Label("avx512x8_weigh")
	sh := GP64()
	MOVQ(st.sh, sh)
	shx := XMM()
	VMOVQ(sh, shx)
	for l := range t {
		VPSLLQ(shx, t[l], t[l])
		VPADDQ(t[l], q[l], q[l])
	}
	nextPlane(bj, "bps", st.sh, st.jc, "avx512x8_planeB")
	nextPlane(ai, "aps", st.shBase, st.ic, "avx512x8_planeA")
	reduce8(q, idx, out)
	ADDQ(U8(32), out)
	addStride(b, "ldb", 6) // 8 columns
	SUBQ(U8(8), nc)
	JMP(LabelRef("avx512x8_group"))
	Label("avx512x8_done")
}

// reduce8 adds the eight qword sums of each of q[0..7] (zmm, each < 2^32)
// to the eight 32-bit integers at out. It clobbers q.
func reduce8(q [8]VecVirtual, idx VecVirtual, out Register) {
	for k := 0; k < 4; k++ {
		VPSLLQ(U8(32), q[2*k+1], q[2*k+1])
		VPORQ(q[2*k+1], q[2*k], q[2*k]) // qword: column 2k | column 2k+1
	}
	var w [2]VecVirtual
	for h := 0; h < 2; h++ {
		lo, hi := q[4*h], q[4*h+2]
		u, v := ZMM(), ZMM()
		VSHUFI64X2(U8(0x44), hi, lo, u) // lanes 0,1 of lo, then of hi
		VSHUFI64X2(U8(0xee), hi, lo, v) // lanes 2,3 of lo, then of hi
		VPADDQ(v, u, u)
		w[h] = u
	}
	u, v := ZMM(), ZMM()
	VSHUFI64X2(U8(0x88), w[1], w[0], u) // lane 0 and 2 of each
	VSHUFI64X2(U8(0xdd), w[1], w[0], v) // lane 1 and 3 of each
	VPADDQ(v, u, u)                     // lane k: columns 2k, 2k+1, two partial qwords
	t := ZMM()
	VPSHUFD(U8(0x4e), u, t)
	VPADDQ(t, u, u) // both qwords of lane k: (Σ column 2k, Σ column 2k+1)
	VPERMD(u, idx, u)
	r := u.AsY()
	VPADDD(Mem{Base: out}, r, r)
	VMOVDQU32(r, Mem{Base: out})
}

// rowAVX512: VPOPCNTQ on 512-bit steps, a 256-bit step for a kw%8 == 4 tail.
func rowAVX512() {
	TEXT("popcntRowAVX512", NOSPLIT, signature)
	Pragma("noescape")
	Doc("popcntRowAVX512 is popcntRowGeneric with AVX-512 VPOPCNTDQ: out[r*ldo+n] += Σ_i Σ_j popcount(a[r*lda+i*aps:][:kw] & b[j*bps+n*ldb:][:kw]) << (i+j)",
		"for r < nrows, n < ncols, i < abits, j < bbits; kw a multiple of 4. 1×4 register blocking.")
	st := newStack()

	body := func(prefix string) func(a Register, bl []Register, shx VecVirtual, q []VecVirtual) {
		return func(a Register, bl []Register, shx VecVirtual, q []VecVirtual) {
			off, n, tail := GP64(), GP64(), GP64()
			XORQ(off, off)
			Load(Param("kw"), n)
			MOVQ(n, tail)
			ANDQ(U8(4), tail)
			SHRQ(U8(3), n) // 512-bit steps
			t := zeroed(len(bl), true)
			TESTQ(n, n)
			JZ(LabelRef(prefix + "_tail"))
			Label(prefix + "_inner")
			x := ZMM()
			VMOVDQU64(Mem{Base: a, Index: off, Scale: 1}, x)
			for l := range t {
				u := ZMM()
				VPANDQ(Mem{Base: bl[l], Index: off, Scale: 1}, x, u)
				VPOPCNTQ(u, u)
				VPADDQ(u, t[l], t[l])
			}
			ADDQ(U8(64), off)
			DECQ(n)
			JNZ(LabelRef(prefix + "_inner"))
			Label(prefix + "_tail")
			TESTQ(tail, tail)
			JZ(LabelRef(prefix + "_weigh"))
			xt := ZMM()
			VMOVDQU64(Mem{Base: a, Index: off, Scale: 1}, xt.AsY())
			for l := range t {
				u := ZMM()
				// A 256-bit op zeroes the upper half, so adding the zmm is right.
				VPANDQ(Mem{Base: bl[l], Index: off, Scale: 1}, xt.AsY(), u.AsY())
				VPOPCNTQ(u.AsY(), u.AsY())
				VPADDQ(u, t[l], t[l])
			}
			Label(prefix + "_weigh")
			for l := range t {
				VPSLLQ(shx, t[l], t[l])
				VPADDQ(t[l], q[l], q[l])
			}
		}
	}
	toY := func(q []VecVirtual) []VecVirtual {
		y := make([]VecVirtual, len(q))
		for l := range q {
			h := YMM()
			VEXTRACTI64X4(U8(1), q[l], h)
			VPADDQ(h, q[l].AsY(), h)
			y[l] = h
		}
		return y
	}
	perm := GLOBL("row8_perm", RODATA|NOPTR)
	for k, v := range []uint32{0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0} {
		DATA(4*k, U32(v))
	}
	idx := ZMM()
	VMOVDQU32(perm, idx)
	rowLoop("avx512", st, func(b, out, nc Register) {
		colLoop8(st, b, out, nc, idx)
		colLoop("avx512x4", 4, st, b, out, nc, true, body("avx512x4"), func(q []VecVirtual, out Register) { reduce4([4]VecVirtual(toY(q)), out, true) })
		colLoop("avx512x1", 1, st, b, out, nc, true, body("avx512x1"), func(q []VecVirtual, out Register) { reduce1(toY(q)[0], out, true) })
	})
	VZEROUPPER()
	RET()
}

// markAVX2 is the zero-chunk mask: one VPTEST per 256-bit chunk, the
// results shifted into 64-bit mask words without branches.
func markAVX2() {
	TEXT("markRowsAVX2", NOSPLIT, "func(mask *uint64, mw int, a *uint64, lda int, nrows int, nchunks int)")
	Pragma("noescape")
	Doc("markRowsAVX2 is markRowsGeneric: for r < nrows, bit c of mask[r*mw:] is ORed with",
		"(a[r*lda+4c : r*lda+4c+4] != 0), for c < nchunks.")
	mask := Load(Param("mask"), GP64())
	a := Load(Param("a"), GP64())
	nrows := Load(Param("nrows"), GP64())
	Label("mark_row")
	TESTQ(nrows, nrows)
	JZ(LabelRef("mark_done"))
	m, line := GP64(), GP64()
	MOVQ(mask, m)
	MOVQ(a, line)
	n := Load(Param("nchunks"), GP64())
	Label("mark_word")
	TESTQ(n, n)
	JZ(LabelRef("mark_rowdone"))
	cnt := GP64()
	MOVQ(U32(64), cnt)
	CMPQ(n, cnt)
	CMOVQLT(n, cnt)
	SUBQ(cnt, n)
	acc := GP64()
	XORQ(acc, acc)
	XORQ(RCX, RCX)
	Label("mark_chunk")
	x := YMM()
	VMOVDQU(Mem{Base: line}, x)
	t := GP64()
	XORQ(t, t)
	VPTEST(x, x)
	SETNE(t.As8())
	SHLQ(CL, t)
	ORQ(t, acc)
	ADDQ(U8(32), line)
	INCQ(RCX)
	CMPQ(RCX, cnt)
	JL(LabelRef("mark_chunk"))
	ORQ(acc, Mem{Base: m})
	ADDQ(U8(8), m)
	JMP(LabelRef("mark_word"))
	Label("mark_rowdone")
	addStride(mask, "mw", 3)
	addStride(a, "lda", 3)
	DECQ(nrows)
	JMP(LabelRef("mark_row"))
	Label("mark_done")
	VZEROUPPER()
	RET()
}

// row4AVX512 is the row kernel for K = 256 bits (kw = 4 words: the default
// padding of any K <= 256, as in a GNN layer's update product, and any row
// whose non-zero chunks form runs of one, as in a block-diagonal
// adjacency): a 512-bit register holds two columns, A's line is broadcast
// to both halves, and four registers cover eight columns, so each
// VPOPCNTQ does two dot products. Columns back to back (ldb = 4) load with
// one instruction, others with a load and an insert.
func row4AVX512() {
	perm := GLOBL("row4_perm", RODATA|NOPTR)
	for k, v := range []uint32{0, 8, 1, 9, 16, 24, 17, 25, 0, 0, 0, 0, 0, 0, 0, 0} {
		DATA(4*k, U32(v))
	}
	TEXT("popcntRow4AVX512", NOSPLIT, "func(out *int32, ldo int, a *uint64, lda int, aps int, abits int, b *uint64, ldb int, bps int, bbits int, ncols int, nrows int)")
	Pragma("noescape")
	Doc("popcntRow4AVX512 is popcntRowGeneric for kw = 4 and ncols a multiple of 8:",
		"out[r*ldo+n] += Σ_i Σ_j popcount(a[r*lda+i*aps:][:4] & b[j*bps+n*ldb:][:4]) << (i+j).")
	idx := ZMM()
	VMOVDQU32(perm, idx)
	ldb := Load(Param("ldb"), GP64())
	CMPQ(ldb, U8(4))
	JNE(LabelRef("r4s_start"))
	row4Loops("r4c", false, idx)
	Label("r4s_start")
	row4Loops("r4s", true, idx)
}

// row4Loops emits popcntRow4AVX512's loops, for columns back to back or
// strided, ending in RET.
func row4Loops(prefix string, strided bool, idx VecVirtual) {
	loadA := func(ai Register) VecVirtual {
		x := ZMM()
		VBROADCASTI64X4(Mem{Base: ai}, x)
		return x
	}
	pair := func(x VecVirtual, bj Register, shx VecVirtual, q []VecVirtual) {
		var cols [8]Mem
		if strided {
			ldb, ldb3, p4 := GP64(), GP64(), GP64()
			Load(Param("ldb"), ldb)
			SHLQ(U8(3), ldb)
			LEAQ(Mem{Base: ldb, Index: ldb, Scale: 2}, ldb3)
			LEAQ(Mem{Base: bj, Index: ldb, Scale: 4}, p4)
			cols = [8]Mem{{Base: bj}, {Base: bj, Index: ldb, Scale: 1}, {Base: bj, Index: ldb, Scale: 2}, {Base: bj, Index: ldb3, Scale: 1},
				{Base: p4}, {Base: p4, Index: ldb, Scale: 1}, {Base: p4, Index: ldb, Scale: 2}, {Base: p4, Index: ldb3, Scale: 1}}
		}
		for l := range q {
			u := ZMM()
			if strided {
				VMOVDQU(cols[2*l], u.AsY())
				VINSERTI64X4(U8(1), cols[2*l+1], u, u)
				VPANDQ(x, u, u)
			} else {
				VPANDQ(Mem{Base: bj, Disp: 64 * l}, x, u)
			}
			VPOPCNTQ(u, u)
			VPSLLQ(shx, u, u)
			VPADDQ(u, q[l], q[l])
		}
	}
	finish := func(q []VecVirtual, out, b Register) {
		// q[l] holds columns 2l (low half) and 2l+1 (high half), four
		// partial sums each (< 2^32). Pack pairs into dwords, sum within
		// each half, then gather the eight totals in column order.
		VPSLLQ(U8(32), q[1], q[1])
		VPORQ(q[1], q[0], q[0])
		VPSLLQ(U8(32), q[3], q[3])
		VPORQ(q[3], q[2], q[2])
		for _, z := range []VecVirtual{q[0], q[2]} {
			t := ZMM()
			VPSHUFD(U8(0x4e), z, t)
			VPADDQ(t, z, z)
			VSHUFI64X2(U8(0xb1), z, z, t)
			VPADDQ(t, z, z)
		}
		VPERMT2D(q[2], idx, q[0])
		r := q[0].AsY()
		VPADDD(Mem{Base: out}, r, r)
		VMOVDQU(r, Mem{Base: out})
		ADDQ(U8(32), out)
		if strided {
			addStride(b, "ldb", 6) // 8 columns
		} else {
			ADDQ(U32(256), b)
		}
	}
	row4Kernel(prefix, 8, true, loadA, pair, finish)
}

// row4AVX2 is the row kernel for K = 256 bits (kw = 4 words, see
// row4AVX512): one 256-bit step per plane pair, so no byte counters to
// flush, straight-line code for four columns per group.
func row4AVX2(lut, low Mem) {
	TEXT("popcntRow4AVX2", NOSPLIT, "func(out *int32, ldo int, a *uint64, lda int, aps int, abits int, b *uint64, ldb int, bps int, bbits int, ncols int, nrows int)")
	Pragma("noescape")
	Doc("popcntRow4AVX2 is popcntRowGeneric for kw = 4 and ncols a multiple of 4:",
		"out[r*ldo+n] += Σ_i Σ_j popcount(a[r*lda+i*aps:][:4] & b[j*bps+n*ldb:][:4]) << (i+j).")
	mask, table, zero := YMM(), YMM(), YMM()
	VMOVDQU(low, mask)
	VMOVDQU(lut, table)
	VPXOR(zero, zero, zero)
	loadA := func(ai Register) VecVirtual {
		x := YMM()
		VMOVDQU(Mem{Base: ai}, x)
		return x
	}
	pair := func(x VecVirtual, bj Register, shx VecVirtual, q []VecVirtual) {
		ldb, ldb3 := GP64(), GP64()
		Load(Param("ldb"), ldb)
		SHLQ(U8(3), ldb)
		LEAQ(Mem{Base: ldb, Index: ldb, Scale: 2}, ldb3)
		cols := []Mem{{Base: bj}, {Base: bj, Index: ldb, Scale: 1}, {Base: bj, Index: ldb, Scale: 2}, {Base: bj, Index: ldb3, Scale: 1}}
		for l := range q {
			t, h := nibbleCounts(x, cols[l], mask, table)
			VPADDB(h, t, t)
			VPSADBW(zero, t, t)
			VPSLLQ(shx, t, t)
			VPADDQ(t, q[l], q[l])
		}
	}
	finish := func(q []VecVirtual, out, b Register) {
		reduce4([4]VecVirtual(q), out, false)
		ADDQ(U8(16), out)
		addStride(b, "ldb", 5) // 4 columns
	}
	row4Kernel("a4", 4, false, loadA, pair, finish)
}

// row4Kernel emits the loops the kw = 4 row kernels share, ending in RET:
// per row, per group of cols columns, four accumulators q (zmm with evex,
// else ymm) go over every plane pair: loadA loads plane i of the row's
// line, pair adds the counts of x against the group's columns in plane j
// (from bj) shifted by shx into q, and finish reduces q into out and
// moves out and b on to the next group.
func row4Kernel(prefix string, cols int, evex bool, loadA func(ai Register) VecVirtual,
	pair func(x VecVirtual, bj Register, shx VecVirtual, q []VecVirtual), finish func(q []VecVirtual, out, b Register)) {
	aRow := Load(Param("a"), GP64())
	outRow := Load(Param("out"), GP64())
	rows := Load(Param("nrows"), GP64())
	Label(prefix + "_row")
	TESTQ(rows, rows)
	JZ(LabelRef(prefix + "_done"))
	out := GP64()
	MOVQ(outRow, out)
	b := Load(Param("b"), GP64())
	nc := Load(Param("ncols"), GP64())
	Label(prefix + "_group")
	CMPQ(nc, U8(cols))
	JL(LabelRef(prefix + "_rowdone"))
	q := zeroed(4, evex)
	ai := GP64()
	MOVQ(aRow, ai)
	ic := Load(Param("abits"), GP64())
	shBase := GP64()
	XORQ(shBase, shBase)
	Label(prefix + "_planeA")
	x := loadA(ai)
	bj := GP64()
	MOVQ(b, bj)
	jc := Load(Param("bbits"), GP64())
	sh := GP64()
	MOVQ(shBase, sh)
	Label(prefix + "_planeB")
	shx := XMM()
	VMOVQ(sh, shx)
	pair(x, bj, shx, q)
	nextPlane(bj, "bps", sh, jc, prefix+"_planeB")
	nextPlane(ai, "aps", shBase, ic, prefix+"_planeA")
	finish(q, out, b)
	SUBQ(U8(cols), nc)
	JMP(LabelRef(prefix + "_group"))
	Label(prefix + "_rowdone")
	nextRow(aRow, outRow, rows, prefix+"_row")
	Label(prefix + "_done")
	VZEROUPPER()
	RET()
}

// addChain is the clock calibration: 64·n dependent one-cycle adds.
func addChain() {
	TEXT("addChain", NOSPLIT, "func(n int) int")
	Doc("addChain runs 64·n dependent ADDs (one cycle each on any x86-64 core),",
		"the clock calibration loop of the benchmarks; it returns 64·n.")
	n := Load(Param("n"), GP64())
	x := GP64()
	XORQ(x, x)
	TESTQ(n, n)
	JZ(LabelRef("chain_done"))
	Label("chain_loop")
	for i := 0; i < 64; i++ {
		ADDQ(U8(1), x)
	}
	DECQ(n)
	JNZ(LabelRef("chain_loop"))
	Label("chain_done")
	Store(x, ReturnIndex(0))
	RET()
}
