package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/spf13/pflag"
)

// packedFlags are the infer flags that apply with --packed: the file fixes
// the data, partition and batches, and the model file the rest.
var packedFlags = map[string]bool{"packed": true, "weights": true, "device": true, "json": true, "quiet": true, "sparse-input": true,
	"passes": true, "other-data": true, "agg": true, "gpu-lanes": true, "host-workers": true,
	"resident": true}

// inferPacked is qgtc infer --packed FILE --weights W: inference from a
// packed batch file, a few batches resident at a time: on the CPU's
// cores, or streamed to one GPU or several (gpu:all, gpu:0,1).
func inferPacked(fs *pflag.FlagSet, file, weights, device string, passes, gpuLanes, hostWorkers int, otherData, asJSON, quiet bool, stdout io.Writer) error {
	if bad := flagOutside(fs, packedFlags); bad != "" {
		return fmt.Errorf("%w: --%s does not apply with --packed (the file holds the data and its batches)", errUsage, bad)
	}
	if weights == "" {
		return fmt.Errorf("%w: --packed needs --weights (a quantized model file)", errUsage)
	}
	if passes < 1 {
		return fmt.Errorf("%w: --passes %d must be at least 1", errUsage, passes)
	}
	if gpuLanes < 1 || gpuLanes > 8 || (gpuLanes > 1 && !strings.HasPrefix(device, "gpu")) {
		return fmt.Errorf("%w: --gpu-lanes %d: want 1..8, more than 1 only on GPUs", errUsage, gpuLanes)
	}
	if hostWorkers < 0 || hostWorkers > 1024 || (hostWorkers > 0 && !strings.HasPrefix(device, "gpu")) {
		return fmt.Errorf("%w: --host-workers %d: want 0 (automatic) to 1024, and a GPU device (a streamed run)", errUsage, hostWorkers)
	}
	resident := fs.Lookup("resident").Value.String() == "true"
	if resident && !strings.HasPrefix(device, "gpu") {
		return fmt.Errorf("%w: --resident with --packed keeps the batches in GPU memory: it needs --device gpu (the CPU reads the file each pass)", errUsage)
	}
	if resident && passes == 1 && !quiet {
		qNote("--resident keeps the batches on the GPUs for the passes after the first; with --passes 1 there are none")
	}
	w, err := pipeline.ReadWeights(weights)
	if err != nil {
		return fmt.Errorf("--weights %s: %w", weights, err)
	}
	c := pipeline.DefaultConfig("")
	c.SparseInput = fs.Lookup("sparse-input").Value.String()
	if c.SparseInput != pipeline.SparseAuto && c.SparseInput != pipeline.SparseOn && c.SparseInput != pipeline.SparseOff {
		return fmt.Errorf("%w: --sparse-input %q (want on, off or auto)", errUsage, c.SparseInput)
	}
	if c.Agg, err = qParseAgg(fs.Lookup("agg").Value.String()); err != nil {
		return err
	}
	c.Passes = passes
	j := &pipeline.Job{Config: c, Weights: w, Progress: progress.New(qStderr, quiet), Warnings: qStderr}
	// Opening the devices (driver init, module loads) is start-up, timed
	// apart from the passes.
	t0 := time.Now()
	be, devs, names, closer, err := qPickLanes(device, gpuLanes)
	if err != nil {
		return err
	}
	open := time.Since(t0)
	defer closer.Close()
	j.Backend, j.Devices, j.DeviceNames = be, devs, names
	r, err := j.InferPackedWith(file, pipeline.PackedOptions{OtherData: otherData, Workers: hostWorkers, Resident: resident})
	if err != nil {
		return qUsage(err)
	}
	r.OpenMS = float64(open.Microseconds()) / 1e3
	if asJSON {
		return printJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "%s: %s a%dw%d on %s, %d batches, %d of %d nodes (%s)\n", r.File, qModelName(r.Model, r.GINAggr), r.ABits, r.WBits, r.Kernel, r.Batches, r.BatchNodes, r.Nodes, r.Mode)
	fmt.Fprintf(stdout, "start-up: open %.1f ms, compile %.1f ms, a batch on each device %.1f ms\n", r.OpenMS, r.CompileMS, r.WarmupMS)
	fmt.Fprintf(stdout, "pass %.1f ms (%.0f nodes/s; read %.1f, pack %.1f, compute %.1f ms summed over the cores), total %.1f ms, peak RSS %s\n",
		r.PassMS, r.NodesPerSec, r.ReadMS, r.PackMS, r.ComputeMS, r.TotalMS, fmtBytes(r.PeakBytes))
	if len(r.MorePassMS) > 0 {
		fmt.Fprintf(stdout, "passes after the first: %d, median %.1f ms (%.0f nodes/s), same predictions: %v\n",
			len(r.MorePassMS), r.PassMedianMS, r.SteadyNodesPerS, r.SameAsFirst)
	}
	for _, d := range r.Devices {
		fmt.Fprintf(stdout, "  %s: %d batches, %d nodes, run %.1f ms, waited %.1f ms for the host, device peak %s\n",
			d.Device, d.Batches, d.Nodes, d.RunMS, d.WaitMS, fmtBytes(d.DevicePeakBytes))
		if len(d.ResidentMS) > 0 {
			fmt.Fprintf(stdout, "    later passes from its memory: median %.1f ms\n", d.ResidentMedianMS)
		}
	}
	fmt.Fprintf(stdout, "predictions sha256 %s\n", r.PredictionsSHA256)
	return nil
}

// qPickLanes is qPickDevices with each GPU opened lanes times: backends
// of one context, each with its own stream and thread, which the streamed
// run feeds as separate devices.
func qPickLanes(device string, lanes int) (bmm.Backend, []bmm.Backend, []string, io.Closer, error) {
	if lanes == 1 {
		return qPickDevices(device)
	}
	var bes []bmm.Backend
	var names []string
	var cs closers
	for l := range lanes {
		be, devs, ns, c, err := qPickDevices(device)
		if err != nil {
			cs.Close()
			return nil, nil, nil, nil, err
		}
		cs = append(cs, c)
		if be != nil {
			devs, ns = []bmm.Backend{be}, []string{device}
		}
		for i := range devs {
			bes, names = append(bes, devs[i]), append(names, fmt.Sprintf("%s/lane%d", ns[i], l))
		}
	}
	return nil, bes, names, cs, nil
}
