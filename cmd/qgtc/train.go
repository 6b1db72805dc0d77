package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/gpufp"
	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/layers/fp"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/qgtc/qgtc/tcu"
)

// trainRun is one seed's outcome in `qgtc train --json`.
type trainRun struct {
	Seed         uint64  `json:"seed"`
	TestAccuracy float64 `json:"test_accuracy"`
	ValAccuracy  float64 `json:"val_accuracy"`
	Epochs       int     `json:"epochs"`
	BestEpoch    int     `json:"best_epoch"`
	Seconds      float64 `json:"seconds"`
	EpochSeconds float64 `json:"epoch_seconds"`
	ES           []esRun `json:"es,omitempty"` // --es-limits
}

// esRun is a trained GCN's test accuracy with ES-SpMM's sampled
// propagation at one limit (--es-limits).
type esRun struct {
	Limit        int     `json:"limit"`
	Window       int     `json:"window"`
	TestAccuracy float64 `json:"test_accuracy"`
}

// esL2Bytes is the L2 of an H100 or H200, whose window
// (tcu.SampleWindow) --es-limits samples with by default.
const esL2Bytes = 50 << 20

// trainReport is the --json object of `qgtc train`.
type trainReport struct {
	Model        string     `json:"model"`
	Dataset      string     `json:"dataset"`
	Split        string     `json:"split"`
	Nodes        int        `json:"nodes"`
	Edges        int        `json:"edges"`
	Hidden       int        `json:"hidden"`
	Layers       int        `json:"layers"`
	TestAccuracy float64    `json:"test_accuracy"` // mean over seeds
	ValAccuracy  float64    `json:"val_accuracy"`  // mean over seeds
	Epochs       int        `json:"epochs"`        // epochs run by the first seed
	Seconds      float64    `json:"seconds"`       // whole command
	EpochSeconds float64    `json:"epoch_seconds"` // mean training step over all seeds
	Seeds        int        `json:"seeds"`
	TestStd      float64    `json:"test_accuracy_std"`
	ValStd       float64    `json:"val_accuracy_std"`
	Runs         []trainRun `json:"runs"`
	Out          string     `json:"out,omitempty"`
	// DevicePeakBytes is the most device memory the run held (the pool's
	// high-water mark; --device gpu only).
	DevicePeakBytes int64 `json:"device_peak_bytes,omitempty"`
}

func init() {
	register(&command{name: "train", summary: "train a full-precision GNN (gcn, gin, sage, gat) on a dataset", run: runTrain})
}

func runTrain(args []string, stdout io.Writer) error {
	fs := newFlags("train", stdout)
	dataset := fs.String("dataset", "", "dataset name (cora, citeseer, amazon_photo, ...) or path (required)")
	model := fs.String("model", "gcn", "model: gcn, gin, sage or gat")
	hidden := fs.Int("hidden", 64, "hidden width (gat: total over the heads)")
	nlayers := fs.Int("layers", 2, "graph convolutions")
	epochs := fs.Int("epochs", -1, "maximum training epochs (default 200 on a shipped split, 1000 on a random one; 0: evaluate --init weights only)")
	lr := fs.Float32("lr", 0, "Adam learning rate (default 0.01; gat 0.005)")
	wd := fs.Float32("weight-decay", 5e-4, "L2 weight decay (gcn: first layer only, as in Kipf & Welling)")
	dropout := fs.Float32("dropout", -1, "dropout before every convolution (default 0.5; gat 0.6)")
	attnDrop := fs.Float32("attn-dropout", 0.6, "gat: dropout on attention coefficients")
	heads := fs.Int("heads", 8, "gat: heads of the hidden layers")
	outHeads := fs.Int("out-heads", 1, "gat: heads of the output layer (averaged)")
	aggr := fs.String("aggr", "mean", "sage: neighbour aggregation, mean or max")
	ginNorm := fs.String("norm", "none", "gin: normalization inside each MLP, none or batch")
	patience := fs.Int("patience", 100, "stop after this many epochs without better validation accuracy or loss (0: never)")
	seed := fs.Uint64("seed", 0, "first seed (initialization, dropout and random split)")
	seeds := fs.Int("seeds", 1, "number of seeds to run (seed, seed+1, ...); reports mean ± std")
	split := fs.String("split", "auto", "auto (shipped split, else random), public (shipped) or random")
	trainPer := fs.Int("train-per-class", 20, "random split: training nodes per class")
	valPer := fs.Int("val-per-class", 30, "random split: validation nodes per class")
	clusters := fs.Int("clusters", 0, "Cluster-GCN: partition into this many clusters and train on random groups of them (0: full batch)")
	perBatch := fs.Int("clusters-per-batch", 1, "Cluster-GCN: clusters per mini-batch")
	lcc := fs.String("lcc", "auto", "keep only the largest connected component, Shchur et al.'s standardization: true, false or auto (on for random splits)")
	fs.Lookup("lcc").NoOptDefVal = "true"
	norm := fs.String("normalize", "auto", "feature normalization: row (rows sum to 1), none, or auto (row, except dense binary bag-of-words)")
	initFile := fs.String("init", "", "load starting weights from a safetensors state dict (PyG names)")
	esLimits := fs.IntSlice("es-limits", nil, "gcn: also report each seed's test accuracy with ES-SpMM's sampled propagation (the GPU's opt-in approximation) at these per-row edge limits, e.g. 16,64,128")
	esWindow := fs.Int("es-window", 0, "with --es-limits: cache-first window in rows (0: as an H100 or H200 samples: half its 50 MiB L2 over 4·hidden bytes a row)")
	out := fs.String("out", "", "write the trained model (best validation seed) as safetensors")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	device := fs.String("device", "cpu", "where the fp32 model trains and evaluates: cpu, gpu (every tensor on GPU 0; gcn, sage mean, gin without batch norm, full batch), or auto (the GPU when one opens and runs the model, else the CPU)")
	fold := qFoldFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if pipeline.GraphDataset(*dataset) {
		return qGraphTrain(fs, *dataset, *fold, *asJSON, *quiet, stdout)
	}
	m := strings.ToLower(*model)
	if err := checkTrainFlags(fs, m); err != nil {
		return err
	}
	if *epochs == 0 && *initFile == "" {
		return fmt.Errorf("%w: --epochs 0 evaluates --init weights; give --init", errUsage)
	}
	window := *esWindow
	if window == 0 {
		window = tcu.SampleWindow(esL2Bytes, *hidden)
	}
	for _, l := range *esLimits {
		if l < 1 || m != "gcn" || window < 1 {
			return fmt.Errorf("%w: --es-limits %v (window %d): limits of at least 1, a window of at least 1 row, for --model gcn", errUsage, *esLimits, window)
		}
	}
	if *initFile != "" {
		if _, err := os.Stat(*initFile); err != nil {
			return fmt.Errorf("--init %s: %w", *initFile, errors.Unwrap(err))
		}
	}
	// A bad --out fails now, not after the training it would have saved.
	if *out != "" {
		if err := atomicfile.Check(*out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if *lr == 0 {
		*lr = 0.01
		if m == "gat" {
			*lr = 0.005
		}
	}
	if *dropout < 0 {
		*dropout = 0.5
		if m == "gat" {
			*dropout = 0.6
		}
	}
	if m != "gat" {
		*attnDrop = 0
	}
	// The device is settled before the data loads: a missing GPU fails fast.
	gpu, err := trainDevice(*device, fp.Config{Model: m, Aggr: *aggr, Norm: ginNormFor(m, *ginNorm)}, *clusters)
	if err != nil {
		return err
	}
	if gpu != nil {
		defer gpu.Close()
	}
	r := progress.New(trainStderr, *quiet)
	start := time.Now()
	var ds *subgraph.Dataset
	during(r, "train: loading "+*dataset, func() { ds, err = subgraph.Load(*dataset) })
	if err != nil {
		return err
	}
	printWarnings(trainStderr, ds)
	shipped := len(ds.Train) > 0
	if *split == "public" && !shipped {
		return fmt.Errorf("%w: dataset %q ships no split; use --split random", errUsage, ds.Name)
	}
	random := *split == "random" || (*split == "auto" && !shipped)
	if *lcc == "true" || (*lcc == "auto" && random) {
		ds, _ = ds.LargestComponent()
	}
	if *epochs < 0 {
		*epochs = 200
		if random {
			*epochs = 1000
		}
	}
	splitName := "public"
	if random {
		splitName = fmt.Sprintf("random %d/%d per class", *trainPer, *valPer)
	}
	switch {
	case ds.Features == nil:
		return fmt.Errorf("dataset %q has no node features; train needs features and one class label per node", ds.Name)
	case ds.Multi != nil:
		return fmt.Errorf("dataset %q is multi-label; train needs one class label per node", ds.Name)
	case ds.Labels == nil && ds.NumClasses > 0:
		return fmt.Errorf("dataset %q has one label per graph, none per node; train needs one class label per node", ds.Name)
	case ds.Labels == nil:
		return fmt.Errorf("dataset %q has no node labels; train needs one class label per node", ds.Name)
	}
	if *clusters > ds.Graph.N() {
		return fmt.Errorf("%w: --clusters %d: dataset %q has only %d nodes", errUsage, *clusters, ds.Name, ds.Graph.N())
	}
	cfg := fp.Config{Model: m, In: ds.Features.Cols, Hidden: *hidden, Out: ds.NumClasses, Layers: *nlayers,
		Dropout: *dropout, Aggr: *aggr, Norm: ginNormFor(m, *ginNorm), Heads: *heads, OutHeads: *outHeads, AttnDropout: *attnDrop}
	if _, err := fp.New(cfg, 0); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	rep := trainReport{Model: m, Dataset: ds.Name, Split: splitName, Nodes: ds.Graph.N(), Edges: ds.Graph.NumEdges() / 2,
		Hidden: *hidden, Layers: *nlayers, Seeds: *seeds}
	var best fp.Model
	bestVal := -1.0
	var stepSum float64
	var stepN int
	for s := range *seeds {
		sd := *seed + uint64(s)
		if random {
			ds.RandomSplit(*trainPer, *valPer, sd)
		}
		data, err := fp.NewData(ds, *norm == "row" || (*norm == "auto" && fp.DefaultNormalize(ds.Features)))
		if err != nil {
			return err
		}
		mdl, err := fp.New(cfg, sd)
		if err != nil {
			return err
		}
		if *initFile != "" {
			if err := loadInit(mdl, *initFile); err != nil {
				return err
			}
		}
		var res *fp.Result
		if *epochs == 0 {
			ev := fp.Evaluate(mdl, data)
			if gpu != nil {
				if ev, err = gpufp.Evaluate(gpu, mdl, data); err != nil {
					return err
				}
			}
			res = &fp.Result{ValAcc: ev.ValAcc, TestAcc: ev.TestAcc}
		} else {
			tc := fp.TrainConfig{Epochs: *epochs, LR: *lr, WeightDecay: *wd, Patience: *patience, Seed: sd,
				Clusters: *clusters, ClustersPerBatch: *perBatch}
			tc.Progress = func(e fp.EpochStats) {
				r.Printf("train: seed %d/%d, epoch %d/%d, loss %.4f, validation %.2f%%", s+1, *seeds, e.Epoch, *epochs, e.Loss, 100*e.ValAcc)
			}
			if gpu != nil {
				res, err = gpufp.Train(gpu, mdl, data, tc)
			} else {
				res, err = fp.Train(mdl, data, tc)
			}
			r.Done()
			if err != nil {
				return err
			}
		}
		run := trainRun{Seed: sd, TestAccuracy: res.TestAcc, ValAccuracy: res.ValAcc,
			Epochs: res.Epochs, BestEpoch: res.BestEpoch, Seconds: res.Seconds, EpochSeconds: res.EpochSeconds}
		for _, limit := range *esLimits {
			sampled := *data
			sampled.Input = data.Input.SampleGCN(limit, window)
			run.ES = append(run.ES, esRun{Limit: limit, Window: window, TestAccuracy: fp.Evaluate(mdl, &sampled).TestAcc})
		}
		rep.Runs = append(rep.Runs, run)
		stepSum += res.EpochSeconds * float64(res.Epochs)
		stepN += res.Epochs
		if res.ValAcc > bestVal {
			best, bestVal = mdl, res.ValAcc
		}
	}
	rep.TestAccuracy, rep.TestStd = meanStd(rep.Runs, func(r trainRun) float64 { return r.TestAccuracy })
	rep.ValAccuracy, rep.ValStd = meanStd(rep.Runs, func(r trainRun) float64 { return r.ValAccuracy })
	rep.Epochs = rep.Runs[0].Epochs
	if stepN > 0 {
		rep.EpochSeconds = stepSum / float64(stepN)
	}
	if gpu != nil {
		if _, peak, err := gpu.PoolBytes(); err == nil {
			rep.DevicePeakBytes = peak
		}
	}
	if *out != "" {
		if err := saveModel(best, *out); err != nil {
			return err
		}
		rep.Out = *out
	}
	rep.Seconds = time.Since(start).Seconds()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%s on %s (%s split, %d nodes, %d edges): test accuracy %.2f%%", m, ds.Name, splitName, rep.Nodes, rep.Edges, 100*rep.TestAccuracy)
	if *seeds > 1 {
		fmt.Fprintf(stdout, " ± %.2f over %d seeds", 100*rep.TestStd, *seeds)
	}
	fmt.Fprintf(stdout, ", validation %.2f%%, %.2f ms/epoch, %.1f s\n", 100*rep.ValAccuracy, 1000*rep.EpochSeconds, rep.Seconds)
	for i, l := range *esLimits {
		mean, std := meanStd(rep.Runs, func(r trainRun) float64 { return r.ES[i].TestAccuracy })
		fmt.Fprintf(stdout, "ES-SpMM sampled propagation, at most %d edges a row (window %d rows): test accuracy %.2f%% ± %.2f (%+.2f points)\n",
			l, window, 100*mean, 100*std, 100*(mean-rep.TestAccuracy))
	}
	if rep.Out != "" {
		fmt.Fprintf(stdout, "model written to %s\n", rep.Out)
	}
	return nil
}

// meanStd is the mean and the population standard deviation of f over runs.
func meanStd(runs []trainRun, f func(trainRun) float64) (mean, std float64) {
	for _, r := range runs {
		mean += f(r)
	}
	mean /= float64(len(runs))
	for _, r := range runs {
		d := f(r) - mean
		std += d * d
	}
	return mean, math.Sqrt(std / float64(len(runs)))
}

func loadInit(m fp.Model, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := fp.LoadParams(m, f); err != nil {
		return fmt.Errorf("--init %s: %w", path, err)
	}
	return nil
}

func saveModel(m fp.Model, path string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer f.Abort()
	err = fp.Save(f, m)
	if err == nil {
		err = f.Commit()
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// trainDevice opens GPU 0 for --device gpu, or for auto when one opens
// and the model runs there (nil: the CPU). --device gpu with no GPU, or
// with a model or mode not on the GPU, is one line of error.
func trainDevice(device string, cfg fp.Config, clusters int) (*tcu.Device, error) {
	switch device {
	case "cpu":
		return nil, nil
	case "gpu", "auto":
	default:
		return nil, fmt.Errorf("%w: --device %q (want cpu, gpu or auto)", errUsage, device)
	}
	why := gpufp.Supported(cfg)
	switch {
	case why != nil:
	case clusters > 0:
		why = fmt.Errorf("%w: Cluster-GCN mini-batches (--clusters)", gpufp.ErrUnsupported)
	}
	if why != nil {
		if device == "gpu" {
			return nil, fmt.Errorf("--device gpu: %s; use --device cpu", strings.TrimPrefix(why.Error(), "gpufp: "))
		}
		fmt.Fprintf(trainStderr, "train: on the CPU: %s\n", strings.TrimPrefix(why.Error(), "gpufp: "))
		return nil, nil
	}
	d, err := tcu.Open(0)
	if err != nil {
		if device == "gpu" {
			return nil, fmt.Errorf("--device gpu: %s", strings.TrimPrefix(err.Error(), "tcu: "))
		}
		fmt.Fprintf(trainStderr, "train: no GPU (%s), on the CPU\n", strings.TrimPrefix(err.Error(), "tcu: "))
		return nil, nil
	}
	return d, nil
}

// ginNormFor passes --norm to GIN only (the other models have no such option).
func ginNormFor(model, norm string) string {
	if model == "gin" {
		return norm
	}
	return ""
}

// trainStderr takes train's progress lines (a test hook).
var trainStderr io.Writer = os.Stderr

// checkTrainFlags rejects out-of-range values and flags that do not apply
// to the model, before any data is loaded.
func checkTrainFlags(fs *pflag.FlagSet, model string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
	}
	str := func(name string) string { return fs.Lookup(name).Value.String() }
	num := func(name string) float64 {
		x, _ := strconv.ParseFloat(str(name), 64)
		return x
	}
	if str("dataset") == "" {
		return bad("--dataset is required")
	}
	switch model {
	case "gcn", "gin", "sage", "gat":
	default:
		return bad("--model %q: want gcn, gin, sage or gat", str("model"))
	}
	for _, f := range []struct{ name, model string }{
		{"heads", "gat"}, {"out-heads", "gat"}, {"attn-dropout", "gat"}, {"aggr", "sage"}, {"norm", "gin"},
	} {
		if fs.Changed(f.name) && model != f.model {
			return bad("--%s applies to --model %s only, not %s", f.name, f.model, model)
		}
	}
	choices := []struct{ name, want string }{
		{"lcc", "true false auto"}, {"normalize", "auto row none"}, {"split", "auto public random"},
		{"aggr", "mean max"}, {"norm", "none batch"},
	}
	for _, c := range choices {
		if !slices.Contains(strings.Fields(c.want), str(c.name)) {
			return bad("--%s %q: want %s", c.name, str(c.name), strings.Join(strings.Fields(c.want), ", "))
		}
	}
	// Integer flags with their least value; -1 marks "default" for --epochs.
	for _, f := range []struct {
		name  string
		least int
	}{
		{"hidden", 1}, {"layers", 1}, {"heads", 1}, {"out-heads", 1}, {"patience", 0}, {"seeds", 1},
		{"train-per-class", 1}, {"val-per-class", 1}, {"clusters", 0}, {"clusters-per-batch", 1}, {"epochs", 0},
	} {
		if (f.name != "epochs" || fs.Changed("epochs")) && num(f.name) < float64(f.least) {
			return bad("--%s %s: want at least %d", f.name, str(f.name), f.least)
		}
	}
	if model == "gat" && int(num("hidden"))%int(num("heads")) != 0 {
		return bad("--hidden %s is not divisible into --heads %s", str("hidden"), str("heads"))
	}
	// Float flags: lr and dropout are 0 and -1 when left to their defaults.
	for _, f := range []struct {
		name string
		ok   func(float64) bool
		want string
	}{
		{"lr", func(x float64) bool { return x > 0 }, "a positive rate"},
		{"weight-decay", func(x float64) bool { return x >= 0 }, "a value of at least 0"},
		{"dropout", func(x float64) bool { return x >= 0 && x < 1 }, "a probability in [0, 1)"},
		{"attn-dropout", func(x float64) bool { return x >= 0 && x < 1 }, "a probability in [0, 1)"},
	} {
		x := num(f.name)
		if (fs.Changed(f.name) || (f.name != "lr" && f.name != "dropout")) && (!f.ok(x) || math.IsInf(x, 0)) {
			return bad("--%s %s: want %s", f.name, str(f.name), f.want)
		}
	}
	if fs.Changed("clusters-per-batch") && num("clusters") == 0 {
		return bad("--clusters-per-batch applies to Cluster-GCN training only; give --clusters too")
	}
	if c := num("clusters"); c > 0 && num("clusters-per-batch") > c {
		return bad("--clusters-per-batch %s is more than --clusters %s", str("clusters-per-batch"), str("clusters"))
	}
	if str("split") == "public" {
		for _, name := range []string{"train-per-class", "val-per-class"} {
			if fs.Changed(name) {
				return bad("--%s applies to random splits, not --split public", name)
			}
		}
	}
	return nil
}
