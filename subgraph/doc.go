// Package subgraph is qgtc's input side: CSR graphs, dataset loaders,
// multilevel partitioning, Cluster-GCN batching and bandwidth-optimized
// packing of batches into bit tensors.
//
// # Graphs
//
// Graph is CSR with int32 indices (Reverse gives the in-edges). FromEdges
// and Rebuild dedupe, symmetrize and add or drop self-loops; Degrees,
// GCNNorm (D^-1/2 with or without self-loops) and MeanNorm give the
// normalization vectors; InducedSubgraph renumbers a node subset;
// Components and LargestComponent find connected pieces.
//
// # Datasets
//
// Load("cora") or Load(path) returns a Dataset: an undirected graph
// (symmetric, deduplicated, no self-loops), node Features (dense float32
// or sparse CSR, nil values meaning binary), single- (Labels) or
// multi-label (Multi) targets and the shipped Train/Val/Test node ids.
// Names resolve in $QGTC_DATA/<name>, ./testdata/<name>, the binary's
// ../testdata/<name> and the module's testdata/ (see Locate). Formats:
// Planetoid pickles, gnn-benchmark .npz (also inside a .zip), QGTC edge
// .npz, OGB node-property folders, GraphSAGE folders, MATLAB v5 sparse
// .mat, text edge lists and TU graph-classification text (LoadGraphSet).
// Every parser returns an error wrapping ErrFormat, ErrInconsistent or
// ErrNotFound and naming the file and field, never panics on bad input,
// and has a fuzz target. RandomSplit and LargestComponent apply Shchur et
// al.'s gnn-benchmark protocol to datasets that ship no split.
package subgraph
