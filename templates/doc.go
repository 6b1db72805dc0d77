// Package templates holds qgtc's float32 graph kernels, the ops of the
// full-precision models and of their training (internal/nn), after DGL's
// and FeatGraph's sparse templates.
//
// A template is one graph-shaped loop with a small function plugged in:
//
//   - SpMM sends a message along every edge u→v of a CSR graph and reduces
//     the messages at v. Messages (Msg): CopyU x[u], CopyE e[e], UMulE
//     x[u]·e[e], UAddV/USubV/UMulV between x[u] and y[v]; reductions
//     (Reduce): Sum, Mean, Max, Min (with the arg-max for the backward).
//     SpMMFunc takes any Go message function.
//   - SDDMM computes one value (or one per head) per edge from its two
//     endpoints (SDDMMOp: UDotV, UAddVOp, ...); SDDMMFunc takes any.
//   - EdgeSoftmax normalises edge values over each row; GATAggregate fuses
//     GAT's attention (leaky ReLU, softmax, optional dropout) with the
//     aggregation. Every template has a backward (SpMMBackward, ...).
//
// Graphs are pull-style (CSR: row v lists the sources of its in-edges), so
// one worker owns each output row and no atomics are needed. A Schedule
// says how a call walks its graph: the feature dimension is cut into tiles
// (FeatTile), the sources into cache-sized partitions, and the rows into
// spans of equal edge work, heavy rows split; TuneSchedule times the
// candidates for a shape once and caches the winner.
//
// Beside the templates: Sgemm (a BLIS-style float32 GEMM, AVX2+FMA
// microkernel generated with avo from _asm), and the hashed dropout masks
// (Splitmix64, DropKeep) that let a backward regenerate a forward's mask.
// The package runs on the CPU; its GPU twin (SpMM, SDDMM) is in tcu
// (tcu.PrepareSpMM, tcu.PrepareSDDMM), generated from the same Msg,
// Reduce and SDDMMOp values.
//
// Files follow cpu's layout (x.go, x_generic.go, x_amd64.go, x_noasm.go,
// generated x_gen_amd64.{go,s}); spmm_amd64.s is the exception, written by
// hand. useSpmmAVX2/useSpmmAVX512 and useSgemmFMA hold what cpuid allows.
package templates
