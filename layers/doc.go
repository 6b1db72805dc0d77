// Package layers holds GNN layers and models: full-precision GCN, GIN,
// GraphSAGE and GAT, and quantized GCN and GIN computed on bit tensors with
// inter-layer fusion.
package layers
