// Package subgraph is qgtc's input side: CSR graphs, dataset loaders,
// multilevel partitioning, Cluster-GCN batching and bandwidth-optimized
// packing of batches into bit tensors.
package subgraph
