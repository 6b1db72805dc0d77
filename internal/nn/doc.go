// Package nn is the small float32 training engine behind qgtc's
// full-precision GNN layers: row-major matrices (optionally sparse CSR
// inputs), a tape that records a backward closure per op, the dense and
// graph ops a GNN needs (matmul, bias, ReLU/LeakyReLU/ELU, dropout,
// log-softmax, NLL, batch norm, weighted/mean/max aggregation and a fused
// GAT attention that recomputes its O(E) edge values in the backward pass).
// The optimizer (Adam) is internal/learn's, shared with the quantized models.
//
// Ops are methods on *Tape. A tape in training mode records how to
// propagate gradients for every op whose inputs need them; Backward runs the
// records in reverse. Every op is deterministic for a given seed: parallel
// loops split work by output rows and never race on a sum, so results do not
// depend on the number of cores.
//
// Shape mismatches between tensors are programmer errors: ops panic with an
// ShapeError value naming the op and the shapes.
package nn
