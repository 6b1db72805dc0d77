// Package gpufp trains and evaluates the full-precision models of
// package layers/fp on a GPU (package tcu), with every tensor resident on
// the device: the graph, features, labels and split weights are uploaded
// once, the parameters once into one flat array with their gradients and
// Adam's moments beside them, and each epoch comes back as a few scalars
// (the training loss, the splits' hits and the validation loss). At the
// end the best parameters are downloaded into the fp.Model, so fp.Save
// and `qgtc infer` take it as they take a model trained on the CPU.
//
// It is the same training, not a second one: the model, its Config, its
// parameter tensors and initialization are layers/fp's; the epochs, early
// stopping and the result are fp.TrainWith's (Trainer is an fp.Engine);
// the forward math is nn's op for op (tcu's dense kernels are checked
// against internal/nn, the sparse ones against templates); the dropout
// seeds come from the same stream in the same order, so the masks are the
// CPU's; Adam's constants and bias corrections are internal/learn's.
// The layers are bound to the model's parameters by their state-dict
// names (PyG's, documented in layers/fp), so nothing of fp's internals is
// copied here.
//
// The package sits beside cmd and the pipeline, not under layers: layers
// reaches no backend (internal/archtest), and this package is the one
// place that puts the fp models and the tcu device together; cmd/qgtc
// picks it for `train --device gpu`.
//
// On the device today: GCN, GraphSAGE with mean aggregation, GIN
// without batch norm (the CLI's defaults) and GAT, full batch. SAGE max,
// GIN with batch norm and Cluster-GCN batches return ErrUnsupported,
// saying which. `qgtc train --device gpu` still refuses GAT until its
// GPU tests (TestGradients, TestTrainMatchesCPU, tcu's TestFPDense) have
// passed on a device: its kernels have run only in the CPU emulation.
package gpufp
