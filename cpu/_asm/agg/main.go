// Command agg generates the AVX2 kernel of cpu's sparse code aggregation:
// go run ./agg -out ../agg_gen_amd64.s -stubs ../agg_gen_amd64.go -pkg cpu
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	TEXT("aggRowsAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, indptr *int32, idx *int32, wt *uint8, rows int, chunk int)")
	Pragma("noescape")
	Doc("aggRowsAVX2 is aggRowsGeneric without weights (wt unused): for r < rows,",
		"acc[r*stride+j] += x[idx[e]*stride+j] for indptr[r] <= e < indptr[r+1] and",
		"j < stride (stride a multiple of 16). Codes are summed as bytes (VPADDB), 64",
		"columns at a time; every chunk sources (chunk·max code < 256) the byte sums",
		"are widened to int32 and added to acc, before they can wrap.")
	rowsKernel(byteSums)

	TEXT("aggRowsWideAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, indptr *int32, idx *int32, wt *uint8, rows int, chunk int)")
	Pragma("noescape")
	Doc("aggRowsWideAVX2 is aggRowsAVX2 with uint16 sums (VPMOVZXBW, VPADDW) for",
		"codes too wide for byte sums to last: flushed every chunk sources",
		"(chunk·max code < 65536).")
	rowsKernel(wordSums)

	TEXT("aggRowsWeightedAVX2", NOSPLIT, "func(acc *int32, x *uint8, stride int, indptr *int32, idx *int32, wt *uint8, rows int, chunk int)")
	Pragma("noescape")
	Doc("aggRowsWeightedAVX2 is aggRowsGeneric with weights: acc[r*stride+j] +=",
		"wt[e]·x[idx[e]*stride+j], like aggRowsWideAVX2 with each source's widened",
		"codes multiplied by its weight (VPMULLW) before the sum (chunk·max",
		"code·max weight < 65536).")
	rowsKernel(weightedSums)
	Generate()
}

// accum is how a kernel accumulates the codes of one column group.
type accum int

const (
	byteSums     accum = iota // VPADDB, 32 columns a ymm
	wordSums                  // VPMOVZXBW + VPADDW, 16 columns a ymm
	weightedSums              // wordSums with VPMULLW by the source's weight
)

// rowsKernel emits a loop over rows around the column groups (64, 32 and
// 16 wide) of each row.
func rowsKernel(mode accum) {
	acc := Load(Param("acc"), GP64())
	x := Load(Param("x"), GP64())
	stride := Load(Param("stride"), GP64())
	indptr := Load(Param("indptr"), GP64())
	idx := Load(Param("idx"), GP64())
	var wt Register
	if mode == weightedSums {
		wt = Load(Param("wt"), GP64())
	}
	rows := Load(Param("rows"), GP64())
	chunk := Load(Param("chunk"), GP64())
	e1 := GP64()
	col := GP64()

	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("rows_done"))
	MOVLQSX(Mem{Base: indptr, Disp: 4}, e1)
	XORQ(col, col)
	for _, cols := range []int{64, 32, 16} {
		colGroup(mode, cols, acc, x, stride, indptr, idx, wt, e1, chunk, col)
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

// colGroup emits the loop over groups of cols (64, 32 or 16) columns of
// one row, over its sources indptr[0] <= e < n: for each chunk of sources,
// sum them in registers, then widen the sums and add them to acc.
func colGroup(mode accum, cols int, acc, x, stride, indptr, idx, wt, n, chunk, col Register) {
	name := fmt.Sprintf("m%dc%d", mode, cols)
	wide := mode != byteSums
	lanes := 32 // columns per accumulator
	if wide {
		lanes = 16
	}
	Label(name + "_group")
	rest := GP64()
	MOVQ(stride, rest)
	SUBQ(col, rest)
	CMPQ(rest, U32(cols))
	JL(LabelRef(name + "_done"))

	e := GP64()
	MOVLQSX(Mem{Base: indptr}, e)
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
	var wv VecVirtual
	if mode == weightedSums {
		wg := GP32()
		MOVBLZX(Mem{Base: wt, Index: e, Scale: 1}, wg)
		wv = YMM()
		VMOVD(wg, wv.AsX())
		VPBROADCASTW(wv.AsX(), wv)
	}
	for i, v := range sums {
		if wide {
			t := YMM()
			VPMOVZXBW(Mem{Base: row, Index: col, Scale: 1, Disp: 16 * i}, t)
			if mode == weightedSums {
				VPMULLW(wv, t, t)
			}
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
