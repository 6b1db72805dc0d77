//go:build !purego

package cpu

import "unsafe"

// haveAsm says the assembly kernels are compiled in.
const haveAsm = true

func init() {
	if hasAVX2 && hasFMA {
		sgemmKernel = sgemmKernelAVX2Slices
		sgemmImpl = "avx2+fma"
	}
}

// sgemmKernelAVX2Slices adapts the assembly microkernel to sgemmKernel's
// signature; the slices were sized by the caller (sgemmMacro).
func sgemmKernelAVX2Slices(k int, a, b, c []float32, ldc int, alpha float32) {
	if k > 0 {
		_ = a[k*sgMR-1]
		_ = b[k*sgNR-1]
	}
	_ = c[(sgMR-1)*ldc+sgNR-1]
	sgemmKernelAVX2(k, unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), ldc, alpha)
}
