// Command epilogue generates the vector loops of cpu's fused epilogue (the
// float32 epilogue of bmm.Epilogue and the re-quantizer of bmm.Requant):
// go run ./epilogue -out ../epilogue_gen_amd64.s -stubs ../epilogue_gen_amd64.go -pkg cpu
//
// Every step is one rounded vector operation in the order of
// bmm.Epilogue.ApplyFloat: VMULPS then VADDPS, never a fused multiply-add.
// VMAXPS/VMINPS return their second (Intel) source when either is NaN or
// both are zero, so max(t, +0) with t first maps NaN and −0 to +0 exactly
// as Go's `if !(t > 0) { t = 0 }` does. In avo's operand order that is
// VMAXPS(zero, t, t).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Flags of the epilogue kernels; cpu/epilogue_amd64.go mirrors them.
const (
	flagColScale = 1 << iota
	flagRowTerm
	flagColConst
	flagRowScale
	flagColBias
	flagReLU
	flagConvert // read int32 products from c and convert them; else out holds float32 in place
)

const epSig = "func(out *float32, c *int32, n int, colScale, colTerm, colConst, colBias *float32, rowTerm, rowScale float32, flags uint64)"

const unroll = 4 // vectors per block: the flag tests run once a block

// tailMask is eight all-ones dwords then eight zero ones: the 8 dwords
// from entry 8−r on are the AVX2 mask of an r-lane tail.
var tailMask Mem

func main() {
	ConstraintExpr("!purego")
	perm := GLOBL("epilogue_packperm", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
		DATA(4*i, U32(v))
	}
	tailMask = GLOBL("epilogue_tailmask", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}
	epilogue(avx2)
	epilogue(avx512)
	quantize(avx2, false, perm)
	quantize(avx512, false, perm)
	quantize(avx2, true, perm)
	quantize(avx512, true, perm)
	planes(avx2, perm, false)
	planes(avx512, perm, false)
	planes(avx2, perm, true)
	planes(avx512, perm, true)
	transposeGFNI()
	rowsKernels()
	Generate()
}

// isa is one vector width: 8 lanes (AVX2, ymm; VMASKMOVPS tails) or 16
// (AVX-512, zmm; opmask tails).
type isa struct {
	name  string
	lanes int
	vec   func() VecVirtual
	evex  bool
}

var (
	avx2   = isa{"AVX2", 8, YMM, false}
	avx512 = isa{"AVX512", 16, ZMM, true}
)

// epilogue writes epilogueRow<ISA>, which runs ApplyFloat's steps over a
// row, all of them on one block of vectors before the next block.
func epilogue(s isa) {
	TEXT("epilogueRow"+s.name, NOSPLIT, epSig)
	Pragma("noescape")
	covers := "all j < n (a masked tail)"
	Doc(fmt.Sprintf("epilogueRow%s is applyRowGeneric (flagConvert: out[j] = ep.Apply(c[j], m, j)) or", s.name),
		fmt.Sprintf("applyRowFloatGeneric (out[j] = ep.ApplyFloat(out[j], m, j)) for %s;", covers),
		"the flags say which epilogue steps run, rowTerm and rowScale are row m's entries.")
	out := Load(Param("out"), GP64())
	c := Load(Param("c"), GP64())
	n := Load(Param("n"), GP64())
	cs := Load(Param("colScale"), GP64())
	ct := Load(Param("colTerm"), GP64())
	cc := Load(Param("colConst"), GP64())
	cb := Load(Param("colBias"), GP64())
	flags := Load(Param("flags"), GP64())
	rt, rs, zero := s.vec(), s.vec(), s.vec()
	rtx := Load(Param("rowTerm"), XMM())
	rsx := Load(Param("rowScale"), XMM())
	VBROADCASTSS(rtx, rt)
	VBROADCASTSS(rsx, rs)
	clearVec(s, zero)
	i := GP64()
	XORQ(i, i)

	at := func(base Register, k int) Mem { return Mem{Base: base, Index: i, Scale: 4, Disp: 4 * s.lanes * k} }
	// body runs the steps on u vectors from index i; ld(m, v) loads vector
	// operand m into v (masked in the tail) or returns m itself.
	body := func(tag string, u int, ld func(m Mem) Op, st func(v VecVirtual, m Mem)) {
		t := make([]VecVirtual, u)
		tmp := make([]VecVirtual, u)
		for k := range t {
			t[k], tmp[k] = s.vec(), s.vec()
		}
		step := func(name string, flag int, f func(k int)) { flagStep(flags, flag, tag+"_no"+name, u, f) }
		ints, floats := tag+"_int", tag+"_loaded"
		TESTQ(U32(flagConvert), flags)
		JNZ(LabelRef(ints))
		for k := range t {
			VMOVUPS(ld(at(out, k)), t[k])
		}
		JMP(LabelRef(floats))
		Label(ints)
		for k := range t {
			VCVTDQ2PS(ld(at(c, k)), t[k])
		}
		Label(floats)
		step("ColScale", flagColScale, func(k int) { VMULPS(ld(at(cs, k)), t[k], t[k]) })
		step("RowTerm", flagRowTerm, func(k int) {
			VMULPS(ld(at(ct, k)), rt, tmp[k])
			VADDPS(tmp[k], t[k], t[k])
		})
		step("ColConst", flagColConst, func(k int) { VADDPS(ld(at(cc, k)), t[k], t[k]) })
		step("RowScale", flagRowScale, func(k int) { VMULPS(rs, t[k], t[k]) })
		step("ColBias", flagColBias, func(k int) { VADDPS(ld(at(cb, k)), t[k], t[k]) })
		step("ReLU", flagReLU, func(k int) { VMAXPS(zero, t[k], t[k]) })
		for k := range t {
			st(t[k], at(out, k))
		}
	}
	direct := func(m Mem) Op { return m }
	store := func(v VecVirtual, m Mem) { VMOVUPS(v, m) }
	loops(s, "ep", n, i, func(tag string, u int) { body(tag, u, direct, store) },
		func(tag string, k Register) {
			tmp := s.vec()
			body(tag, 1, func(m Mem) Op { maskedLoad(s, m, k, tmp); return tmp },
				func(v VecVirtual, m Mem) { maskedStore(s, v, k, m) })
		})
}

// maskedLoad loads the lanes of m that mask k (an opmask, or for AVX2 a
// ymm of all-ones dwords) selects into v and zeroes the others; the
// masked-off lanes are never read, so a tail may end at the last element.
func maskedLoad(s isa, m Mem, k Register, v VecVirtual) {
	if s.evex {
		VMOVUPS_Z(m, k, v)
	} else {
		VMASKMOVPS(m, k, v)
	}
}

// maskedStore writes the lanes of v that k selects to m.
func maskedStore(s isa, v VecVirtual, k Register, m Mem) {
	if s.evex {
		VMOVUPS(v, k, m)
	} else {
		VMASKMOVPS(v, k, m)
	}
}

// clearVec zeroes v (VXORPS on zmm would need AVX-512 DQ).
func clearVec(s isa, v VecVirtual) {
	if s.evex {
		VPXORD(v, v, v)
	} else {
		VXORPS(v, v, v)
	}
}

// flagStep emits f(i) for i < n, skipped by one predicted branch to label
// skip when flags lacks flag.
func flagStep(flags Register, flag int, skip string, n int, f func(i int)) {
	TESTQ(U32(flag), flags)
	JZ(LabelRef(skip))
	for i := 0; i < n; i++ {
		f(i)
	}
	Label(skip)
}

// lowLanesK returns an opmask of the low CL lanes (CL <= 16).
func lowLanesK() Register {
	m := GP32()
	MOVL(U32(1), m)
	SHLL(CL, m)
	DECL(m)
	k := K()
	KMOVW(m, k)
	return k
}

// lowLanesAVX2 returns the AVX2 mask (all-ones dwords) of the low r lanes
// (1 <= r <= 8), read from tailMask.
func lowLanesAVX2(r Register) VecVirtual {
	from, tbl := GP64(), GP64()
	MOVQ(U32(8), from)
	SUBQ(r, from)
	LEAQ(tailMask, tbl)
	k := YMM()
	VMOVDQU(Mem{Base: tbl, Index: from, Scale: 4}, k)
	return k
}

// packDwordsAVX2 packs the dword lanes of the four ymm v into the bytes of
// v[0], in order (idx is the epilogue_packperm permutation).
func packDwordsAVX2(v []VecVirtual, idx VecVirtual) {
	// Dword lanes end up in the order 0 4 1 5 2 6 3 7; VPERMD puts them back.
	VPACKUSDW(v[1], v[0], v[0])
	VPACKUSDW(v[3], v[2], v[2])
	VPACKUSWB(v[2], v[0], v[0])
	VPERMD(v[0], idx, v[0])
}

// packLowAVX2 packs the eight dword lanes of ymm v into the low eight bytes
// of the xmm it returns.
func packLowAVX2(v VecVirtual) VecVirtual {
	h := XMM()
	VEXTRACTI128(U8(1), v, h)
	VPACKUSDW(h, v.AsX(), h)
	VPACKUSWB(h, h, h)
	return h
}

// loops emits the block loop (unroll vectors a pass), the one-vector loop
// and the masked tail (when tail is not nil), over n elements with index
// i; block writes the work on u vectors at i, tail the masked work with
// mask k.
func loops(s isa, name string, n, i Register, block func(tag string, u int), tail func(tag string, k Register)) {
	w := s.lanes
	Label(name + "_blocks")
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(i, rem)
	CMPQ(rem, U32(unroll*w))
	JB(LabelRef(name + "_singles"))
	block(name+"_b", unroll)
	ADDQ(U32(unroll*w), i)
	JMP(LabelRef(name + "_blocks"))

	Label(name + "_singles")
	MOVQ(n, rem)
	SUBQ(i, rem)
	CMPQ(rem, U32(w))
	JB(LabelRef(name + "_tail"))
	block(name+"_s", 1)
	ADDQ(U32(w), i)
	JMP(LabelRef(name + "_singles"))

	Label(name + "_tail")
	if tail != nil {
		MOVQ(n, RCX)
		SUBQ(i, RCX)
		JZ(LabelRef(name + "_done"))
		if s.evex {
			tail(name+"_t", lowLanesK())
		} else {
			tail(name+"_t", lowLanesAVX2(RCX))
		}
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// quantize writes quantizeRow<ISA> (uint32 codes) or quantizeRowBytes<ISA>
// (bytes, bits <= 8): q = min(trunc(min(max(y·scale + offset, 0), maxf)), top).
func quantize(s isa, bytes bool, perm Mem) {
	name, typ, gen := "quantizeRow"+s.name, "uint32", "quantizeRowGeneric"
	if bytes {
		name, typ, gen = "quantizeRowBytes"+s.name, "uint8", "quantizeRowGeneric"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(q *%s, y *float32, n int, scale, offset, maxf float32, top uint32)", typ))
	Pragma("noescape")
	covers := "any n"
	switch {
	case s.evex:
	case bytes:
		covers = "n rounded down to a multiple of 8"
	default:
		covers = "any n and bits <= 31"
	}
	Doc(fmt.Sprintf("%s is %s for %s, top = 2^bits-1, maxf = float32(top):", name, gen, covers),
		"q[j] = min(trunc(min(max(y[j]·scale + offset, 0), maxf)), top), NaN to 0. The min with top",
		"takes the codes above 2^24, where maxf rounds up to 2^bits, back to top.")
	q := Load(Param("q"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	scale, offset, maxf, top, zero := s.vec(), s.vec(), s.vec(), s.vec(), s.vec()
	VBROADCASTSS(Load(Param("scale"), XMM()), scale)
	VBROADCASTSS(Load(Param("offset"), XMM()), offset)
	VBROADCASTSS(Load(Param("maxf"), XMM()), maxf)
	tg := Load(Param("top"), GP32())
	tx := XMM()
	MOVD(tg, tx)
	VPBROADCASTD(tx, top)
	clearVec(s, zero)
	var idx VecVirtual
	if bytes && !s.evex {
		idx = YMM()
		VMOVDQU(perm, idx)
	}
	i := GP64()
	XORQ(i, i)

	codes := func(v VecVirtual, src Op) {
		VMULPS(src, scale, v)
		VADDPS(offset, v, v)
		VMAXPS(zero, v, v) // v > 0 ? v : 0, NaN to 0
		VMINPS(maxf, v, v) // v < maxf ? v : maxf
		if s.evex {
			VCVTTPS2UDQ(v, v)
		} else {
			VCVTTPS2DQ(v, v) // 2^31 gives 0x80000000, which the unsigned min takes to top
		}
		VPMINUD(top, v, v)
	}
	yat := func(k int) Mem { return Mem{Base: y, Index: i, Scale: 4, Disp: 4 * s.lanes * k} }
	qat := func(k int) Mem {
		if bytes {
			return Mem{Base: q, Index: i, Scale: 1, Disp: s.lanes * k}
		}
		return Mem{Base: q, Index: i, Scale: 4, Disp: 4 * s.lanes * k}
	}
	block := func(tag string, u int) {
		v := make([]VecVirtual, u)
		for k := range v {
			v[k] = s.vec()
			codes(v[k], yat(k))
		}
		switch {
		case !bytes:
			for k := range v {
				VMOVUPS(v[k], qat(k))
			}
		case s.evex:
			for k := range v {
				VPMOVDB(v[k], qat(k))
			}
		case u == unroll:
			packDwordsAVX2(v, idx)
			VMOVDQU(v[0], qat(0))
		default:
			VMOVQ(packLowAVX2(v[0]), qat(0))
		}
	}
	tail := func(tag string, k Register) {
		v := s.vec()
		maskedLoad(s, yat(0), k, v)
		codes(v, v)
		if bytes {
			VPMOVDB(v, k, qat(0))
		} else {
			maskedStore(s, v, k, qat(0))
		}
	}
	if bytes && !s.evex {
		tail = nil // no byte-masked store in AVX2: the Go loop takes the last n%8
	}
	loops(s, "q", n, i, block, tail)
}

// planes writes bitPlanes8<ISA> (bitPlanes8Bytes<ISA>), the bit-plane
// packing of codes of up to 8 bits held in dwords (bytes): each chunk of
// 64 codes becomes one byte vector (AVX2: two), the top code bit is
// shifted to bit 7 of each byte and VPMOVMSKB (AVX-512: VPMOVB2M) gathers
// one plane word; VPADDB then brings the next lower bit up, so no shift
// count depends on the plane.
func planes(s isa, perm Mem, bytes bool) {
	name, typ, from := "bitPlanes8"+s.name, "uint32", "q[64w+j]"
	if bytes {
		name, typ = "bitPlanes8Bytes"+s.name, "uint8"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(out *uint64, q *%s, chunks, nbits, ps, ws int)", typ))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s is transpose64 for nbits <= 8 on chunks runs of 64 codes: for w < chunks and", name),
		fmt.Sprintf("p < nbits, bit j of out[p*ps + w*ws] is bit p of %s; code bits above nbits are ignored.", from))
	out := Load(Param("out"), GP64())
	q := Load(Param("q"), GP64())
	chunks := Load(Param("chunks"), GP64())
	nbits := Load(Param("nbits"), GP64())
	ps := Load(Param("ps"), GP64())
	ws := Load(Param("ws"), GP64())
	SHLQ(U8(3), ps)
	SHLQ(U8(3), ws)
	// top: the low nbits set, in every dword (AVX2, masked before the
	// saturating packs) or every byte (AVX-512, after the truncating VPMOVDB).
	t := GP64()
	MOVQ(U32(1), t)
	MOVQ(nbits, RCX)
	SHLQ(CL, t)
	DECQ(t)
	cnt := XMM()
	sh := GP64()
	MOVQ(U32(8), sh)
	SUBQ(nbits, sh)
	MOVQ(sh, cnt)
	top := s.vec()
	tx := XMM()
	if s.evex || bytes {
		IMUL3Q(U32(0x01010101), t, t)
	}
	MOVQ(t, tx)
	VPBROADCASTD(tx, top)
	var idx VecVirtual
	if !s.evex && !bytes {
		idx = YMM()
		VMOVDQU(perm, idx)
	}
	Label("chunk")
	TESTQ(chunks, chunks)
	JZ(LabelRef("done"))
	var b []VecVirtual
	switch {
	case bytes && s.evex:
		z := ZMM()
		VMOVDQU64(Mem{Base: q}, z)
		VPANDD(top, z, z)
		VPSLLW(cnt, z, z)
		b = []VecVirtual{z}
	case bytes:
		for h := 0; h < 2; h++ {
			v := YMM()
			VPAND(Mem{Base: q, Disp: 32 * h}, top, v)
			VPSLLW(cnt, v, v)
			b = append(b, v)
		}
	case s.evex:
		x := make([]VecVirtual, 4)
		for k := range x {
			x[k] = ZMM()
			VMOVDQU32(Mem{Base: q, Disp: 64 * k}, x[k])
			VPMOVDB(x[k], x[k].AsX())
		}
		z := x[0]
		for k := 1; k < 4; k++ {
			VINSERTI32X4(U8(k), x[k].AsX(), z, z)
		}
		VPANDD(top, z, z)
		VPSLLW(cnt, z, z)
		b = []VecVirtual{z}
	default:
		for h := 0; h < 2; h++ {
			v := make([]VecVirtual, 4)
			for k := range v {
				v[k] = YMM()
				VPAND(Mem{Base: q, Disp: 128*h + 32*k}, top, v[k])
			}
			packDwordsAVX2(v, idx)
			VPSLLW(cnt, v[0], v[0])
			b = append(b, v[0])
		}
	}
	// Planes from nbits-1 down to 0, at dst = out + p*ps.
	dst, p := GP64(), GP64()
	MOVQ(nbits, p)
	DECQ(p)
	MOVQ(p, dst)
	IMULQ(ps, dst)
	ADDQ(out, dst)
	Label("plane")
	w := GP64()
	if s.evex {
		k := K()
		VPMOVB2M(b[0], k)
		KMOVQ(k, w)
		VPADDB(b[0], b[0], b[0])
	} else {
		hi := GP64()
		VPMOVMSKB(b[0], w.As32())
		VPMOVMSKB(b[1], hi.As32())
		SHLQ(U8(32), hi)
		ORQ(hi, w)
		VPADDB(b[0], b[0], b[0])
		VPADDB(b[1], b[1], b[1])
	}
	MOVQ(w, Mem{Base: dst})
	SUBQ(ps, dst)
	DECQ(p)
	JGE(LabelRef("plane"))
	ADDQ(ws, out)
	if bytes {
		ADDQ(U32(64), q)
	} else {
		ADDQ(U32(256), q)
	}
	DECQ(chunks)
	JMP(LabelRef("chunk"))
	Label("done")
	VZEROUPPER()
	RET()
}

// transposeGFNI writes transposeBits64GFNI: the 64×64 bit transpose of
// each of nplanes tiles, as 8×8 tiles of 8×8 bits. Row word r byte J is the
// bit tile (r/8, J); a VPERMB per 8 rows gathers each tile into one qword,
// VGF2P8AFFINEQB with the tile as its matrix transposes the tile's bits
// (output byte j = its column j), an 8×8 qword transpose across registers
// moves tile (I, J) to (J, I), and a last VPERMB puts each output word's
// bytes in place.
func transposeGFNI() {
	TEXT("transposeBits64GFNI", NOSPLIT, "func(a *uint64, nplanes int)")
	Pragma("noescape")
	Doc("transposeBits64GFNI is transposeBits64 on each of the nplanes 64-word tiles at a:",
		"bit c of a[64p+r] becomes bit r of a[64p+c].")
	// gather: dst qword J byte 7-k = src qword k byte J, so that row 8I+k
	// is the affine matrix's byte 7-k, the one that makes output bit k.
	gather := GLOBL("transpose_gather", RODATA|NOPTR)
	for pos := 0; pos < 64; pos++ {
		J, k := pos/8, 7-pos%8
		DATA(pos, U8(8*k+J))
	}
	// spread: dst qword j byte i = src qword i byte j.
	spread := GLOBL("transpose_spread", RODATA|NOPTR)
	for j := 0; j < 8; j++ {
		for i := 0; i < 8; i++ {
			DATA(8*j+i, U8(8*i+j))
		}
	}
	a := Load(Param("a"), GP64())
	n := Load(Param("nplanes"), GP64())
	gi, si, unit := ZMM(), ZMM(), ZMM()
	VMOVDQU64(gather, gi)
	VMOVDQU64(spread, si)
	u := GP64()
	MOVQ(U64(0x8040201008040201), u) // byte j = 1<<j: affine(tile, 1<<j) is the tile's column j
	VPBROADCASTQ(u, unit)
	Label("tile")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	w := make([]VecVirtual, 8)
	for i := range w {
		w[i] = ZMM()
		VPERMB(Mem{Base: a, Disp: 64 * i}, gi, w[i])
		VGF2P8AFFINEQB(U8(0), w[i], unit, w[i])
	}
	// w[I] qword J is now tile (I, J) transposed: byte j holds column 8J+j
	// of rows 8I..8I+7. Output register J takes qword J of every w[I].
	uu := make([]VecVirtual, 8)
	for a2 := 0; a2 < 4; a2++ {
		uu[2*a2], uu[2*a2+1] = ZMM(), ZMM()
		VPUNPCKLQDQ(w[2*a2+1], w[2*a2], uu[2*a2])
		VPUNPCKHQDQ(w[2*a2+1], w[2*a2], uu[2*a2+1])
	}
	// uu[2a+e] lane L = (w[2a] qword 2L+e, w[2a+1] qword 2L+e).
	for e := 0; e < 2; e++ {
		vlo, vhi, wlo, whi := ZMM(), ZMM(), ZMM(), ZMM()
		VSHUFI64X2(U8(0x44), uu[2+e], uu[e], vlo)
		VSHUFI64X2(U8(0xee), uu[2+e], uu[e], vhi)
		VSHUFI64X2(U8(0x44), uu[6+e], uu[4+e], wlo)
		VSHUFI64X2(U8(0xee), uu[6+e], uu[4+e], whi)
		for L := 0; L < 4; L++ {
			src1, src2, imm := vlo, wlo, uint8(0x88)
			if L >= 2 {
				src1, src2 = vhi, whi
			}
			if L%2 == 1 {
				imm = 0xdd
			}
			r := ZMM()
			VSHUFI64X2(U8(imm), src2, src1, r)
			VPERMB(r, si, r)
			VMOVDQU64(r, Mem{Base: a, Disp: 64 * (2*L + e)})
		}
	}
	ADDQ(U32(512), a)
	DECQ(n)
	JMP(LabelRef("tile"))
	Label("done")
	VZEROUPPER()
	RET()
}
