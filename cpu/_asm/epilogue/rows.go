package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The block kernels: the epilogue (and the re-quantizer) of a block of
// rows in one call, without the float32 row in memory between them. The
// rows of GNN inference are short (64 hidden units, 10 classes), so the
// loops run over the columns in groups of one vector and, inside, over the
// rows: a group's column vectors (ColScale, ColTerm, ColConst, ColBias)
// stay in registers for all rows, and each row costs one load of products,
// two broadcasts (RowTerm[m], RowScale[m]) and one store.
//
// The vector slots are the bound (on Zen 4 a zmm operation takes two of
// the four FP pipes' cycles), so a step the epilogue leaves out is skipped
// by a predicted branch (once per pair of rows) rather than run as an
// identity. An absent column vector is still loaded as its identity (1 or
// −0) and an absent row vector is a stride-0 pointer to a 1, so that
// every register and pointer holds a defined value.

// Outputs of a block kernel.
const (
	outFloat = iota // float32 epilogue values
	outU32          // uint32 codes
	outU8           // byte codes
)

// avx512y is the AVX-512 kernel on ymm registers (AVX-512 VL opmasks):
// half the work of a zmm for rows of up to 8 columns.
var avx512y = isa{"AVX512Y", 8, YMM, true}

const (
	bitsOne     = 0x3f800000 // float32(1)
	bitsNegZero = 0x80000000 // float32(−0)
)

func rowsKernels() {
	for _, s := range []isa{avx2, avx512, avx512y} {
		for _, kind := range []int{outFloat, outU32, outU8} {
			rowsKernel(s, kind)
		}
	}
}

// broadcastConst sets every lane of v to the dword bits.
func broadcastConst(bits uint32, v VecVirtual) {
	g := GP32()
	MOVL(U32(bits), g)
	x := XMM()
	MOVD(g, x)
	VPBROADCASTD(x, v)
}

func rowsKernel(s isa, kind int) {
	var name, typ, elt, gen string
	size := 4
	switch kind {
	case outFloat:
		name, typ, gen = "applyRows"+s.name, "float32", "applyRowsGeneric"
		elt = "out[r*ldd+j] = ep.Apply(c[r*ldc+j], m0+r, j)"
	case outU32:
		name, typ, gen = "applyQuantizeRows32"+s.name, "uint32", "applyQuantizeRowsGeneric"
		elt = "q[r*ldd+j] = rq.Quantize(ep.Apply(c[r*ldc+j], m0+r, j), bits)"
	case outU8:
		name, typ, gen, size = "applyQuantizeRows"+s.name, "uint8", "applyQuantizeRowsGeneric", 1
		elt = "q[r*ldd+j] = uint8(rq.Quantize(ep.Apply(c[r*ldc+j], m0+r, j), bits))"
	}
	sig := fmt.Sprintf("func(dst *%s, ldd int, c *int32, ldc int, rows, n int, colScale, colTerm, colConst, colBias, rowTerm *float32, rtStep int, rowScale *float32, rsStep int, flags uint64", typ)
	if kind != outFloat {
		sig += ", scale, offset float32, top uint32"
	}
	TEXT(name, NOSPLIT, sig+")")
	Pragma("noescape")
	bitsNote := ""
	if kind == outU32 && !s.evex {
		bitsNote = " (bits <= 31)"
	}
	Doc(fmt.Sprintf("%s is %s%s: for r < rows, j < n,", name, gen, bitsNote),
		elt+",",
		"with m0+r's RowTerm and RowScale at rowTerm+r·rtStep and rowScale+r·rsStep bytes (stride 0",
		"and a 1 when absent), nil column vectors for absent steps, the steps that run in flags. Codes are",
		"min(trunc(max(y·scale + offset, 0)), top), NaN to 0, top = 2^bits-1: the truncation saturates",
		"(to 2^32-1, or for AVX2 to 2^31, above top when bits <= 31), so no float clamp is needed.",
		"rows, n >= 1.")

	vec := s.vec
	w := s.lanes
	zero := vec()
	clearVec(s, zero)
	var scale, offset, top VecVirtual
	if kind != outFloat {
		scale, offset, top = vec(), vec(), vec()
		VBROADCASTSS(Load(Param("scale"), XMM()), scale)
		VBROADCASTSS(Load(Param("offset"), XMM()), offset)
		tx := XMM()
		MOVD(Load(Param("top"), GP32()), tx)
		VPBROADCASTD(tx, top)
	}
	j := GP64() // first column of the group
	XORQ(j, j)

	Label("group")
	rem := Load(Param("n"), GP64())
	SUBQ(j, rem)
	JLE(LabelRef("done"))

	// The group's lanes: an opmask, or for AVX2 the full loop (rem >= 8)
	// or a vector mask.
	var k Register
	var vmask VecVirtual
	if s.evex {
		cnt := GP64()
		MOVQ(U32(w), cnt)
		CMPQ(rem, cnt)
		CMOVQLT(rem, cnt)
		MOVQ(cnt, RCX)
		k = lowLanesK()
	}

	// group emits the loads of the column vectors and the row loops, for
	// the lanes k selects (evex) or for full vectors (masked false) or the
	// vmask lanes (AVX2, masked true).
	group := func(tag string, masked bool) {
		ld := func(m Mem, v VecVirtual) {
			switch {
			case s.evex:
				VMOVUPS_Z(m, k, v)
			case masked:
				VMASKMOVPS(m, vmask, v)
			default:
				VMOVUPS(m, v)
			}
		}
		col := func(param string, identity uint32) VecVirtual {
			v := vec()
			p := Load(Param(param), GP64())
			absent, next := tag+"_no"+param, tag+"_have"+param
			TESTQ(p, p)
			JZ(LabelRef(absent))
			ld(Mem{Base: p, Index: j, Scale: 4}, v)
			JMP(LabelRef(next))
			Label(absent)
			broadcastConst(identity, v)
			Label(next)
			return v
		}
		cs := col("colScale", bitsOne)
		ct := col("colTerm", bitsNegZero)
		cc := col("colConst", bitsNegZero)
		cb := col("colBias", bitsNegZero)

		pc, pd := Load(Param("c"), GP64()), Load(Param("dst"), GP64())
		LEAQ(Mem{Base: pc, Index: j, Scale: 4}, pc)
		LEAQ(Mem{Base: pd, Index: j, Scale: uint8(size)}, pd)
		ldc, ldd := Load(Param("ldc"), GP64()), Load(Param("ldd"), GP64())
		SHLQ(U8(2), ldc)
		if size == 4 {
			SHLQ(U8(2), ldd)
		}
		prt, rts := Load(Param("rowTerm"), GP64()), Load(Param("rtStep"), GP64())
		prs, rss := Load(Param("rowScale"), GP64()), Load(Param("rsStep"), GP64())
		r := Load(Param("rows"), GP64())
		var tailLen Register
		if kind == outU8 && !s.evex && masked {
			tailLen = rem
		}

		fl := Load(Param("flags"), GP64())

		// rowsBody emits nr rows (1 or 2): products at pc, row entries at
		// prt and prs, codes at pd, each one stride further for the second
		// row. Each step the flags leave out is skipped for both rows by
		// one predicted branch, which costs no vector slot.
		rowsBody := func(ltag string, nr int) {
			addr := func(i int, base, idx Register) Mem {
				if i == 1 {
					return Mem{Base: base, Index: idx, Scale: 1}
				}
				return Mem{Base: base}
			}
			t, u := make([]VecVirtual, nr), make([]VecVirtual, nr)
			for i := range t {
				t[i], u[i] = vec(), vec()
			}
			step := func(name string, flag int, f func(i int)) { flagStep(fl, flag, ltag+"_no"+name, nr, f) }
			for i := range t {
				switch {
				case s.evex:
					VCVTDQ2PS_Z(addr(i, pc, ldc), k, t[i])
				case masked:
					VMASKMOVPS(addr(i, pc, ldc), vmask, t[i])
					VCVTDQ2PS(t[i], t[i])
				default:
					VCVTDQ2PS(addr(i, pc, ldc), t[i])
				}
			}
			step("ColScale", flagColScale, func(i int) { VMULPS(cs, t[i], t[i]) })
			step("RowTerm", flagRowTerm, func(i int) {
				if s.evex {
					VMULPS_BCST(addr(i, prt, rts), ct, u[i])
				} else {
					VBROADCASTSS(addr(i, prt, rts), u[i])
					VMULPS(ct, u[i], u[i])
				}
				VADDPS(u[i], t[i], t[i])
			})
			step("ColConst", flagColConst, func(i int) { VADDPS(cc, t[i], t[i]) })
			step("RowScale", flagRowScale, func(i int) {
				if s.evex {
					VMULPS_BCST(addr(i, prs, rss), t[i], t[i])
				} else {
					VBROADCASTSS(addr(i, prs, rss), u[i])
					VMULPS(u[i], t[i], t[i])
				}
			})
			step("ColBias", flagColBias, func(i int) { VADDPS(cb, t[i], t[i]) })
			step("ReLU", flagReLU, func(i int) { VMAXPS(zero, t[i], t[i]) })
			for i := range t {
				if kind != outFloat {
					VMULPS(scale, t[i], t[i])
					VADDPS(offset, t[i], t[i])
					VMAXPS(zero, t[i], t[i]) // NaN to 0
					if s.evex {
						VCVTTPS2UDQ(t[i], t[i])
					} else {
						VCVTTPS2DQ(t[i], t[i])
					}
					VPMINUD(top, t[i], t[i])
				}
				at := addr(i, pd, ldd)
				switch {
				case kind == outU8 && s.evex:
					VPMOVDB(t[i], k, at)
				case kind == outU8:
					h := packLowAVX2(t[i])
					if !masked {
						VMOVQ(h, at)
						break
					}
					storeLowBytes(h, at, tailLen, fmt.Sprintf("%s_%d", ltag, i))
				case s.evex:
					VMOVUPS(t[i], k, at)
				case masked:
					VMASKMOVPS(t[i], vmask, at)
				default:
					VMOVUPS(t[i], at)
				}
			}
		}
		// The rows two at a time, then the last odd one.
		pair, last := tag+"_pair", tag+"_last"
		Label(pair)
		CMPQ(r, U8(2))
		JL(LabelRef(last))
		rowsBody(pair, 2)
		for i := 0; i < 2; i++ {
			ADDQ(ldc, pc)
			ADDQ(ldd, pd)
			ADDQ(rts, prt)
			ADDQ(rss, prs)
		}
		SUBQ(U8(2), r)
		JMP(LabelRef(pair))
		Label(last)
		TESTQ(r, r)
		JZ(LabelRef(tag + "_next"))
		rowsBody(last, 1)
		Label(tag + "_next")
	}

	if s.evex {
		group("g", true)
	} else {
		CMPQ(rem, U32(w))
		JL(LabelRef("partial"))
		group("full", false)
		JMP(LabelRef("advance"))
		Label("partial")
		vmask = lowLanesAVX2(rem)
		group("part", true)
		Label("advance")
	}
	ADDQ(U32(w), j)
	JMP(LabelRef("group"))

	Label("done")
	VZEROUPPER()
	RET()
}

// storeLowBytes writes the low n (1..7) bytes of xmm h to at, 4, 2 and 1
// at a time (AVX2 has no byte-masked store); tag names the skip labels.
func storeLowBytes(h VecVirtual, at Mem, n Register, tag string) {
	g, p := GP64(), GP64()
	VMOVQ(h, g)
	LEAQ(at, p)
	for _, b := range []int{4, 2, 1} {
		skip := fmt.Sprintf("%s_no%d", tag, b)
		TESTQ(U32(b), n)
		JZ(LabelRef(skip))
		switch b {
		case 4:
			MOVL(g.As32(), Mem{Base: p})
			SHRQ(U8(32), g)
		case 2:
			MOVW(g.As16(), Mem{Base: p})
			SHRQ(U8(16), g)
		case 1:
			MOVB(g.As8(), Mem{Base: p})
		}
		if b > 1 {
			ADDQ(U32(b), p)
		}
		Label(skip)
	}
}
