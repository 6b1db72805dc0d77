// Package cpu holds qgtc's CPU kernels: the bit matrix product (AND +
// POPCNT in Go, AVX2 and AVX-512 assembly chosen at run time) implementing
// bmm.Kernel, the code aggregations (agg.go: the same integer product with
// a sparse 0/1 or small-integer left operand, visited from its CSR lists
// over byte codes, with the same fused epilogue), and the float32 sparse
// templates of the full-precision path. Importing the package registers
// its bit kernel with bmm. Backend (backend.go) is the bmm.Backend on
// these kernels, its operands the caller's host memory.
package cpu
