//go:build !purego

// Hand-written AVX2+FMA and AVX-512 loops of the sparse templates, not
// generated (templates/_asm generates only Sgemm's microkernel): hence
// spmm_amd64.s, not spmm_gen_amd64.s. Each keeps a tile of the destination
// row in registers while it gathers source rows, so the output is loaded
// and stored once per row instead of once per edge.

#include "textflag.h"

// func spmmGatherSumAVX2(acc, x *float32, idx *int32, n, ldx, w int)
// Implements gatherSumGeneric: acc[k] += Σ_j x[idx[j]*ldx + k], k < w, w%8 == 0.
TEXT ·spmmGatherSumAVX2(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ idx+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ ldx+32(FP), R9
	SHLQ $2, R9
	MOVQ w+40(FP), DX

sum64:
	CMPQ DX, $64
	JL   sum32
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	XORQ BX, BX

sum64loop:
	CMPQ    BX, CX
	JGE     sum64done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	VADDPS  0(AX), Y0, Y0
	VADDPS  32(AX), Y1, Y1
	VADDPS  64(AX), Y2, Y2
	VADDPS  96(AX), Y3, Y3
	VADDPS  128(AX), Y4, Y4
	VADDPS  160(AX), Y5, Y5
	VADDPS  192(AX), Y6, Y6
	VADDPS  224(AX), Y7, Y7
	INCQ    BX
	JMP     sum64loop

sum64done:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	ADDQ    $256, SI
	SUBQ    $64, DX
	JMP     sum64

	// 8..56 columns left: one register per 8 columns, two edges per step
	// into two register sets to halve the dependency chains.
sum32:
	CMPQ DX, $32
	JL   sum8
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	XORQ    BX, BX

sum32loop:
	LEAQ    1(BX), R10
	CMPQ    R10, CX
	JGE     sum32tail
	MOVLQSX (R8)(BX*4), AX
	MOVLQSX 4(R8)(BX*4), R11
	IMULQ   R9, AX
	IMULQ   R9, R11
	ADDQ    SI, AX
	ADDQ    SI, R11
	VADDPS  0(AX), Y0, Y0
	VADDPS  32(AX), Y1, Y1
	VADDPS  64(AX), Y2, Y2
	VADDPS  96(AX), Y3, Y3
	VADDPS  0(R11), Y4, Y4
	VADDPS  32(R11), Y5, Y5
	VADDPS  64(R11), Y6, Y6
	VADDPS  96(R11), Y7, Y7
	ADDQ    $2, BX
	JMP     sum32loop

sum32tail:
	CMPQ    BX, CX
	JGE     sum32done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	VADDPS  0(AX), Y0, Y0
	VADDPS  32(AX), Y1, Y1
	VADDPS  64(AX), Y2, Y2
	VADDPS  96(AX), Y3, Y3

sum32done:
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     sum32

sum8:
	CMPQ DX, $8
	JL   sumdone
	VMOVUPS 0(DI), Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	XORQ    BX, BX

sum8loop:
	LEAQ    3(BX), R10
	CMPQ    R10, CX
	JGE     sum8tail
	MOVLQSX (R8)(BX*4), AX
	MOVLQSX 4(R8)(BX*4), R11
	MOVLQSX 8(R8)(BX*4), R12
	MOVLQSX 12(R8)(BX*4), R13
	IMULQ   R9, AX
	IMULQ   R9, R11
	IMULQ   R9, R12
	IMULQ   R9, R13
	VADDPS  (SI)(AX*1), Y0, Y0
	VADDPS  (SI)(R11*1), Y1, Y1
	VADDPS  (SI)(R12*1), Y2, Y2
	VADDPS  (SI)(R13*1), Y3, Y3
	ADDQ    $4, BX
	JMP     sum8loop

sum8tail:
	CMPQ    BX, CX
	JGE     sum8done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	VADDPS  (SI)(AX*1), Y0, Y0
	INCQ    BX
	JMP     sum8tail

sum8done:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, DX
	JMP     sum8

sumdone:
	VZEROUPPER
	RET

// func spmmGatherAxpyAVX2(acc, x *float32, idx *int32, wt *float32, n, ldx, w int)
// Implements gatherAxpyGeneric: acc[k] += Σ_j wt[j]*x[idx[j]*ldx + k], k < w, w%8 == 0.
TEXT ·spmmGatherAxpyAVX2(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ idx+16(FP), R8
	MOVQ wt+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ ldx+40(FP), R9
	SHLQ $2, R9
	MOVQ w+48(FP), DX

axpy64:
	CMPQ DX, $64
	JL   axpy32
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	XORQ BX, BX

axpy64loop:
	CMPQ         BX, CX
	JGE          axpy64done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	ADDQ         SI, AX
	VBROADCASTSS (R10)(BX*4), Y15
	VFMADD231PS  0(AX), Y15, Y0
	VFMADD231PS  32(AX), Y15, Y1
	VFMADD231PS  64(AX), Y15, Y2
	VFMADD231PS  96(AX), Y15, Y3
	VFMADD231PS  128(AX), Y15, Y4
	VFMADD231PS  160(AX), Y15, Y5
	VFMADD231PS  192(AX), Y15, Y6
	VFMADD231PS  224(AX), Y15, Y7
	INCQ         BX
	JMP          axpy64loop

axpy64done:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ    $256, DI
	ADDQ    $256, SI
	SUBQ    $64, DX
	JMP     axpy64

axpy32:
	CMPQ DX, $32
	JL   axpy8
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	XORQ    BX, BX

axpy32loop:
	LEAQ         1(BX), R11
	CMPQ         R11, CX
	JGE          axpy32tail
	MOVLQSX      (R8)(BX*4), AX
	MOVLQSX      4(R8)(BX*4), R11
	IMULQ        R9, AX
	IMULQ        R9, R11
	ADDQ         SI, AX
	ADDQ         SI, R11
	VBROADCASTSS (R10)(BX*4), Y14
	VBROADCASTSS 4(R10)(BX*4), Y15
	VFMADD231PS  0(AX), Y14, Y0
	VFMADD231PS  32(AX), Y14, Y1
	VFMADD231PS  64(AX), Y14, Y2
	VFMADD231PS  96(AX), Y14, Y3
	VFMADD231PS  0(R11), Y15, Y4
	VFMADD231PS  32(R11), Y15, Y5
	VFMADD231PS  64(R11), Y15, Y6
	VFMADD231PS  96(R11), Y15, Y7
	ADDQ         $2, BX
	JMP          axpy32loop

axpy32tail:
	CMPQ         BX, CX
	JGE          axpy32done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	ADDQ         SI, AX
	VBROADCASTSS (R10)(BX*4), Y14
	VFMADD231PS  0(AX), Y14, Y0
	VFMADD231PS  32(AX), Y14, Y1
	VFMADD231PS  64(AX), Y14, Y2
	VFMADD231PS  96(AX), Y14, Y3

axpy32done:
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     axpy32

axpy8:
	CMPQ DX, $8
	JL   axpydone
	VMOVUPS 0(DI), Y0
	VXORPS  Y1, Y1, Y1
	XORQ    BX, BX

axpy8loop:
	LEAQ         1(BX), R11
	CMPQ         R11, CX
	JGE          axpy8tail
	MOVLQSX      (R8)(BX*4), AX
	MOVLQSX      4(R8)(BX*4), R11
	IMULQ        R9, AX
	IMULQ        R9, R11
	VBROADCASTSS (R10)(BX*4), Y14
	VBROADCASTSS 4(R10)(BX*4), Y15
	VFMADD231PS  (SI)(AX*1), Y14, Y0
	VFMADD231PS  (SI)(R11*1), Y15, Y1
	ADDQ         $2, BX
	JMP          axpy8loop

axpy8tail:
	CMPQ         BX, CX
	JGE          axpy8done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	VBROADCASTSS (R10)(BX*4), Y14
	VFMADD231PS  (SI)(AX*1), Y14, Y0

axpy8done:
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, DX
	JMP     axpy8

axpydone:
	VZEROUPPER
	RET

// func spmmDotAVX2(a, b *float32, n int) float32
// Implements dotGeneric over n values, n%8 == 0.
TEXT ·spmmDotAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot32:
	CMPQ        CX, $32
	JL          dot8
	VMOVUPS     0(SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         dot32

dot8:
	CMPQ        CX, $8
	JL          dotdone
	VMOVUPS     0(SI), Y4
	VFMADD231PS 0(DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dot8

dotdone:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func spmmDotRowsAVX2(dst, x *float32, idx *int32, n, ldx int, y *float32, w int)
// Implements dotRowsGeneric: dst[j] = Σ_k x[idx[j]*ldx + k]*y[k], k < w, w%8 == 0.
TEXT ·spmmDotRowsAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ idx+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ ldx+32(FP), R9
	SHLQ $2, R9
	MOVQ y+40(FP), R10
	MOVQ w+48(FP), R12
	SHLQ $2, R12
	XORQ BX, BX

rows:
	CMPQ    BX, CX
	JGE     rowsdone
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	XORQ    R11, R11

cols16:
	LEAQ        64(R11), R13
	CMPQ        R13, R12
	JGT         cols8
	VMOVUPS     (AX)(R11*1), Y2
	VMOVUPS     32(AX)(R11*1), Y3
	VFMADD231PS (R10)(R11*1), Y2, Y0
	VFMADD231PS 32(R10)(R11*1), Y3, Y1
	MOVQ        R13, R11
	JMP         cols16

cols8:
	// At most one block of 8 is left, as w%8 == 0.
	CMPQ        R11, R12
	JGE         hsum
	VMOVUPS     (AX)(R11*1), Y2
	VFMADD231PS (R10)(R11*1), Y2, Y0

hsum:
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (DI)(BX*4)
	INCQ         BX
	JMP          rows

rowsdone:
	VZEROUPPER
	RET

// func spmmGatherSumAVX512(acc, x *float32, idx *int32, n, ldx, w int)
// Implements gatherSumGeneric for w%16 == 0 with 16 ZMM accumulators: a
// 256-column chunk of the row stays in registers, so a 1 KB source row is
// read in one sequential sweep.
TEXT ·spmmGatherSumAVX512(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ idx+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ ldx+32(FP), R9
	SHLQ $2, R9
	MOVQ w+40(FP), DX

z256:
	CMPQ      DX, $256
	JL        z64
	VMOVUPS   0(DI), Z0
	VMOVUPS   64(DI), Z1
	VMOVUPS   128(DI), Z2
	VMOVUPS   192(DI), Z3
	VMOVUPS   256(DI), Z4
	VMOVUPS   320(DI), Z5
	VMOVUPS   384(DI), Z6
	VMOVUPS   448(DI), Z7
	VMOVUPS   512(DI), Z8
	VMOVUPS   576(DI), Z9
	VMOVUPS   640(DI), Z10
	VMOVUPS   704(DI), Z11
	VMOVUPS   768(DI), Z12
	VMOVUPS   832(DI), Z13
	VMOVUPS   896(DI), Z14
	VMOVUPS   960(DI), Z15
	XORQ      BX, BX

z256loop:
	CMPQ    BX, CX
	JGE     z256done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	VADDPS  0(AX), Z0, Z0
	VADDPS  64(AX), Z1, Z1
	VADDPS  128(AX), Z2, Z2
	VADDPS  192(AX), Z3, Z3
	VADDPS  256(AX), Z4, Z4
	VADDPS  320(AX), Z5, Z5
	VADDPS  384(AX), Z6, Z6
	VADDPS  448(AX), Z7, Z7
	VADDPS  512(AX), Z8, Z8
	VADDPS  576(AX), Z9, Z9
	VADDPS  640(AX), Z10, Z10
	VADDPS  704(AX), Z11, Z11
	VADDPS  768(AX), Z12, Z12
	VADDPS  832(AX), Z13, Z13
	VADDPS  896(AX), Z14, Z14
	VADDPS  960(AX), Z15, Z15
	INCQ    BX
	JMP     z256loop

z256done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	ADDQ    $1024, DI
	ADDQ    $1024, SI
	SUBQ    $256, DX
	JMP     z256

z64:
	CMPQ    DX, $64
	JL      z16
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VPXORD  Z4, Z4, Z4
	VPXORD  Z5, Z5, Z5
	VPXORD  Z6, Z6, Z6
	VPXORD  Z7, Z7, Z7
	XORQ    BX, BX

z64loop:
	LEAQ    1(BX), R10
	CMPQ    R10, CX
	JGE     z64tail
	MOVLQSX (R8)(BX*4), AX
	MOVLQSX 4(R8)(BX*4), R11
	IMULQ   R9, AX
	IMULQ   R9, R11
	ADDQ    SI, AX
	ADDQ    SI, R11
	VADDPS  0(AX), Z0, Z0
	VADDPS  64(AX), Z1, Z1
	VADDPS  128(AX), Z2, Z2
	VADDPS  192(AX), Z3, Z3
	VADDPS  0(R11), Z4, Z4
	VADDPS  64(R11), Z5, Z5
	VADDPS  128(R11), Z6, Z6
	VADDPS  192(R11), Z7, Z7
	ADDQ    $2, BX
	JMP     z64loop

z64tail:
	CMPQ    BX, CX
	JGE     z64done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	VADDPS  0(AX), Z0, Z0
	VADDPS  64(AX), Z1, Z1
	VADDPS  128(AX), Z2, Z2
	VADDPS  192(AX), Z3, Z3

z64done:
	VADDPS  Z4, Z0, Z0
	VADDPS  Z5, Z1, Z1
	VADDPS  Z6, Z2, Z2
	VADDPS  Z7, Z3, Z3
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ    $256, DI
	ADDQ    $256, SI
	SUBQ    $64, DX
	JMP     z64

z16:
	CMPQ    DX, $16
	JL      zdone
	VMOVUPS 0(DI), Z0
	VPXORD  Z1, Z1, Z1
	VPXORD  Z2, Z2, Z2
	VPXORD  Z3, Z3, Z3
	XORQ    BX, BX

z16loop:
	LEAQ    3(BX), R10
	CMPQ    R10, CX
	JGE     z16tail
	MOVLQSX (R8)(BX*4), AX
	MOVLQSX 4(R8)(BX*4), R11
	MOVLQSX 8(R8)(BX*4), R12
	MOVLQSX 12(R8)(BX*4), R13
	IMULQ   R9, AX
	IMULQ   R9, R11
	IMULQ   R9, R12
	IMULQ   R9, R13
	VADDPS  (SI)(AX*1), Z0, Z0
	VADDPS  (SI)(R11*1), Z1, Z1
	VADDPS  (SI)(R12*1), Z2, Z2
	VADDPS  (SI)(R13*1), Z3, Z3
	ADDQ    $4, BX
	JMP     z16loop

z16tail:
	CMPQ    BX, CX
	JGE     z16done
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	VADDPS  (SI)(AX*1), Z0, Z0
	INCQ    BX
	JMP     z16tail

z16done:
	VADDPS  Z1, Z0, Z0
	VADDPS  Z3, Z2, Z2
	VADDPS  Z2, Z0, Z0
	VMOVUPS Z0, 0(DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, DX
	JMP     z16

zdone:
	VZEROUPPER
	RET

// func spmmGatherAxpyAVX512(acc, x *float32, idx *int32, wt *float32, n, ldx, w int)
// Implements gatherAxpyGeneric for w%16 == 0, like spmmGatherSumAVX512.
TEXT ·spmmGatherAxpyAVX512(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ idx+16(FP), R8
	MOVQ wt+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ ldx+40(FP), R9
	SHLQ $2, R9
	MOVQ w+48(FP), DX

za256:
	CMPQ DX, $256
	JL   za64
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS 256(DI), Z4
	VMOVUPS 320(DI), Z5
	VMOVUPS 384(DI), Z6
	VMOVUPS 448(DI), Z7
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VMOVUPS 640(DI), Z10
	VMOVUPS 704(DI), Z11
	VMOVUPS 768(DI), Z12
	VMOVUPS 832(DI), Z13
	VMOVUPS 896(DI), Z14
	VMOVUPS 960(DI), Z15
	XORQ BX, BX

za256loop:
	CMPQ         BX, CX
	JGE          za256done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	ADDQ         SI, AX
	VBROADCASTSS (R10)(BX*4), Z16
	VFMADD231PS 0(AX), Z16, Z0
	VFMADD231PS 64(AX), Z16, Z1
	VFMADD231PS 128(AX), Z16, Z2
	VFMADD231PS 192(AX), Z16, Z3
	VFMADD231PS 256(AX), Z16, Z4
	VFMADD231PS 320(AX), Z16, Z5
	VFMADD231PS 384(AX), Z16, Z6
	VFMADD231PS 448(AX), Z16, Z7
	VFMADD231PS 512(AX), Z16, Z8
	VFMADD231PS 576(AX), Z16, Z9
	VFMADD231PS 640(AX), Z16, Z10
	VFMADD231PS 704(AX), Z16, Z11
	VFMADD231PS 768(AX), Z16, Z12
	VFMADD231PS 832(AX), Z16, Z13
	VFMADD231PS 896(AX), Z16, Z14
	VFMADD231PS 960(AX), Z16, Z15
	INCQ BX
	JMP  za256loop

za256done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	ADDQ $1024, DI
	ADDQ $1024, SI
	SUBQ $256, DX
	JMP  za256

za64:
	CMPQ DX, $64
	JL   za16
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	XORQ BX, BX

za64loop:
	CMPQ         BX, CX
	JGE          za64done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	ADDQ         SI, AX
	VBROADCASTSS (R10)(BX*4), Z16
	VFMADD231PS 0(AX), Z16, Z0
	VFMADD231PS 64(AX), Z16, Z1
	VFMADD231PS 128(AX), Z16, Z2
	VFMADD231PS 192(AX), Z16, Z3
	INCQ BX
	JMP  za64loop

za64done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	ADDQ $256, SI
	SUBQ $64, DX
	JMP  za64

za16:
	CMPQ    DX, $16
	JL      zadone
	VMOVUPS 0(DI), Z0
	VPXORD  Z1, Z1, Z1
	XORQ    BX, BX

za16loop:
	LEAQ         1(BX), R11
	CMPQ         R11, CX
	JGE          za16tail
	MOVLQSX      (R8)(BX*4), AX
	MOVLQSX      4(R8)(BX*4), R11
	IMULQ        R9, AX
	IMULQ        R9, R11
	VBROADCASTSS (R10)(BX*4), Z16
	VBROADCASTSS 4(R10)(BX*4), Z17
	VFMADD231PS  (SI)(AX*1), Z16, Z0
	VFMADD231PS  (SI)(R11*1), Z17, Z1
	ADDQ         $2, BX
	JMP          za16loop

za16tail:
	CMPQ         BX, CX
	JGE          za16done
	MOVLQSX      (R8)(BX*4), AX
	IMULQ        R9, AX
	VBROADCASTSS (R10)(BX*4), Z16
	VFMADD231PS  (SI)(AX*1), Z16, Z0

za16done:
	VADDPS  Z1, Z0, Z0
	VMOVUPS Z0, 0(DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, DX
	JMP     za16

zadone:
	VZEROUPPER
	RET

// func spmmGatherMaxAVX2(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)
// Implements the copy_u max reduction of spmmArgs.accumulate: for
// each edge j in order, acc[k] and arg[k] take x[idx[j]*ldx + k] and the
// edge's id when it is strictly greater; the id is eids[j], or eid0+j
// when eids is nil. w%8 == 0.
TEXT ·spmmGatherMaxAVX2(SB), NOSPLIT, $0-72
	MOVQ acc+0(FP), DI
	MOVQ arg+8(FP), R14
	MOVQ x+16(FP), SI
	MOVQ idx+24(FP), R8
	MOVQ eids+32(FP), R10
	MOVQ eid0+40(FP), R13
	MOVQ n+48(FP), CX
	MOVQ ldx+56(FP), R9
	SHLQ $2, R9
	MOVQ w+64(FP), DX

spmmGatherMaxAVX2c32:
	CMPQ    DX, $32
	JL      spmmGatherMaxAVX2c8
	VMOVUPS 0(DI), Y0
	VMOVUPS 0(R14), Y4
	VMOVUPS 32(DI), Y1
	VMOVUPS 32(R14), Y5
	VMOVUPS 64(DI), Y2
	VMOVUPS 64(R14), Y6
	VMOVUPS 96(DI), Y3
	VMOVUPS 96(R14), Y7
	XORQ    BX, BX

spmmGatherMaxAVX2l32:
	CMPQ    BX, CX
	JGE     spmmGatherMaxAVX2d32
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMaxAVX2seq32
	VPBROADCASTD (R10)(BX*4), Y15
	JMP     spmmGatherMaxAVX2go32

spmmGatherMaxAVX2seq32:
	LEAQ    (R13)(BX*1), R11
	MOVQ    R11, X15
	VPBROADCASTD X15, Y15

spmmGatherMaxAVX2go32:
	VMOVUPS   0(AX), Y8
	VMOVUPS   32(AX), Y9
	VMOVUPS   64(AX), Y10
	VMOVUPS   96(AX), Y11
	VCMPPS    $0x1E, Y0, Y8, Y12
	VBLENDVPS Y12, Y8, Y0, Y0
	VBLENDVPS Y12, Y15, Y4, Y4
	VCMPPS    $0x1E, Y1, Y9, Y13
	VBLENDVPS Y13, Y9, Y1, Y1
	VBLENDVPS Y13, Y15, Y5, Y5
	VCMPPS    $0x1E, Y2, Y10, Y12
	VBLENDVPS Y12, Y10, Y2, Y2
	VBLENDVPS Y12, Y15, Y6, Y6
	VCMPPS    $0x1E, Y3, Y11, Y13
	VBLENDVPS Y13, Y11, Y3, Y3
	VBLENDVPS Y13, Y15, Y7, Y7
	INCQ    BX
	JMP     spmmGatherMaxAVX2l32

spmmGatherMaxAVX2d32:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y4, 0(R14)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y5, 32(R14)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y6, 64(R14)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y7, 96(R14)
	ADDQ    $128, DI
	ADDQ    $128, R14
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     spmmGatherMaxAVX2c32

spmmGatherMaxAVX2c8:
	CMPQ    DX, $8
	JL      spmmGatherMaxAVX2done
	VMOVUPS 0(DI), Y0
	VMOVUPS 0(R14), Y4
	XORQ    BX, BX

spmmGatherMaxAVX2l8:
	CMPQ    BX, CX
	JGE     spmmGatherMaxAVX2d8
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMaxAVX2seq8
	VPBROADCASTD (R10)(BX*4), Y15
	JMP     spmmGatherMaxAVX2go8

spmmGatherMaxAVX2seq8:
	LEAQ    (R13)(BX*1), R11
	MOVQ    R11, X15
	VPBROADCASTD X15, Y15

spmmGatherMaxAVX2go8:
	VMOVUPS   (AX), Y8
	VCMPPS    $0x1E, Y0, Y8, Y12
	VBLENDVPS Y12, Y8, Y0, Y0
	VBLENDVPS Y12, Y15, Y4, Y4
	INCQ    BX
	JMP     spmmGatherMaxAVX2l8

spmmGatherMaxAVX2d8:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y4, 0(R14)
	ADDQ    $32, DI
	ADDQ    $32, R14
	ADDQ    $32, SI
	SUBQ    $8, DX
	JMP     spmmGatherMaxAVX2c8

spmmGatherMaxAVX2done:
	VZEROUPPER
	RET

// func spmmGatherMinAVX2(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)
// Implements the copy_u min reduction of spmmArgs.accumulate: for
// each edge j in order, acc[k] and arg[k] take x[idx[j]*ldx + k] and the
// edge's id when it is strictly smaller; the id is eids[j], or eid0+j
// when eids is nil. w%8 == 0.
TEXT ·spmmGatherMinAVX2(SB), NOSPLIT, $0-72
	MOVQ acc+0(FP), DI
	MOVQ arg+8(FP), R14
	MOVQ x+16(FP), SI
	MOVQ idx+24(FP), R8
	MOVQ eids+32(FP), R10
	MOVQ eid0+40(FP), R13
	MOVQ n+48(FP), CX
	MOVQ ldx+56(FP), R9
	SHLQ $2, R9
	MOVQ w+64(FP), DX

spmmGatherMinAVX2c32:
	CMPQ    DX, $32
	JL      spmmGatherMinAVX2c8
	VMOVUPS 0(DI), Y0
	VMOVUPS 0(R14), Y4
	VMOVUPS 32(DI), Y1
	VMOVUPS 32(R14), Y5
	VMOVUPS 64(DI), Y2
	VMOVUPS 64(R14), Y6
	VMOVUPS 96(DI), Y3
	VMOVUPS 96(R14), Y7
	XORQ    BX, BX

spmmGatherMinAVX2l32:
	CMPQ    BX, CX
	JGE     spmmGatherMinAVX2d32
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMinAVX2seq32
	VPBROADCASTD (R10)(BX*4), Y15
	JMP     spmmGatherMinAVX2go32

spmmGatherMinAVX2seq32:
	LEAQ    (R13)(BX*1), R11
	MOVQ    R11, X15
	VPBROADCASTD X15, Y15

spmmGatherMinAVX2go32:
	VMOVUPS   0(AX), Y8
	VMOVUPS   32(AX), Y9
	VMOVUPS   64(AX), Y10
	VMOVUPS   96(AX), Y11
	VCMPPS    $0x1E, Y8, Y0, Y12
	VBLENDVPS Y12, Y8, Y0, Y0
	VBLENDVPS Y12, Y15, Y4, Y4
	VCMPPS    $0x1E, Y9, Y1, Y13
	VBLENDVPS Y13, Y9, Y1, Y1
	VBLENDVPS Y13, Y15, Y5, Y5
	VCMPPS    $0x1E, Y10, Y2, Y12
	VBLENDVPS Y12, Y10, Y2, Y2
	VBLENDVPS Y12, Y15, Y6, Y6
	VCMPPS    $0x1E, Y11, Y3, Y13
	VBLENDVPS Y13, Y11, Y3, Y3
	VBLENDVPS Y13, Y15, Y7, Y7
	INCQ    BX
	JMP     spmmGatherMinAVX2l32

spmmGatherMinAVX2d32:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y4, 0(R14)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y5, 32(R14)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y6, 64(R14)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y7, 96(R14)
	ADDQ    $128, DI
	ADDQ    $128, R14
	ADDQ    $128, SI
	SUBQ    $32, DX
	JMP     spmmGatherMinAVX2c32

spmmGatherMinAVX2c8:
	CMPQ    DX, $8
	JL      spmmGatherMinAVX2done
	VMOVUPS 0(DI), Y0
	VMOVUPS 0(R14), Y4
	XORQ    BX, BX

spmmGatherMinAVX2l8:
	CMPQ    BX, CX
	JGE     spmmGatherMinAVX2d8
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMinAVX2seq8
	VPBROADCASTD (R10)(BX*4), Y15
	JMP     spmmGatherMinAVX2go8

spmmGatherMinAVX2seq8:
	LEAQ    (R13)(BX*1), R11
	MOVQ    R11, X15
	VPBROADCASTD X15, Y15

spmmGatherMinAVX2go8:
	VMOVUPS   (AX), Y8
	VCMPPS    $0x1E, Y8, Y0, Y12
	VBLENDVPS Y12, Y8, Y0, Y0
	VBLENDVPS Y12, Y15, Y4, Y4
	INCQ    BX
	JMP     spmmGatherMinAVX2l8

spmmGatherMinAVX2d8:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y4, 0(R14)
	ADDQ    $32, DI
	ADDQ    $32, R14
	ADDQ    $32, SI
	SUBQ    $8, DX
	JMP     spmmGatherMinAVX2c8

spmmGatherMinAVX2done:
	VZEROUPPER
	RET

// func spmmExpAVX2(x *float32, n int)
// Implements expf in place over n values, n%8 == 0, for x ≤ 0 (softmax
// arguments): Cody–Waite reduction and Cephes' polynomial, eight lanes at a
// time; x < −87 gives 0.
TEXT ·spmmExpAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	MOVL         $0x3fb8aa3b, AX // log2e
	MOVQ         AX, X0
	VPBROADCASTD X0, Y4
	MOVL         $0x3f318000, AX // c1
	MOVQ         AX, X0
	VPBROADCASTD X0, Y5
	MOVL         $0xb95e8083, AX // c2
	MOVQ         AX, X0
	VPBROADCASTD X0, Y6
	MOVL         $0x39506967, AX // p0
	MOVQ         AX, X0
	VPBROADCASTD X0, Y7
	MOVL         $0x3ab743ce, AX // p1
	MOVQ         AX, X0
	VPBROADCASTD X0, Y8
	MOVL         $0x3c088908, AX // p2
	MOVQ         AX, X0
	VPBROADCASTD X0, Y9
	MOVL         $0x3d2aa9c1, AX // p3
	MOVQ         AX, X0
	VPBROADCASTD X0, Y10
	MOVL         $0x3e2aaaaa, AX // p4
	MOVQ         AX, X0
	VPBROADCASTD X0, Y11
	MOVL         $0x3f000000, AX // p5
	MOVQ         AX, X0
	VPBROADCASTD X0, Y12
	MOVL         $0x3f800000, AX // one
	MOVQ         AX, X0
	VPBROADCASTD X0, Y13
	MOVL         $0x0000007f, AX // i127
	MOVQ         AX, X0
	VPBROADCASTD X0, Y14
	MOVL         $0xc2ae0000, AX // lo
	MOVQ         AX, X0
	VPBROADCASTD X0, Y15

exploop:
	CMPQ         CX, $8
	JL           expdone
	VMOVUPS      (DI), Y0
	VCMPPS       $0x1D, Y15, Y0, Y3
	VMAXPS       Y15, Y0, Y0
	VMULPS       Y4, Y0, Y1
	VROUNDPS     $0, Y1, Y1
	VFNMADD231PS Y5, Y1, Y0
	VFNMADD231PS Y6, Y1, Y0
	VMOVAPS      Y7, Y2
	VFMADD213PS  Y8, Y0, Y2
	VFMADD213PS  Y9, Y0, Y2
	VFMADD213PS  Y10, Y0, Y2
	VFMADD213PS  Y11, Y0, Y2
	VFMADD213PS  Y12, Y0, Y2
	VMULPS       Y0, Y2, Y2
	VFMADD213PS  Y0, Y0, Y2
	VADDPS       Y13, Y2, Y2
	VCVTTPS2DQ   Y1, Y1
	VPADDD       Y14, Y1, Y1
	VPSLLD       $23, Y1, Y1
	VMULPS       Y1, Y2, Y2
	VANDPS       Y3, Y2, Y2
	VMOVUPS      Y2, (DI)
	ADDQ         $32, DI
	SUBQ         $8, CX
	JMP          exploop

expdone:
	VZEROUPPER
	RET

// func spmmGatherMaxAVX512(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)
// Implements gatherArgMaxGeneric (max) for w%16 == 0 with AVX-512:
// a 128-column chunk of values (Z0-Z7) and edge ids (Z8-Z15) stays in
// registers; the comparison goes to mask registers and the updates are
// merge-masked moves.
TEXT ·spmmGatherMaxAVX512(SB), NOSPLIT, $0-72
	MOVQ acc+0(FP), DI
	MOVQ arg+8(FP), R14
	MOVQ x+16(FP), SI
	MOVQ idx+24(FP), R8
	MOVQ eids+32(FP), R10
	MOVQ eid0+40(FP), R13
	MOVQ n+48(FP), CX
	MOVQ ldx+56(FP), R9
	SHLQ $2, R9
	MOVQ w+64(FP), DX

spmmGatherMaxAVX512c128:
	CMPQ DX, $128
	JL   spmmGatherMaxAVX512c16
	VMOVUPS 0(DI), Z0
	VMOVUPS 0(R14), Z8
	VMOVUPS 64(DI), Z1
	VMOVUPS 64(R14), Z9
	VMOVUPS 128(DI), Z2
	VMOVUPS 128(R14), Z10
	VMOVUPS 192(DI), Z3
	VMOVUPS 192(R14), Z11
	VMOVUPS 256(DI), Z4
	VMOVUPS 256(R14), Z12
	VMOVUPS 320(DI), Z5
	VMOVUPS 320(R14), Z13
	VMOVUPS 384(DI), Z6
	VMOVUPS 384(R14), Z14
	VMOVUPS 448(DI), Z7
	VMOVUPS 448(R14), Z15
	XORQ BX, BX

spmmGatherMaxAVX512c128loop:
	CMPQ    BX, CX
	JGE     spmmGatherMaxAVX512c128store
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMaxAVX512c128seq
	VPBROADCASTD (R10)(BX*4), Z24
	JMP     spmmGatherMaxAVX512c128go

spmmGatherMaxAVX512c128seq:
	LEAQ         (R13)(BX*1), R11
	VPBROADCASTD R11, Z24

spmmGatherMaxAVX512c128go:
	VMOVUPS 0(AX), Z16
	VMOVUPS 64(AX), Z17
	VMOVUPS 128(AX), Z18
	VMOVUPS 192(AX), Z19
	VMOVUPS 256(AX), Z20
	VMOVUPS 320(AX), Z21
	VMOVUPS 384(AX), Z22
	VMOVUPS 448(AX), Z23
	VCMPPS $0x1E, Z0, Z16, K1
	VMOVAPS Z16, K1, Z0
	VMOVDQA32 Z24, K1, Z8
	VCMPPS $0x1E, Z1, Z17, K2
	VMOVAPS Z17, K2, Z1
	VMOVDQA32 Z24, K2, Z9
	VCMPPS $0x1E, Z2, Z18, K3
	VMOVAPS Z18, K3, Z2
	VMOVDQA32 Z24, K3, Z10
	VCMPPS $0x1E, Z3, Z19, K4
	VMOVAPS Z19, K4, Z3
	VMOVDQA32 Z24, K4, Z11
	VCMPPS $0x1E, Z4, Z20, K5
	VMOVAPS Z20, K5, Z4
	VMOVDQA32 Z24, K5, Z12
	VCMPPS $0x1E, Z5, Z21, K6
	VMOVAPS Z21, K6, Z5
	VMOVDQA32 Z24, K6, Z13
	VCMPPS $0x1E, Z6, Z22, K1
	VMOVAPS Z22, K1, Z6
	VMOVDQA32 Z24, K1, Z14
	VCMPPS $0x1E, Z7, Z23, K2
	VMOVAPS Z23, K2, Z7
	VMOVDQA32 Z24, K2, Z15
	INCQ BX
	JMP  spmmGatherMaxAVX512c128loop

spmmGatherMaxAVX512c128store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z8, 0(R14)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z9, 64(R14)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z10, 128(R14)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z11, 192(R14)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z12, 256(R14)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z13, 320(R14)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z14, 384(R14)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z15, 448(R14)
	ADDQ $512, DI
	ADDQ $512, R14
	ADDQ $512, SI
	SUBQ $128, DX
	JMP  spmmGatherMaxAVX512c128

spmmGatherMaxAVX512c16:
	CMPQ DX, $16
	JL   spmmGatherMaxAVX512done
	VMOVUPS 0(DI), Z0
	VMOVUPS 0(R14), Z8
	XORQ BX, BX

spmmGatherMaxAVX512c16loop:
	CMPQ    BX, CX
	JGE     spmmGatherMaxAVX512c16store
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMaxAVX512c16seq
	VPBROADCASTD (R10)(BX*4), Z24
	JMP     spmmGatherMaxAVX512c16go

spmmGatherMaxAVX512c16seq:
	LEAQ         (R13)(BX*1), R11
	VPBROADCASTD R11, Z24

spmmGatherMaxAVX512c16go:
	VMOVUPS 0(AX), Z16
	VCMPPS $0x1E, Z0, Z16, K1
	VMOVAPS Z16, K1, Z0
	VMOVDQA32 Z24, K1, Z8
	INCQ BX
	JMP  spmmGatherMaxAVX512c16loop

spmmGatherMaxAVX512c16store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z8, 0(R14)
	ADDQ $64, DI
	ADDQ $64, R14
	ADDQ $64, SI
	SUBQ $16, DX
	JMP  spmmGatherMaxAVX512c16

spmmGatherMaxAVX512done:
	VZEROUPPER
	RET

// func spmmGatherMinAVX512(acc *float32, arg *int32, x *float32, idx *int32, eids *int32, eid0, n, ldx, w int)
// Implements gatherArgMaxGeneric (min) for w%16 == 0 with AVX-512:
// a 128-column chunk of values (Z0-Z7) and edge ids (Z8-Z15) stays in
// registers; the comparison goes to mask registers and the updates are
// merge-masked moves.
TEXT ·spmmGatherMinAVX512(SB), NOSPLIT, $0-72
	MOVQ acc+0(FP), DI
	MOVQ arg+8(FP), R14
	MOVQ x+16(FP), SI
	MOVQ idx+24(FP), R8
	MOVQ eids+32(FP), R10
	MOVQ eid0+40(FP), R13
	MOVQ n+48(FP), CX
	MOVQ ldx+56(FP), R9
	SHLQ $2, R9
	MOVQ w+64(FP), DX

spmmGatherMinAVX512c128:
	CMPQ DX, $128
	JL   spmmGatherMinAVX512c16
	VMOVUPS 0(DI), Z0
	VMOVUPS 0(R14), Z8
	VMOVUPS 64(DI), Z1
	VMOVUPS 64(R14), Z9
	VMOVUPS 128(DI), Z2
	VMOVUPS 128(R14), Z10
	VMOVUPS 192(DI), Z3
	VMOVUPS 192(R14), Z11
	VMOVUPS 256(DI), Z4
	VMOVUPS 256(R14), Z12
	VMOVUPS 320(DI), Z5
	VMOVUPS 320(R14), Z13
	VMOVUPS 384(DI), Z6
	VMOVUPS 384(R14), Z14
	VMOVUPS 448(DI), Z7
	VMOVUPS 448(R14), Z15
	XORQ BX, BX

spmmGatherMinAVX512c128loop:
	CMPQ    BX, CX
	JGE     spmmGatherMinAVX512c128store
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMinAVX512c128seq
	VPBROADCASTD (R10)(BX*4), Z24
	JMP     spmmGatherMinAVX512c128go

spmmGatherMinAVX512c128seq:
	LEAQ         (R13)(BX*1), R11
	VPBROADCASTD R11, Z24

spmmGatherMinAVX512c128go:
	VMOVUPS 0(AX), Z16
	VMOVUPS 64(AX), Z17
	VMOVUPS 128(AX), Z18
	VMOVUPS 192(AX), Z19
	VMOVUPS 256(AX), Z20
	VMOVUPS 320(AX), Z21
	VMOVUPS 384(AX), Z22
	VMOVUPS 448(AX), Z23
	VCMPPS $0x1E, Z16, Z0, K1
	VMOVAPS Z16, K1, Z0
	VMOVDQA32 Z24, K1, Z8
	VCMPPS $0x1E, Z17, Z1, K2
	VMOVAPS Z17, K2, Z1
	VMOVDQA32 Z24, K2, Z9
	VCMPPS $0x1E, Z18, Z2, K3
	VMOVAPS Z18, K3, Z2
	VMOVDQA32 Z24, K3, Z10
	VCMPPS $0x1E, Z19, Z3, K4
	VMOVAPS Z19, K4, Z3
	VMOVDQA32 Z24, K4, Z11
	VCMPPS $0x1E, Z20, Z4, K5
	VMOVAPS Z20, K5, Z4
	VMOVDQA32 Z24, K5, Z12
	VCMPPS $0x1E, Z21, Z5, K6
	VMOVAPS Z21, K6, Z5
	VMOVDQA32 Z24, K6, Z13
	VCMPPS $0x1E, Z22, Z6, K1
	VMOVAPS Z22, K1, Z6
	VMOVDQA32 Z24, K1, Z14
	VCMPPS $0x1E, Z23, Z7, K2
	VMOVAPS Z23, K2, Z7
	VMOVDQA32 Z24, K2, Z15
	INCQ BX
	JMP  spmmGatherMinAVX512c128loop

spmmGatherMinAVX512c128store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z8, 0(R14)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z9, 64(R14)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z10, 128(R14)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z11, 192(R14)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z12, 256(R14)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z13, 320(R14)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z14, 384(R14)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z15, 448(R14)
	ADDQ $512, DI
	ADDQ $512, R14
	ADDQ $512, SI
	SUBQ $128, DX
	JMP  spmmGatherMinAVX512c128

spmmGatherMinAVX512c16:
	CMPQ DX, $16
	JL   spmmGatherMinAVX512done
	VMOVUPS 0(DI), Z0
	VMOVUPS 0(R14), Z8
	XORQ BX, BX

spmmGatherMinAVX512c16loop:
	CMPQ    BX, CX
	JGE     spmmGatherMinAVX512c16store
	MOVLQSX (R8)(BX*4), AX
	IMULQ   R9, AX
	ADDQ    SI, AX
	TESTQ   R10, R10
	JZ      spmmGatherMinAVX512c16seq
	VPBROADCASTD (R10)(BX*4), Z24
	JMP     spmmGatherMinAVX512c16go

spmmGatherMinAVX512c16seq:
	LEAQ         (R13)(BX*1), R11
	VPBROADCASTD R11, Z24

spmmGatherMinAVX512c16go:
	VMOVUPS 0(AX), Z16
	VCMPPS $0x1E, Z16, Z0, K1
	VMOVAPS Z16, K1, Z0
	VMOVDQA32 Z24, K1, Z8
	INCQ BX
	JMP  spmmGatherMinAVX512c16loop

spmmGatherMinAVX512c16store:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z8, 0(R14)
	ADDQ $64, DI
	ADDQ $64, R14
	ADDQ $64, SI
	SUBQ $16, DX
	JMP  spmmGatherMinAVX512c16

spmmGatherMinAVX512done:
	VZEROUPPER
	RET
