package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const vertSignature = "func(out *int32, ldo int, a *uint64, lda int, pairs *int64, npairs int, bt *uint64, wstride int, kw int, ngroups int, nrows int, set int)"

// The vertical kernels are the short-K product: B is transposed once per
// product into bt[(j*kwTotal + w)*wstride + c] (plane j, word w, column c,
// wstride columns per word), so that one vector holds word w of vc
// consecutive columns (vc = 8 in a zmm, 4 in a ymm). A word of A is
// broadcast and ANDed with it; the popcounts land in the lane of their
// column, so no horizontal reduction is ever needed: one tile of R rows ×
// G·vc columns is accumulated over all plane pairs and words in
// registers, then stored with one conversion per vc outputs.
//
// The plane weights are applied by Horner's rule over the diagonals
// d = i + j, highest first: pairs (aoff, boff, shift) lists the plane
// pairs (i, j) with their byte offsets (i·aps·8 into a row of A, j·kwTotal·
// wstride·8 into bt), sorted by d descending, shift = 1 on the first pair
// of each diagonal after the first, where every accumulator doubles. That
// costs one shift per output per diagonal instead of one per plane pair.
//
// Each call covers ngroups (a multiple of G) groups of vc columns and
// nrows (a multiple of R) rows: groups outside, so a group's slice of bt
// stays in cache while every row block of A runs over it.

// With dword, the lanes are 32 bits wide instead of 64: bt holds
// half-words (bt32[(j*2*kwTotal + h)*wstride + c], h the 32-bit half of
// word h/2), A's half-words are broadcast, and a vector holds twice as
// many columns (16 in a zmm, 8 in a ymm) with 32-bit sums, which store
// with a plain add instead of a narrowing: per output, half the store and
// set-up work of the 64-bit lanes, for the same AND+popcount work.

// vertKernel emits vert<isa>[D]R<r>G<g>.
func vertKernel(avx512, dword bool, R, G int, lut, low, ones8, ones16 Mem) {
	isa, vc := "AVX2", 4
	if avx512 {
		isa, vc = "AVX512", 8
	}
	unit := 8 // bytes per lane
	if dword {
		isa += "D"
		vc *= 2
		unit = 4
	}
	name := fmt.Sprintf("vert%sR%dG%d", isa, R, G)
	sig := vertSignature
	if dword {
		sig = strings.Replace(sig, "bt *uint64", "bt *uint32", 1)
	}
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	doc := []string{
		name + " is the vertical short-K kernel (the Go loop vertGeneric), AVX-512 VPOPCNTDQ, tiles of",
		fmt.Sprintf("%d rows × %d columns: out[r*ldo+c] += Σ_(i,j) popcount(A_i[r][0:kw] & B_j[c][0:kw]) << (i+j)", R, G*vc),
		fmt.Sprintf("for r < nrows (a multiple of %d), c < %d·ngroups (ngroups a multiple of %d).", R, vc, G),
	}
	if !avx512 {
		doc[0] = name + " is the vertical short-K kernel (the Go loop vertGeneric), AVX2 vpshufb popcount, tiles of"
		doc[2] = fmt.Sprintf("for r < nrows (a multiple of %d), c < %d·ngroups (ngroups a multiple of %d); kw <= %d.", R, vc, G, map[bool]int{false: 31, true: 15}[dword])
	}
	if dword {
		doc = append(doc, "Lanes of 32 bits: bt holds half-words (vertGeneric[uint32]).")
	}
	Doc(doc...)
	log2 := map[int]uint8{1: 0, 2: 1, 4: 2, 8: 3}
	outG, btG, gb, outRow, aRow, rb := AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8), AllocLocal(8)
	var mask, table, zero VecVirtual
	if !avx512 {
		mask, table = YMM(), YMM()
		VMOVDQU(low, mask)
		VMOVDQU(lut, table)
		if !dword {
			zero = YMM()
			VPXOR(zero, zero, zero)
		}
	}
	{
		o := Load(Param("out"), GP64())
		MOVQ(o, outG)
		b := Load(Param("bt"), GP64())
		MOVQ(b, btG)
		n := Load(Param("ngroups"), GP64())
		SHRQ(U8(log2[G]), n)
		MOVQ(n, gb)
	}
	p := name + "_"
	Label(p + "gb")
	CMPQ(gb, U8(0))
	JE(LabelRef(p + "done"))
	{
		o := GP64()
		MOVQ(outG, o)
		MOVQ(o, outRow)
		a := Load(Param("a"), GP64())
		MOVQ(a, aRow)
		n := Load(Param("nrows"), GP64())
		SHRQ(U8(log2[R]), n)
		MOVQ(n, rb)
	}
	Label(p + "rb")
	CMPQ(rb, U8(0))
	JE(LabelRef(p + "gbnext"))

	newVec := func() VecVirtual {
		if avx512 {
			return ZMM()
		}
		return YMM()
	}
	zeroVec := func(v VecVirtual) {
		if avx512 {
			VPXORQ(v, v, v)
		} else {
			VPXOR(v, v, v)
		}
	}
	acc := make([][]VecVirtual, R) // the weighted sums, one qword per column
	var bacc [][]VecVirtual        // AVX2: byte counts of the current pair
	for r := range acc {
		acc[r] = make([]VecVirtual, G)
		for g := range acc[r] {
			acc[r][g] = newVec()
			zeroVec(acc[r][g])
		}
	}
	if !avx512 {
		bacc = make([][]VecVirtual, R)
		for r := range bacc {
			bacc[r] = make([]VecVirtual, G)
			for g := range bacc[r] {
				bacc[r][g] = YMM()
				VPXOR(bacc[r][g], bacc[r][g], bacc[r][g])
			}
		}
	}
	pp := Load(Param("pairs"), GP64())
	pc := Load(Param("npairs"), GP64())
	Label(p + "pair")
	CMPQ(Mem{Base: pp, Disp: 16}, U8(0))
	JE(LabelRef(p + "noshift"))
	for r := range acc {
		for g := range acc[r] {
			if dword {
				VPSLLD(U8(1), acc[r][g], acc[r][g])
			} else {
				VPSLLQ(U8(1), acc[r][g], acc[r][g])
			}
		}
	}
	Label(p + "noshift")
	pa, pb := GP64(), GP64()
	MOVQ(aRow, pa)
	ADDQ(Mem{Base: pp}, pa)
	MOVQ(btG, pb)
	ADDQ(Mem{Base: pp, Disp: 8}, pb)
	lda, lda3 := GP64(), GP64()
	Load(Param("lda"), lda)
	SHLQ(U8(3), lda)
	LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	var pa4 GPVirtual
	if R > 4 {
		pa4 = GP64()
		LEAQ(Mem{Base: pa, Index: lda, Scale: 4}, pa4)
	}
	ws := Load(Param("wstride"), GP64())
	n := Load(Param("kw"), GP64())
	if dword {
		SHLQ(U8(1), n) // half-words
		SHLQ(U8(2), ws)
	} else {
		SHLQ(U8(3), ws)
	}
	rowMem := func(r int) Mem {
		base := pa
		if r >= 4 {
			base = pa4
		}
		switch r % 4 {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: lda, Scale: 1}
		case 2:
			return Mem{Base: base, Index: lda, Scale: 2}
		}
		return Mem{Base: base, Index: lda3, Scale: 1}
	}
	Label(p + "w")
	bv := make([]VecVirtual, G)
	for g := range bv {
		bv[g] = newVec()
		if avx512 {
			VMOVDQU64(Mem{Base: pb, Disp: 64 * g}, bv[g])
		} else {
			VMOVDQU(Mem{Base: pb, Disp: 32 * g}, bv[g])
		}
	}
	for r := 0; r < R; r++ {
		x := newVec()
		if dword {
			VPBROADCASTD(rowMem(r), x)
		} else {
			VPBROADCASTQ(rowMem(r), x)
		}
		for g := 0; g < G; g++ {
			if avx512 {
				t := ZMM()
				if dword {
					VPANDD(bv[g], x, t)
					VPOPCNTD(t, t)
					VPADDD(t, acc[r][g], acc[r][g])
				} else {
					VPANDQ(bv[g], x, t)
					VPOPCNTQ(t, t)
					VPADDQ(t, acc[r][g], acc[r][g])
				}
				continue
			}
			t, h := nibbleCounts(x, bv[g], mask, table)
			VPADDB(t, bacc[r][g], bacc[r][g])
			VPADDB(h, bacc[r][g], bacc[r][g])
		}
	}
	ADDQ(U8(unit), pa)
	if R > 4 {
		ADDQ(U8(unit), pa4)
	}
	ADDQ(ws, pb)
	DECQ(n)
	JNZ(LabelRef(p + "w"))
	if !avx512 {
		// A byte gains at most 8 per step (two nibble counts), so 31 steps
		// cannot overflow it; the pair's counts join the weighted sums:
		// per qword (VPSADBW) or per dword (bytes to words to dwords).
		for r := range bacc {
			for g := range bacc[r] {
				t := YMM()
				if dword {
					VPMADDUBSW(ones8, bacc[r][g], t)
					VPMADDWD(ones16, t, t)
					VPADDD(t, acc[r][g], acc[r][g])
				} else {
					VPSADBW(zero, bacc[r][g], t)
					VPADDQ(t, acc[r][g], acc[r][g])
				}
				VPXOR(bacc[r][g], bacc[r][g], bacc[r][g])
			}
		}
	}
	ADDQ(U8(24), pp)
	DECQ(pc)
	JNZ(LabelRef(p + "pair"))

	// Store: each sum fits in int32 (bmm.Check), so the qwords narrow to
	// dwords and add to out, or replace it when set is not 0 (the first
	// write of a tile that was never cleared).
	store := func(add bool) {
		o := GP64()
		MOVQ(outRow, o)
		ldo := Load(Param("ldo"), GP64())
		SHLQ(U8(2), ldo)
		for r := 0; r < R; r++ {
			for g := 0; g < G; g++ {
				dst := Mem{Base: o, Disp: 4 * vc * g}
				if dword {
					if add {
						VPADDD(dst, acc[r][g], acc[r][g])
					}
					if avx512 {
						VMOVDQU32(acc[r][g], dst)
					} else {
						VMOVDQU(acc[r][g], dst)
					}
					continue
				}
				if avx512 {
					y := YMM()
					VPMOVQD(acc[r][g], y)
					if add {
						VPADDD(dst, y, y)
					}
					VMOVDQU32(y, dst)
					continue
				}
				x := XMM()
				VEXTRACTI128(U8(1), acc[r][g], x)
				VSHUFPS(U8(0x88), x, acc[r][g].AsX(), x) // low dword of each qword
				if add {
					VPADDD(dst, x, x)
				}
				VMOVDQU(x, dst)
			}
			if r+1 < R {
				ADDQ(ldo, o)
			}
		}
	}
	set := Load(Param("set"), GP64())
	TESTQ(set, set)
	JNZ(LabelRef(p + "set"))
	store(true)
	JMP(LabelRef(p + "stored"))
	Label(p + "set")
	store(false)
	Label(p + "stored")
	{
		l := Load(Param("lda"), GP64())
		SHLQ(U8(3+log2[R]), l)
		ADDQ(l, aRow)
		d := Load(Param("ldo"), GP64())
		SHLQ(U8(2+log2[R]), d)
		ADDQ(d, outRow)
		DECQ(rb)
		JMP(LabelRef(p + "rb"))
	}
	Label(p + "gbnext")
	ADDQ(U32(4*vc*G), outG)
	ADDQ(U32(unit*vc*G), btG)
	DECQ(gb)
	JMP(LabelRef(p + "gb"))
	Label(p + "done")
	VZEROUPPER()
	RET()
}

// vertTiles are the (rows, groups) register tiles of the vertical
// kernels: a main tile per group count and a one-row tile for the rest of
// the rows. AVX-512 keeps up to 16 zmm accumulators of 8 columns; AVX2,
// with 16 ymm registers, four rows of one 4-column group (a qword and a
// byte accumulator each, plus the nibble table, its mask and a zero).
var vertTiles = map[bool][][2]int{
	true:  {{4, 4}, {1, 4}, {8, 2}, {1, 2}, {8, 1}, {1, 1}},
	false: {{4, 1}, {1, 1}},
}

func vertKernels(lut, low Mem) {
	ones8 := GLOBL("vert_ones8", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(1))
	}
	ones16 := GLOBL("vert_ones16", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(2*i, U16(1))
	}
	for _, dword := range []bool{false, true} {
		for _, avx512 := range []bool{true, false} {
			for _, t := range vertTiles[avx512] {
				vertKernel(avx512, dword, t[0], t[1], lut, low, ones8, ones16)
			}
		}
	}
}

// chunkBitsAVX512 is the zero-chunk test of contiguous lines: bit c of the
// bit stream at dst is (a[4c : 4c+4] != 0), for c < n, n a multiple of
// 16. Per 16 chunks: eight VPTESTMQ give one bit per word, gathered into
// a 64-bit register and folded four bits to one, stored as 16 bits.
func chunkBitsAVX512() {
	TEXT("chunkBitsAVX512", NOSPLIT, "func(dst *uint64, a *uint64, n int)")
	Pragma("noescape")
	Doc("chunkBitsAVX512 sets bit c of the bit stream at dst to (a[4c : 4c+4] != 0), for c < n,",
		"n a multiple of 16, 16 bits at a time (markRowsGeneric over contiguous lines).")
	dst := Load(Param("dst"), GP64())
	a := Load(Param("a"), GP64())
	n := Load(Param("n"), GP64())
	SHRQ(U8(4), n)
	ones := ZMM()
	VPTERNLOGD(U8(0xff), ones, ones, ones)
	m1, m3, mf, mff := GP64(), GP64(), GP64(), GP64()
	MOVQ(U64(0x1111111111111111), m1)
	MOVQ(U64(0x0303030303030303), m3)
	MOVQ(U64(0x000f000f000f000f), mf)
	MOVQ(U64(0x000000ff000000ff), mff)
	TESTQ(n, n)
	JZ(LabelRef("chunkbits_done"))
	Label("chunkbits_loop")
	// Word bits of zmm z in bits 8z..8z+7 of one 64-bit mask register:
	// KUNPCK's low half comes from its first operand.
	var w [4]Register
	for z := range w {
		lo, hi := K(), K()
		VPTESTMQ(Mem{Base: a, Disp: 128 * z}, ones, lo)
		VPTESTMQ(Mem{Base: a, Disp: 128*z + 64}, ones, hi)
		w[z] = K()
		KUNPCKBW(lo, hi, w[z])
	}
	d0, d1, q := K(), K(), K()
	KUNPCKWD(w[0], w[1], d0)
	KUNPCKWD(w[2], w[3], d1)
	KUNPCKDQ(d0, d1, q)
	acc := GP64()
	KMOVQ(q, acc)
	// Bit 4k of y: any of word bits 4k..4k+3 (chunk k); then pack.
	y := GP64()
	MOVQ(acc, y)
	SHRQ(U8(1), y)
	ORQ(y, acc)
	MOVQ(acc, y)
	SHRQ(U8(2), y)
	ORQ(y, acc)
	ANDQ(m1, acc)
	for _, s := range []struct {
		shift uint8
		mask  GPVirtual
	}{{3, m3}, {6, mf}, {12, mff}} {
		MOVQ(acc, y)
		SHRQ(U8(s.shift), y)
		ORQ(y, acc)
		ANDQ(s.mask, acc)
	}
	MOVQ(acc, y)
	SHRQ(U8(24), y)
	ORQ(y, acc)
	MOVW(acc.As16(), Mem{Base: dst})
	ADDQ(U8(2), dst)
	ADDQ(U32(512), a)
	DECQ(n)
	JNZ(LabelRef("chunkbits_loop"))
	Label("chunkbits_done")
	VZEROUPPER()
	RET()
}
