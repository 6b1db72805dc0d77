//go:build !amd64 || purego

package templates

var useSgemmFMA = false

func asmSgemmKernel() (func(k int, a, b, c []float32, ldc int, alpha float32),
	func(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32), string) {
	return nil, nil, ""
}
