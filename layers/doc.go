// Package layers holds the quantized GNN models: GCN, GIN (summing, or
// averaging the node and its neighbours: Model.Aggr) and GraphSAGE (mean
// aggregator, root weight) whose every product runs on integer codes
// (bit planes, package bittensor, or byte codes over an edge list) on a
// bmm.Backend, with inter-layer fusion so that only codes travel between
// layers. It imports no backend: the caller picks one (cpu.NewBackend, a
// GPU's) and compiles for it.
//
// A Model holds float weights; Calibrate sets its activation quantizers
// (post-training quantization) and QAT fine-tunes it with quantization in
// the loop, simulating exactly the arithmetic that inference runs. Compile
// turns a calibrated Model into a Plan for a backend: weights quantized,
// packed and uploaded once, and its ops a small DAG over values (value 0
// the features, value i+1 op i's output), where a linear or an aggregation
// reads codes and a sum joins two float branches (SAGE's lin_l of the mean
// plus lin_r of the node). Plan.Run runs it over the Eval batches of a Data
// with features quantized once (Input): each batch's inputs go up once,
// the ops run on backend operands, and only the predictions come back
// (Result.Traffic counts the bytes). Plan.Prepare, before the first Run,
// makes what that pass would otherwise make and keep (checked graphs,
// feature lists, outputs), so that a timed first pass is a pass like the
// later ones. Plan.Close frees what the plan holds
// on the backend. Batch is one Cluster-GCN batch (a group of partitions,
// its adjacency and normalization).
//
// GraphModel is the graph classifier (QGTC's batched GIN): GraphBatch puts
// whole graphs side by side block-diagonally, the GIN and its per-layer
// heads score every node, and the sum readout per graph runs on the backend
// as an aggregation (AggFloat over a graph whose rows are the graphs), so
// GraphPlan gives the simulation's graph logits bit for bit on every
// backend.
//
// Models are saved as safetensors (internal/safetensors) with PyTorch-style
// names and a checksummed metadata record (WriteModel, ReadModel); Origin
// records what a model was trained on.
//
// The full-precision GCN, GIN, GraphSAGE and GAT (the accuracy reference)
// live in the sub-package layers/fp.
package layers
