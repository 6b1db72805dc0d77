//go:build !purego

package templates

import (
	"unsafe"

	"github.com/klauspost/cpuid/v2"
)

// useSgemmFMA switches the AVX2+FMA microkernels on (read once, at init,
// by pickSgemmKernel); tests compare every kernel with the generic one.
var useSgemmFMA = cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3)

// asmSgemmKernel is the assembly GEMM microkernel cpuid allows, or nil.
func asmSgemmKernel() (func(k int, a, b, c []float32, ldc int, alpha float32),
	func(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32), string) {
	if useSgemmFMA {
		return sgemmKernelAVX2Slices, sgemmKernelAVX2DirectSlices, "avx2+fma"
	}
	return nil, nil, ""
}

// sgemmKernelAVX2Slices adapts the assembly microkernel to sgemmKernel's
// signature, checking the bounds it relies on.
func sgemmKernelAVX2Slices(k int, a, b, c []float32, ldc int, alpha float32) {
	if k > 0 {
		_ = a[k*sgMR-1]
		_ = b[k*sgNR-1]
	}
	_ = c[(sgMR-1)*ldc+sgNR-1]
	sgemmKernelAVX2(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha)
}

// sgemmKernelAVX2DirectSlices adapts the in-place-A microkernel likewise.
func sgemmKernelAVX2DirectSlices(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32) {
	if k > 0 {
		_ = a[(sgMR-1)*lda+k-1]
		_ = b[k*sgNR-1]
	}
	_ = c[(sgMR-1)*ldc+sgNR-1]
	sgemmKernelAVX2Direct(k, unsafe.SliceData(a), lda, unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha)
}
