// Package bmmtest is the conformance suite every bmm.Kernel runs (the
// generic reference, the cpu kernels, the tcu GPU kernels), in the manner of
// gonum's testblas:
//
//	func TestConformance(t *testing.T) { bmmtest.Conformance(t, myKernel) }
//
// The suite compares the kernel against a naive int64 matrix product of the
// unpacked values written here (not against bmm.Generic, so the reference
// shares no code with any kernel), over awkward shapes (0, 1, 63, 64, 65,
// 255, 256, 257 in each of M, K and N), every pair of bit widths 1..8 plus
// 16 and 32 where the product cannot overflow int32, all-zero and all-ones
// operands, block-sparse adjacency-like A, inputs with non-default padding,
// every epilogue field combination and re-quantization into both packings.
// MulInt, MulFloat and MulBit must match bit for bit; each destination is
// poisoned first, so an element a kernel forgets to write is caught.
//
// The cases are drawn from a seeded generator. The seed is fixed by default
// so runs are reproducible; set QGTC_BMMTEST_SEED to a number to replay a
// reported failure, or to "random" to draw a fresh seed (printed on
// failure). testing.Short() shrinks the suite.
//
// TestBackend is the suite for a bmm.Backend: every op (products into bits,
// codes and floats, aggregations with and without weights, row sums,
// argmax, reads, errors) and whole layer chains, compared bit for bit with
// bmm.NewGenericBackend on the same uploaded values:
//
//	bmmtest.TestBackend(t, func(*testing.T) bmm.Backend { return cpu.NewBackend(nil) })
//
// The generic backend itself is checked against the Generic kernel in this
// package's tests.
//
// Benchmark times a kernel's MulInt and MulBit on BenchShapes (a GNN layer's
// aggregation and update, and a square product), reporting ops/s, so every
// kernel's numbers come from the same cases: bmmtest.Benchmark(b, kernel).
package bmmtest
