// Command sgemm generates the AVX2+FMA microkernel of templates.Sgemm:
// go run ./sgemm -out ../sgemm_gen_amd64.s -stubs ../sgemm_gen_amd64.go -pkg templates
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const (
	mr = 6
	nr = 16
)

func main() {
	ConstraintExpr("!purego")

	packed()
	direct()
	Generate()
}

// packed: A comes as a packed 6-row panel, a[p*6+i].
func packed() {
	TEXT("sgemmKernelAVX2", NOSPLIT, "func(k int, a, b, c *float32, ldc int, alpha float32)")
	Pragma("noescape")
	Doc("sgemmKernelAVX2 is sgemmKernelGeneric: c[i*ldc+j] += alpha·Σ_p a[p*6+i]·b[p*16+j]",
		"for a full 6×16 tile, the tile held in 12 ymm accumulators (FMA).")
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	kernel(k, b, func(i int) Mem { return Mem{Base: a, Disp: 4 * i} }, func() { ADDQ(U32(4*mr), a) })
}

// direct: A is read in place, row i at a + i·lda: for skinny products,
// where packing A would cost as much as the multiply.
func direct() {
	TEXT("sgemmKernelAVX2Direct", NOSPLIT, "func(k int, a *float32, lda int, b, c *float32, ldc int, alpha float32)")
	Pragma("noescape")
	Doc("sgemmKernelAVX2Direct is sgemmKernelGenericDirect: c[i*ldc+j] += alpha·Σ_p a[i*lda+p]·b[p*16+j]",
		"for a full 6×16 tile, A read in place (unpacked) with row stride lda.")
	k := Load(Param("k"), GP64())
	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	b := Load(Param("b"), GP64())
	SHLQ(U8(2), lda)
	a3 := GP64()
	LEAQ(Mem{Base: a, Index: lda, Scale: 2}, a3)
	ADDQ(lda, a3)
	rows := []Mem{{Base: a}, {Base: a, Index: lda, Scale: 1}, {Base: a, Index: lda, Scale: 2},
		{Base: a3}, {Base: a3, Index: lda, Scale: 1}, {Base: a3, Index: lda, Scale: 2}}
	kernel(k, b, func(i int) Mem { return rows[i] }, func() { ADDQ(U8(4), a); ADDQ(U8(4), a3) })
}

// kernel emits the k loop over 6 broadcasts of A (aAt) times 16 floats of
// packed B, then C += alpha·acc; c, ldc and alpha are loaded here.
func kernel(k, b Register, aAt func(i int) Mem, nextA func()) {
	var acc [mr][2]VecVirtual
	for i := range acc {
		for j := range acc[i] {
			acc[i][j] = YMM()
			VXORPS(acc[i][j], acc[i][j], acc[i][j])
		}
	}
	TESTQ(k, k)
	JZ(LabelRef("store"))

	Label("loop")
	b0, b1 := YMM(), YMM()
	VMOVUPS(Mem{Base: b}, b0)
	VMOVUPS(Mem{Base: b, Disp: 32}, b1)
	for i := 0; i < mr; i++ {
		t := YMM()
		VBROADCASTSS(aAt(i), t)
		VFMADD231PS(b0, t, acc[i][0])
		VFMADD231PS(b1, t, acc[i][1])
	}
	nextA()
	ADDQ(U32(4*nr), b)
	DECQ(k)
	JNZ(LabelRef("loop"))

	Label("store")
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc)
	al := Load(Param("alpha"), XMM())
	alpha := YMM()
	VBROADCASTSS(al, alpha)
	for i := 0; i < mr; i++ {
		for j := 0; j < 2; j++ {
			t := YMM()
			VMOVUPS(Mem{Base: c, Disp: 32 * j}, t)
			VFMADD231PS(acc[i][j], alpha, t)
			VMOVUPS(t, Mem{Base: c, Disp: 32 * j})
		}
		if i < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}
