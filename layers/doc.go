// Package layers holds the quantized GNN models: GCN and GIN whose every
// product runs on bit tensors (package bittensor) through a bmm.Kernel, with
// inter-layer fusion so that only packed codes travel between layers.
//
// A Model holds float weights; Calibrate sets its activation quantizers
// (post-training quantization) and QAT fine-tunes it with quantization in
// the loop, simulating exactly the arithmetic that inference runs. Compile
// turns a calibrated Model into a Plan (weights quantized and packed once);
// Plan.Run runs it over the Eval batches of a Data with features quantized
// once (Input) and returns the predictions. Batch is one Cluster-GCN batch
// (a group of partitions, its adjacency and normalization).
//
// Models are saved as safetensors (internal/safetensors) with PyTorch-style
// names and a checksummed metadata record (WriteModel, ReadModel); Origin
// records what a model was trained on.
//
// The full-precision GCN, GIN, GraphSAGE and GAT (the accuracy reference)
// live in the sub-package layers/fp.
package layers
