// Package pipeline is the quantized GNN job as a library: load a dataset,
// partition it (cached), batch it, quantize its features, train the fp32
// model and fine-tune it at the chosen widths (both cached), compile it
// for a bmm.Backend, run every batch, and report accuracy, timings and
// bytes (those between host and backend included). `qgtc infer` and `qgtc sweep` are flags and printing over it.
//
// A Job is a Config (what to run: dataset, model, widths, batching,
// training) plus where it runs and reports:
//
//	j := &pipeline.Job{
//		Config:   pipeline.DefaultConfig("cora"), // 4-bit GCN, trained when not cached
//		Backend:  cpu.NewBackend(nil),            // or a GPU backend: the caller picks the device
//		CacheDir: "/tmp/qgtc-cache",              // "" caches nothing
//		Warnings: os.Stderr,                      // dataset and cache warnings, one line each
//	}
//	r, err := j.Infer()
//	if err != nil {
//		return err
//	}
//	fmt.Printf("%.2f%% in %.1f ms\n", 100**r.Accuracy, r.ComputeMS)
//
// Infer is the steps in order; call them yourself to keep what they make
// (Load, Partition, Input, TrainFP32, Calibrate, Quantized, Compile, Run),
// or Sweep to measure several widths and seeds. To run a saved model
// instead of training one, set Job.Weights from ReadWeights: Infer adopts
// the settings the file fixes and warns when it was trained on other data.
//
// The cache keys every model by a fingerprint of the data (graph,
// features, labels, split) and every training setting; files are
// checksummed, and a corrupt or mismatching entry is reported, removed
// and rebuilt. Partitions are subgraph's checksummed partition files.
//
// Job.Out writes the predictions (WritePredictions); with Config.Shard a
// job runs one contiguous share of the batch plan into a shard file, and
// Merge joins a run's shard files (shard.go). Job.Devices spreads the
// batches over several backends of one host, gathered bit for bit as one
// backend's (devices.go).
// Graph-classification datasets (GraphDataset: a TU text file with its
// 10fold_idx folds, e.g. PROTEINS) run GraphClassify instead: per fold a
// GIN graph classifier (layers.GraphModel) trained in fp32, then per width
// calibrated, fine-tuned with QAT and run on the backend over the fold's
// test graphs, reported as mean ± std over the folds. Nothing is cached.
//
// The pipeline imports neither cpu nor tcu: the caller passes the backend
// in (and closes it); a job without one cannot compile.
package pipeline
