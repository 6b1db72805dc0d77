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
// ../testdata/<name>, the module's testdata/ and last the copies built
// into the binary (package datasets: cora; see Locate). Formats:
// Planetoid pickles, gnn-benchmark .npz (also inside a .zip), QGTC edge
// .npz, OGB node-property folders, GraphSAGE folders, MATLAB v5 sparse
// .mat, text edge lists and TU graph-classification text (LoadGraphSet).
// Every parser returns an error wrapping ErrFormat, ErrInconsistent or
// ErrNotFound and naming the file and field, never panics on bad input,
// and has a fuzz target. RandomSplit and LargestComponent apply Shchur et
// al.'s gnn-benchmark protocol to datasets that ship no split.//
// # Partitioning
//
// Partition(g, k, opt) is a pure-Go multilevel k-way partitioner in the
// METIS recipe: heavy-edge matching (plus two-hop matching on power-law
// graphs) coarsens to max(N/(20·log2 K), 30·K) vertices, multilevel
// recursive bisection (graph growing + FM) splits the coarsest graph, and
// greedy k-way boundary refinement runs on every level back up, keeping
// each part within opt.Imbalance (1.03) of N/K. The result depends only on
// the seed, not on opt.Threads. Stats gives the edge cut, kept fraction
// and balance. WriteMETIS/ReadMETIS/ReadMETISPartition exchange files with
// gpmetis; PartitionMETIS calls the real library in builds with -tags metis.
// SavePartition/LoadPartition keep a checksummed partition file bound to
// the graph's fingerprint, K, seed and imbalance (the cache); OpenPartition
// reads one for a graph whatever its K (qgtc partition --out → qgtc infer
// --partition).
//
// # Batching and packing
//
// Batches is the one batcher (quantized inference and QAT in layers, fp32
// Cluster-GCN training in layers/fp, qgtc partition --batch): it groups
// the parts q per batch (sequential, seeded shuffle, or Shuffle(r) per
// training epoch) and builds each Batch on demand: its global node ids in
// a chosen row order (by part, sorted, or breadth-first for a banded
// adjacency), its local CSR (self-loops in the CSR or only in the bits),
// and unless CSROnly the 1-bit adjacency packed ByRows with its
// bittensor.TileMask. Batch.Pack writes one aligned buffer with
// the local edge list (16-bit indices when they fit) and the batch's
// feature bit planes; ReadPacked validates it and Packed.Adjacency rebuilds
// the bit adjacency in one pass.
//
// # Synthetic graphs
//
// RMAT and PlantedPartition generate seeded undirected graphs of millions
// of nodes in seconds (edges drawn in parallel from per-chunk streams).
package subgraph
