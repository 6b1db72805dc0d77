// Package cpu is qgtc's CPU backend: the bit matrix product (AND + POPCNT
// in Go, AVX2 and AVX-512 assembly chosen at run time) implementing
// bmm.Kernel, and the code aggregations (agg.go: the same integer product
// with a sparse 0/1 or small-integer left operand, visited from its CSR
// lists over byte codes), both with the same fused epilogue (scales,
// bias, ReLU, re-quantization, bit packing). Importing the package
// registers its bit kernel with bmm. Backend (backend.go) is the
// bmm.Backend on these kernels, its operands the caller's host memory. The
// float32 templates of the full-precision path live in package templates.
//
// Each kernel family is laid out alike: x.go (API and dispatch),
// x_generic.go (the reference loop), x_amd64.go (the assembly's callers),
// x_gen_amd64.{go,s} (generated from cpu/_asm by go generate) and
// x_noasm.go (other platforms and -tags purego). CPU features are read
// once (cpuinfo.go): the bit kernels turn them into paths (Impls;
// NewKernel forces one), the other families into use* switches; tests
// run every path and flip every switch to compare with the generic loops.
package cpu
