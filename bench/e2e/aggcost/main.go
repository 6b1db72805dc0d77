// Command aggcost prints what a qgtc infer pass asks the GPU cost model
// (tcu's PreferEdges) about its aggregations, and the model's answers,
// without a GPU: the pass runs on the CPU backend, whose own choices are
// replaced by the GPU model's. bench/e2e/RESULTS.md counts the 2M graph's
// tiles with it.
//
//	go run ./bench/e2e/aggcost --dataset synth2m.npz --partition synth2m.part --weights synth-gcn-1.safetensors [--resident]
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/tcu"
)

// gpuModel is a CPU backend that answers the cost model's questions as
// tcu does, and prints each question and answer.
type gpuModel struct {
	bmm.Backend
	gpu *tcu.Backend
}

func (m gpuModel) PreferEdges(c bmm.AggCost) bool {
	r := m.gpu.PreferEdges(c)
	fmt.Printf("PreferEdges %+v -> edges %v\n", c, r)
	return r
}

func (m gpuModel) PreferMerged(batches, rows int) bool { return m.gpu.PreferMerged(batches, rows) }

func main() {
	dataset := pflag.String("dataset", "", "dataset name or path (required)")
	partition := pflag.String("partition", "", "qgtc partition --out file (required)")
	weights := pflag.String("weights", "", "a quantized model file (required)")
	resident := pflag.Bool("resident", false, "ask as a resident plan does (operands kept between passes)")
	pflag.Parse()
	if *dataset == "" || *partition == "" || *weights == "" || pflag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "aggcost: usage: aggcost --dataset D --partition FILE --weights FILE [--resident]")
		os.Exit(2)
	}
	c := pipeline.DefaultConfig(*dataset)
	c.PartitionFile, c.Resident = *partition, *resident
	w, err := pipeline.ReadWeights(*weights)
	if err == nil {
		var r *pipeline.Report
		j := &pipeline.Job{Config: c, Weights: w, Backend: gpuModel{cpu.NewBackend(nil), &tcu.Backend{}}}
		if r, err = j.Infer(); err == nil {
			fmt.Printf("batches merged: %v, edge-list batches: %d\n", r.Merged, r.EdgeListBatches)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "aggcost:", err)
	os.Exit(1)
}
