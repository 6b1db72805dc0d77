// Command bitdot generates the AND+popcount kernels of cpu's bit product:
// go run ./bitdot -out ../bitdot_amd64.s -stubs ../bitdot_amd64.go -pkg cpu
package main

import (
	"math/bits"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const signature = "func(out *uint32, a *uint64, b *uint64, ldb int, kw int, nlines int)"

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
	linesAVX2(lut, low)
	linesAVX512()
	addChain()
	Generate()
}

type args struct{ out, a, b, ldb, kw, nl Register }

func loadArgs() args {
	var r args
	r.out = Load(Param("out"), GP64())
	r.a = Load(Param("a"), GP64())
	r.b = Load(Param("b"), GP64())
	r.ldb = Load(Param("ldb"), GP64())
	r.kw = Load(Param("kw"), GP64())
	r.nl = Load(Param("nlines"), GP64())
	SHLQ(U8(3), r.ldb) // words to bytes
	return r
}

// reduce4 adds the four qword sums of each of q[0..3] (ymm, each sum < 2^32)
// to the four uint32 at out. It clobbers q.
func reduce4(q [4]VecVirtual, out Register) {
	VPSLLQ(U8(32), q[1], q[1])
	VPOR(q[1], q[0], q[0]) // dwords: q0 sums | q1 sums
	VPSLLQ(U8(32), q[3], q[3])
	VPOR(q[3], q[2], q[2])
	u := YMM()
	VPERM2I128(U8(0x20), q[2], q[0], u) // [q0.lo, q2.lo]
	VPERM2I128(U8(0x31), q[2], q[0], q[1])
	VPADDQ(q[1], u, u)
	VPSHUFD(U8(0x4e), u, q[1])
	VPADDQ(q[1], u, u) // qword 0: (Σq0, Σq1), qword 2: (Σq2, Σq3)
	VPERMQ(U8(0x08), u, u)
	r := u.AsX()
	VPADDD(Mem{Base: out}, r, r)
	VMOVDQU(r, Mem{Base: out})
}

// reduce1 adds the four qword sums of q (ymm) to the uint32 at out.
func reduce1(q VecVirtual, out Register) {
	h := XMM()
	VEXTRACTI128(U8(1), q, h)
	VPADDQ(h, q.AsX(), h)
	l := XMM()
	VPSHUFD(U8(0x4e), h, l)
	VPADDQ(l, h, h)
	s := GP32()
	VMOVD(h, s)
	ADDL(s, Mem{Base: out})
}

// linesAVX2: vpshufb nibble popcount (Muła), byte counts summed with
// vpsadbw every <= 31 iterations (a byte gains at most 8 per iteration).
func linesAVX2(lut, low Mem) {
	TEXT("popcntLinesAVX2", NOSPLIT, signature)
	Pragma("noescape")
	Doc("popcntLinesAVX2 is popcntLinesGeneric: out[v] += popcount(a[0:kw] & b[v*ldb:][:kw]) for v < nlines,",
		"kw a multiple of 4. Four lines at a time share each load of a (1×4 register blocking).")
	r := loadArgs()
	SHRQ(U8(2), r.kw) // ymm iterations
	mask, table, zero := YMM(), YMM(), YMM()
	VMOVDQU(low, mask)
	VMOVDQU(lut, table)
	VPXOR(zero, zero, zero)

	popAdd := func(x VecVirtual, src Mem, c VecVirtual) {
		t, h := YMM(), YMM()
		VPAND(src, x, t)
		VPSRLW(U8(4), t, h)
		VPAND(mask, t, t)
		VPAND(mask, h, h)
		VPSHUFB(t, table, t)
		VPSHUFB(h, table, h)
		VPADDB(t, c, c)
		VPADDB(h, c, c)
	}

	Label("avx2_group")
	CMPQ(r.nl, U8(4))
	JL(LabelRef("avx2_single"))
	b1, b2, b3 := GP64(), GP64(), GP64()
	LEAQ(Mem{Base: r.b, Index: r.ldb, Scale: 1}, b1)
	LEAQ(Mem{Base: r.b, Index: r.ldb, Scale: 2}, b2)
	LEAQ(Mem{Base: b1, Index: r.ldb, Scale: 2}, b3)
	bl := [4]Register{r.b, b1, b2, b3}
	var q, c [4]VecVirtual
	for l := range q {
		q[l] = YMM()
		VPXOR(q[l], q[l], q[l])
	}
	off, rem, n := GP64(), GP64(), GP64()
	XORQ(off, off)
	MOVQ(r.kw, rem)
	Label("avx2_chunk4")
	TESTQ(rem, rem)
	JZ(LabelRef("avx2_reduce4"))
	MOVQ(U32(31), n)
	CMPQ(rem, n)
	CMOVQLT(rem, n)
	SUBQ(n, rem)
	for l := range c {
		c[l] = YMM()
		VPXOR(c[l], c[l], c[l])
	}
	Label("avx2_inner4")
	x := YMM()
	VMOVDQU(Mem{Base: r.a, Index: off, Scale: 1}, x)
	for l := range c {
		popAdd(x, Mem{Base: bl[l], Index: off, Scale: 1}, c[l])
	}
	ADDQ(U8(32), off)
	DECQ(n)
	JNZ(LabelRef("avx2_inner4"))
	for l := range c {
		VPSADBW(zero, c[l], c[l])
		VPADDQ(c[l], q[l], q[l])
	}
	JMP(LabelRef("avx2_chunk4"))
	Label("avx2_reduce4")
	reduce4(q, r.out)
	ADDQ(U8(16), r.out)
	MOVQ(r.ldb, n)
	SHLQ(U8(2), n)
	ADDQ(n, r.b)
	SUBQ(U8(4), r.nl)
	JMP(LabelRef("avx2_group"))

	Label("avx2_single")
	TESTQ(r.nl, r.nl)
	JZ(LabelRef("avx2_done"))
	q1 := YMM()
	VPXOR(q1, q1, q1)
	XORQ(off, off)
	MOVQ(r.kw, rem)
	Label("avx2_chunk1")
	TESTQ(rem, rem)
	JZ(LabelRef("avx2_reduce1"))
	MOVQ(U32(31), n)
	CMPQ(rem, n)
	CMOVQLT(rem, n)
	SUBQ(n, rem)
	c1 := YMM()
	VPXOR(c1, c1, c1)
	Label("avx2_inner1")
	x1 := YMM()
	VMOVDQU(Mem{Base: r.a, Index: off, Scale: 1}, x1)
	popAdd(x1, Mem{Base: r.b, Index: off, Scale: 1}, c1)
	ADDQ(U8(32), off)
	DECQ(n)
	JNZ(LabelRef("avx2_inner1"))
	VPSADBW(zero, c1, c1)
	VPADDQ(c1, q1, q1)
	JMP(LabelRef("avx2_chunk1"))
	Label("avx2_reduce1")
	reduce1(q1, r.out)
	ADDQ(U8(4), r.out)
	ADDQ(r.ldb, r.b)
	DECQ(r.nl)
	JMP(LabelRef("avx2_single"))

	Label("avx2_done")
	VZEROUPPER()
	RET()
}

// linesAVX512: VPOPCNTQ on 512-bit words, a 256-bit step for a kw%8 == 4 tail.
func linesAVX512() {
	TEXT("popcntLinesAVX512", NOSPLIT, signature)
	Pragma("noescape")
	Doc("popcntLinesAVX512 is popcntLinesGeneric with AVX-512 VPOPCNTDQ: out[v] += popcount(a[0:kw] & b[v*ldb:][:kw])",
		"for v < nlines, kw a multiple of 4. Four lines at a time share each load of a.")
	r := loadArgs()
	tail := GP64()
	MOVQ(r.kw, tail)
	ANDQ(U8(4), tail)
	SHRQ(U8(3), r.kw) // zmm iterations

	// step adds popcount(x & src) to q; x and the temporaries are zmm, or
	// ymm for the tail (a 256-bit op zeroes the upper half, so adding the
	// whole zmm is right).
	step := func(x VecVirtual, src Mem, q VecVirtual, wide bool) {
		t := ZMM()
		if wide {
			VPANDQ(src, x, t)
			VPOPCNTQ(t, t)
		} else {
			VPAND(src, x.AsY(), t.AsY())
			VPOPCNTQ(t.AsY(), t.AsY())
		}
		VPADDQ(t, q, q)
	}

	Label("avx512_group")
	CMPQ(r.nl, U8(4))
	JL(LabelRef("avx512_single"))
	b1, b2, b3 := GP64(), GP64(), GP64()
	LEAQ(Mem{Base: r.b, Index: r.ldb, Scale: 1}, b1)
	LEAQ(Mem{Base: r.b, Index: r.ldb, Scale: 2}, b2)
	LEAQ(Mem{Base: b1, Index: r.ldb, Scale: 2}, b3)
	bl := [4]Register{r.b, b1, b2, b3}
	var q [4]VecVirtual
	for l := range q {
		q[l] = ZMM()
		VPXORQ(q[l], q[l], q[l])
	}
	off, n := GP64(), GP64()
	XORQ(off, off)
	MOVQ(r.kw, n)
	TESTQ(n, n)
	JZ(LabelRef("avx512_tail4"))
	Label("avx512_inner4")
	x := ZMM()
	VMOVDQU64(Mem{Base: r.a, Index: off, Scale: 1}, x)
	for l := range q {
		step(x, Mem{Base: bl[l], Index: off, Scale: 1}, q[l], true)
	}
	ADDQ(U8(64), off)
	DECQ(n)
	JNZ(LabelRef("avx512_inner4"))
	Label("avx512_tail4")
	TESTQ(tail, tail)
	JZ(LabelRef("avx512_reduce4"))
	xt := ZMM()
	VMOVDQU(Mem{Base: r.a, Index: off, Scale: 1}, xt.AsY())
	for l := range q {
		step(xt, Mem{Base: bl[l], Index: off, Scale: 1}, q[l], false)
	}
	Label("avx512_reduce4")
	var qy [4]VecVirtual
	for l := range q {
		h := YMM()
		VEXTRACTI64X4(U8(1), q[l], h)
		VPADDQ(h, q[l].AsY(), h)
		qy[l] = h
	}
	reduce4(qy, r.out)
	ADDQ(U8(16), r.out)
	MOVQ(r.ldb, n)
	SHLQ(U8(2), n)
	ADDQ(n, r.b)
	SUBQ(U8(4), r.nl)
	JMP(LabelRef("avx512_group"))

	Label("avx512_single")
	TESTQ(r.nl, r.nl)
	JZ(LabelRef("avx512_done"))
	q1 := ZMM()
	VPXORQ(q1, q1, q1)
	XORQ(off, off)
	MOVQ(r.kw, n)
	TESTQ(n, n)
	JZ(LabelRef("avx512_tail1"))
	Label("avx512_inner1")
	x1 := ZMM()
	VMOVDQU64(Mem{Base: r.a, Index: off, Scale: 1}, x1)
	step(x1, Mem{Base: r.b, Index: off, Scale: 1}, q1, true)
	ADDQ(U8(64), off)
	DECQ(n)
	JNZ(LabelRef("avx512_inner1"))
	Label("avx512_tail1")
	TESTQ(tail, tail)
	JZ(LabelRef("avx512_reduce1"))
	xt1 := ZMM()
	VMOVDQU(Mem{Base: r.a, Index: off, Scale: 1}, xt1.AsY())
	step(xt1, Mem{Base: r.b, Index: off, Scale: 1}, q1, false)
	Label("avx512_reduce1")
	h := YMM()
	VEXTRACTI64X4(U8(1), q1, h)
	VPADDQ(h, q1.AsY(), h)
	reduce1(h, r.out)
	ADDQ(U8(4), r.out)
	ADDQ(r.ldb, r.b)
	DECQ(r.nl)
	JMP(LabelRef("avx512_single"))

	Label("avx512_done")
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
