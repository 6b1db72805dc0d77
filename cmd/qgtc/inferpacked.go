package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/spf13/pflag"
)

// packedFlags are the infer flags that apply with --packed: the file fixes
// the data, partition and batches, and the model file the rest.
var packedFlags = map[string]bool{"packed": true, "weights": true, "device": true, "json": true, "quiet": true, "sparse-input": true}

// inferPacked is qgtc infer --packed FILE --weights W: inference from a
// packed batch file, one batch resident at a time.
func inferPacked(fs *pflag.FlagSet, file, weights, device string, asJSON, quiet bool, stdout io.Writer) error {
	var bad string
	fs.Visit(func(f *pflag.Flag) {
		if !packedFlags[f.Name] && bad == "" {
			bad = f.Name
		}
	})
	if bad != "" {
		return fmt.Errorf("%w: --%s does not apply with --packed (the file holds the data and its batches)", errUsage, bad)
	}
	if weights == "" {
		return fmt.Errorf("%w: --packed needs --weights (a quantized model file)", errUsage)
	}
	if device != "cpu" && device != "gpu" && device != "auto" {
		return fmt.Errorf("%w: --packed runs on one device: --device cpu, gpu or auto", errUsage)
	}
	w, err := pipeline.ReadWeights(weights)
	if err != nil {
		return fmt.Errorf("--weights %s: %w", weights, err)
	}
	c := pipeline.DefaultConfig("")
	if f := fs.Lookup("sparse-input"); f != nil {
		c.SparseInput = f.Value.String()
	}
	if c.SparseInput != pipeline.SparseAuto && c.SparseInput != pipeline.SparseOn && c.SparseInput != pipeline.SparseOff {
		return fmt.Errorf("%w: --sparse-input %q (want on, off or auto)", errUsage, c.SparseInput)
	}
	j := &pipeline.Job{Config: c, Weights: w, Progress: progress.New(qStderr, quiet), Warnings: qStderr}
	be, closer, err := qPickBackend(device)
	if err != nil {
		return err
	}
	defer closer.Close()
	j.Backend = be
	r, err := j.InferPacked(file)
	if err != nil {
		return qUsage(err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(stdout, "%s: %s a%dw%d on %s, %d batches, %d of %d nodes\n", r.File, r.Model, r.ABits, r.WBits, r.Kernel, r.Batches, r.BatchNodes, r.Nodes)
	fmt.Fprintf(stdout, "pass %.1f ms (%.0f nodes/s; read %.1f, pack %.1f, compute %.1f ms summed over the cores), total %.1f ms, peak RSS %s\n",
		r.PassMS, r.NodesPerSec, r.ReadMS, r.PackMS, r.ComputeMS, r.TotalMS, fmtBytes(r.PeakBytes))
	fmt.Fprintf(stdout, "predictions sha256 %s\n", r.PredictionsSHA256)
	return nil
}
