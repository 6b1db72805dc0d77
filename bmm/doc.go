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
//
// A Backend (backend.go) is the layer above: it holds a model's operands
// where it computes (host slices on the CPU, device memory on a GPU) and
// runs whole ops on them: fused products into bits, byte codes or floats,
// aggregations over an edge list (Graph), sums of two float branches
// (Add*), row sums, argmax (to the host, or scattered at a batch's nodes
// into one graph-sized operand: ArgmaxTo). NewGenericBackend is its
// reference, written plainly on the Generic kernel; products past
// int32 go through WideProduct (plane groups, PlaneGroups) on every
// backend; the Check* functions are the operand rules all backends share,
// so that they fail alike. bmmtest.TestBackend checks a backend against
// the generic one.
package bmm
