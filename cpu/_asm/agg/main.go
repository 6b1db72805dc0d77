// Command agg generates the AVX2 kernel of cpu's sparse code aggregation:
// go run ./agg -out ../agg_amd64.s -stubs ../agg_amd64.go -pkg cpu
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	TEXT("aggRowsAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, indptr *int32, idx *int32, rows int, chunk int)")
	Pragma("noescape")
	Doc("aggRowsAVX2 is aggRowGeneric over rows rows: for r < rows, acc[r*stride+j] +=",
		"x[idx[e]*stride+j] for indptr[r] <= e < indptr[r+1] and j < stride (stride a",
		"multiple of 16). Codes are summed as bytes (VPADDB), 64 columns at a time;",
		"every chunk sources (chunk·max code < 256) the byte sums are widened to",
		"int32 and added to acc, before they can wrap.")
	byteKernel(false)

	TEXT("aggRowsWideAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, indptr *int32, idx *int32, rows int, chunk int)")
	Pragma("noescape")
	Doc("aggRowsWideAVX2 is aggRowsAVX2 with uint16 sums (VPMOVZXBW, VPADDW) for",
		"codes too wide for byte sums to last: flushed every chunk sources",
		"(chunk·max code < 65536).")
	byteKernel(true)

	TEXT("aggRowWeightedAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, idx *int32, wt *uint8, n int, chunk int)")
	Pragma("noescape")
	Doc("aggRowWeightedAVX2 is aggRowWeightedGeneric: acc[j] += wt[e]·x[idx[e]*stride+j]",
		"for e < n, j < stride (stride a multiple of 16), like aggRowAVX2 with each",
		"source's widened codes multiplied by its weight (VPMULLW) before the sum.")
	kernel(true)
	Generate()
}

func kernel(weighted bool) {
	acc := Load(Param("acc"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	idx := Load(Param("idx"), GP64())
	var wt Register
	if weighted {
		wt = Load(Param("wt"), GP64())
	}
	n := Load(Param("n"), GP64())
	chunk := Load(Param("chunk"), GP64())

	// col walks the column groups; the 64-wide body runs while 64 columns
	// remain, then 16-wide groups finish the row.
	col := GP64()
	XORQ(col, col)
	prefix := "u"
	if weighted {
		prefix = "w"
	}
	group(prefix, 4, acc, x, stride, idx, wt, n, chunk, col)
	group(prefix, 1, acc, x, stride, idx, wt, n, chunk, col)
	VZEROUPPER()
	RET()
}

// group emits the loop over column groups of w×16 columns: for each group,
// for each chunk of sources, sum the widened codes in w ymm registers, then
// widen the sums and add them to acc.
func group(prefix string, w int, acc, x, stride, idx, wt, n, chunk, col Register) {
	name := fmt.Sprintf("%s%d", prefix, w)
	Label(name + "_group")
	rest := GP64()
	MOVQ(stride, rest)
	SUBQ(col, rest)
	CMPQ(rest, U32(16*w))
	JL(LabelRef(name + "_done"))

	e := GP64() // next source
	XORQ(e, e)
	Label(name + "_chunk")
	end := GP64()
	MOVQ(e, end)
	ADDQ(chunk, end)
	CMPQ(end, n)
	CMOVQGT(n, end)
	sums := make([]VecVirtual, w)
	for i := range sums {
		sums[i] = YMM()
		VPXOR(sums[i], sums[i], sums[i])
	}
	CMPQ(e, end)
	JGE(LabelRef(name + "_flush"))
	Label(name + "_src")
	row := GP64()
	MOVLQSX(Mem{Base: idx, Index: e, Scale: 4}, row)
	IMULQ(stride, row)
	ADDQ(x, row)
	var wv VecVirtual
	if wt != nil {
		wg := GP32()
		MOVBLZX(Mem{Base: wt, Index: e, Scale: 1}, wg)
		wv = YMM()
		VMOVD(wg, wv.AsX())
		VPBROADCASTW(wv.AsX(), wv)
	}
	for i := range sums {
		t := YMM()
		VPMOVZXBW(Mem{Base: row, Index: col, Scale: 1, Disp: 16 * i}, t)
		if wt != nil {
			VPMULLW(wv, t, t)
		}
		VPADDW(t, sums[i], sums[i])
	}
	INCQ(e)
	CMPQ(e, end)
	JL(LabelRef(name + "_src"))

	Label(name + "_flush")
	for i, s := range sums {
		lo, hi := YMM(), YMM()
		VPMOVZXWD(s.AsX(), lo)
		VEXTRACTI128(U8(1), s, hi.AsX())
		VPMOVZXWD(hi.AsX(), hi)
		out := Mem{Base: acc, Index: col, Scale: 4, Disp: 64 * i}
		VPADDD(out, lo, lo)
		VMOVDQU(lo, out)
		out.Disp += 32
		VPADDD(out, hi, hi)
		VMOVDQU(hi, out)
	}
	CMPQ(e, n)
	JL(LabelRef(name + "_chunk"))

	ADDQ(U32(16*w), col)
	JMP(LabelRef(name + "_group"))
	Label(name + "_done")
}

// byteKernel is the unweighted kernel: byte sums in registers, a loop
// over rows around the column groups.
func byteKernel(wide bool) {
	acc := Load(Param("acc"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	indptr := Load(Param("indptr"), GP64())
	idx := Load(Param("idx"), GP64())
	rows := Load(Param("rows"), GP64())
	chunk := Load(Param("chunk"), GP64())
	e0, e1 := GP64(), GP64()
	col := GP64()

	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("rows_done"))
	MOVLQSX(Mem{Base: indptr}, e0)
	MOVLQSX(Mem{Base: indptr, Disp: 4}, e1)
	XORQ(col, col)
	for _, cols := range []int{64, 32, 16} {
		byteGroup(wide, cols, acc, x, stride, idx, e0, e1, chunk, col)
	}
	// Next row: acc moves by stride int32s.
	LEAQ(Mem{Base: acc, Index: stride, Scale: 4}, acc)
	ADDQ(U8(4), indptr)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("rows_done")
	VZEROUPPER()
	RET()
}

// byteGroup emits the loop over groups of cols (64, 32 or 16) columns of
// one row, over the sources e0 <= e < e1.
func byteGroup(wide bool, cols int, acc, x, stride, idx, e0, n, chunk, col Register) {
	name := fmt.Sprintf("b%d", cols)
	lanes := 32 // columns per accumulator
	if wide {
		name = fmt.Sprintf("w%d", cols)
		lanes = 16
	}
	Label(name + "_group")
	rest := GP64()
	MOVQ(stride, rest)
	SUBQ(col, rest)
	CMPQ(rest, U32(cols))
	JL(LabelRef(name + "_done"))

	e := GP64()
	MOVQ(e0, e)
	Label(name + "_chunk")
	end := GP64()
	MOVQ(e, end)
	ADDQ(chunk, end)
	CMPQ(end, n)
	CMOVQGT(n, end)
	var sums []VecVirtual
	if cols < lanes {
		sums = []VecVirtual{XMM()}
	} else {
		for i := 0; i < cols/lanes; i++ {
			sums = append(sums, YMM())
		}
	}
	for _, v := range sums {
		VPXOR(v, v, v)
	}
	CMPQ(e, end)
	JGE(LabelRef(name + "_flush"))
	Label(name + "_src")
	row := GP64()
	MOVLQSX(Mem{Base: idx, Index: e, Scale: 4}, row)
	IMULQ(stride, row)
	ADDQ(x, row)
	for i, v := range sums {
		if wide {
			t := YMM()
			VPMOVZXBW(Mem{Base: row, Index: col, Scale: 1, Disp: 16 * i}, t)
			VPADDW(t, v, v)
			continue
		}
		VPADDB(Mem{Base: row, Index: col, Scale: 1, Disp: 32 * i}, v, v)
	}
	INCQ(e)
	CMPQ(e, end)
	JL(LabelRef(name + "_src"))

	// Widen each 8 bytes (or 8 words) to 8 int32 and add them to acc.
	Label(name + "_flush")
	for i, v := range sums {
		if wide {
			lo, hi := YMM(), YMM()
			VPMOVZXWD(v.AsX(), lo)
			VEXTRACTI128(U8(1), v, hi.AsX())
			VPMOVZXWD(hi.AsX(), hi)
			out := Mem{Base: acc, Index: col, Scale: 4, Disp: 64 * i}
			VPADDD(out, lo, lo)
			VMOVDQU(lo, out)
			out.Disp += 32
			VPADDD(out, hi, hi)
			VMOVDQU(hi, out)
			continue
		}
		halves := []Op{v.AsX()}
		if cols != 16 {
			hi := XMM()
			VEXTRACTI128(U8(1), v, hi)
			halves = append(halves, hi)
		}
		for h, x16 := range halves {
			for q := 0; q < 2; q++ {
				src := x16
				if q == 1 {
					sh := XMM()
					VPSRLDQ(U8(8), x16, sh)
					src = sh
				}
				t := YMM()
				VPMOVZXBD(src, t)
				out := Mem{Base: acc, Index: col, Scale: 4, Disp: 4 * (32*i + 16*h + 8*q)}
				VPADDD(out, t, t)
				VMOVDQU(t, out)
			}
		}
	}
	CMPQ(e, n)
	JL(LabelRef(name + "_chunk"))

	ADDQ(U32(cols), col)
	JMP(LabelRef(name + "_group"))
	Label(name + "_done")
}
