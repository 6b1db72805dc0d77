// Package cpu holds qgtc's CPU kernels: the bit matrix product (AND +
// POPCNT in Go, AVX2 and AVX-512 assembly chosen at run time) implementing
// bmm.Kernel, and the float32 sparse templates of the full-precision path.
// Importing the package registers its bit kernel with bmm.
package cpu
