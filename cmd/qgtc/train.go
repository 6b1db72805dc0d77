package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
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
}

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
	out := fs.String("out", "", "write the trained model (best validation seed) as safetensors")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	quiet := fs.Bool("quiet", false, "no progress bar on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		return fmt.Errorf("%w: --dataset is required", errUsage)
	}
	if *seeds < 1 || *epochs < -1 {
		return fmt.Errorf("%w: --seeds %d and --epochs %d must be ≥ 1 and ≥ 0", errUsage, *seeds, *epochs)
	}
	if *lcc != "auto" && *lcc != "true" && *lcc != "false" {
		return fmt.Errorf("%w: --lcc %q (want true, false or auto)", errUsage, *lcc)
	}
	if *norm != "auto" && *norm != "row" && *norm != "none" {
		return fmt.Errorf("%w: --normalize %q (want row, none or auto)", errUsage, *norm)
	}
	if *split != "auto" && *split != "public" && *split != "random" {
		return fmt.Errorf("%w: --split %q (want auto, public or random)", errUsage, *split)
	}
	if *epochs == 0 && *initFile == "" {
		return fmt.Errorf("%w: --epochs 0 evaluates --init weights; give --init", errUsage)
	}
	m := strings.ToLower(*model)
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
	start := time.Now()
	ds, err := subgraph.Load(*dataset)
	if err != nil {
		return err
	}
	shipped := len(ds.Train) > 0
	if *split == "public" && !shipped {
		return fmt.Errorf("%w: dataset %q ships no split; use --split random", errUsage, ds.Name)
	}
	random := *split == "random" || (*split == "auto" && !shipped)
	if *lcc == "true" || (*lcc == "auto" && random) {
		ds = ds.LargestComponent()
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
	if ds.Features == nil || ds.Labels == nil {
		return fmt.Errorf("dataset %q: %w: training needs node features and single labels", ds.Name, layers.ErrData)
	}
	cfg := layers.Config{Model: m, In: ds.Features.Cols, Hidden: *hidden, Out: ds.NumClasses, Layers: *nlayers,
		Dropout: *dropout, Aggr: *aggr, Norm: ginNormFor(m, *ginNorm), Heads: *heads, OutHeads: *outHeads, AttnDropout: *attnDrop}
	if _, err := layers.New(cfg, 0); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	rep := trainReport{Model: m, Dataset: ds.Name, Split: splitName, Nodes: ds.Graph.N(), Edges: ds.Graph.NumEdges() / 2,
		Hidden: *hidden, Layers: *nlayers, Seeds: *seeds}
	var best layers.Model
	bestVal := -1.0
	var stepSum float64
	var stepN int
	for s := range *seeds {
		sd := *seed + uint64(s)
		if random {
			ds.RandomSplit(*trainPer, *valPer, sd)
		}
		data, err := layers.NewData(ds, *norm == "row" || (*norm == "auto" && layers.DefaultNormalize(ds.Features)))
		if err != nil {
			return err
		}
		mdl, err := layers.New(cfg, sd)
		if err != nil {
			return err
		}
		if *initFile != "" {
			if err := loadInit(mdl, *initFile); err != nil {
				return err
			}
		}
		var res *layers.Result
		if *epochs == 0 {
			ev := layers.Evaluate(mdl, data)
			res = &layers.Result{ValAcc: ev.ValAcc, TestAcc: ev.TestAcc}
		} else {
			tc := layers.TrainConfig{Epochs: *epochs, LR: *lr, WeightDecay: *wd, Patience: *patience, Seed: sd,
				Clusters: *clusters, ClustersPerBatch: *perBatch}
			if !*quiet {
				tc.Progress = progressBar(os.Stderr, s, *seeds, *epochs)
			}
			res, err = layers.Train(mdl, data, tc)
			if !*quiet && isTerminal(os.Stderr) {
				fmt.Fprintln(os.Stderr) // end the redrawn line
			}
			if err != nil {
				return err
			}
		}
		rep.Runs = append(rep.Runs, trainRun{Seed: sd, TestAccuracy: res.TestAcc, ValAccuracy: res.ValAcc,
			Epochs: res.Epochs, BestEpoch: res.BestEpoch, Seconds: res.Seconds, EpochSeconds: res.EpochSeconds})
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

func loadInit(m layers.Model, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := layers.LoadParams(m, f); err != nil {
		return fmt.Errorf("--init %s: %w", path, err)
	}
	return nil
}

func saveModel(m layers.Model, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := layers.Save(f, m); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// progressBar draws `seed 1/10 [=====>    ] epoch 57/200 loss 0.4321 val 77.80%`
// on one line of w, redrawn every epoch when w is a terminal; otherwise it
// writes one such line per tenth of the epochs, so logs stay short.
func progressBar(w io.Writer, seed, seeds, epochs int) func(layers.EpochStats) {
	const width = 30
	tty := isTerminal(w)
	every := max(1, epochs/10)
	return func(e layers.EpochStats) {
		if !tty && e.Epoch%every != 0 && e.Epoch != 1 {
			return
		}
		done := width * e.Epoch / epochs
		bar := strings.Repeat("=", done) + strings.Repeat(" ", width-done)
		if done < width {
			bar = bar[:done] + ">" + bar[done+1:]
		}
		line := fmt.Sprintf("seed %d/%d [%s] epoch %d/%d loss %.4f val %.2f%%", seed+1, seeds, bar, e.Epoch, epochs, e.Loss, 100*e.ValAcc)
		if tty {
			fmt.Fprint(w, "\r"+line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ginNormFor passes --norm to GIN only (the other models have no such option).
func ginNormFor(model, norm string) string {
	if model == "gin" {
		return norm
	}
	return ""
}
