// Package bmm is qgtc's any-bitwidth bit matrix product: C = A·B where A is
// an a-bit M×K matrix packed by rows and B a b-bit K×N matrix packed by
// columns (see package bittensor), computed from 1-bit products:
//
//	C[m][n] = Σ_i Σ_j 2^(i+j) · popcount(A_i[m] AND B_j[n])
//
// MM2Int returns C as int32; MM2Bit re-quantizes C element-wise and
// bit-decomposes it into a new bit tensor, ready to be the next product's
// operand (QGTC's bitMM2Int and bitMM2Bit). MM2Float applies a float32
// epilogue (scales, zero-point corrections, bias, ReLU) for layers.
//
// The work is done by a Kernel. The generic reference kernel is always
// here; faster ones (package cpu, package tcu) register themselves with
// Register when imported, and the package-level functions use the best
// registered one. Every kernel must agree with Generic bit for bit:
// bmm/bmmtest is the conformance suite they all run.
package bmm
