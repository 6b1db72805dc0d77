package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
)

// Graph classification: infer, sweep and train on a dataset of many small
// graphs (PROTEINS) run the GIN graph classifier over its cross-validation
// folds (pipeline.GraphClassify) instead of a node model.

// qGraphDefaults gives c the graph-classification recipe
// (pipeline.DefaultGraphConfig) for every setting whose flag was not given.
func qGraphDefaults(fs *pflag.FlagSet, c *pipeline.Config) {
	def := pipeline.DefaultGraphConfig(c.Dataset)
	for flag, f := range map[string]func(){
		"model": func() { c.Model = def.Model }, "hidden": func() { c.Hidden = def.Hidden },
		"layers": func() { c.Layers = def.Layers }, "norm": func() { c.Norm = def.Norm },
		"epochs": func() { c.Epochs = def.Epochs }, "qat-epochs": func() { c.QATEpochs = def.QATEpochs },
		"feature-scale": func() { c.FeatureScale = def.FeatureScale },
	} {
		if fs.Lookup(flag) == nil || !fs.Changed(flag) {
			f()
		}
	}
	// The graph recipe's rates, not the node recipe's (no flag sets them).
	c.LR, c.WeightDecay, c.Dropout, c.Patience = def.LR, def.WeightDecay, def.Dropout, def.Patience
	c.QATLR, c.QATWeightDecay, c.QATPatience = def.QATLR, def.QATWeightDecay, def.QATPatience
}

// qFoldFlag registers --fold, which infer, sweep and train take for graph
// classification.
func qFoldFlag(fs *pflag.FlagSet) *int {
	return fs.Int("fold", 0, "graph-classification datasets (proteins): only this cross-validation fold (1..10; 0: every fold)")
}

// qGraphFolds is --fold as GraphClassify's folds: 0 is every fold.
func qGraphFolds(fold int) ([]int, error) {
	switch {
	case fold < 0:
		return nil, fmt.Errorf("%w: --fold %d must be positive (or 0 for every fold)", errUsage, fold)
	case fold == 0:
		return nil, nil
	}
	return []int{fold}, nil
}

// qGraphFlags are the flags graph classification takes; any other flag
// given is a usage error rather than silently ignored.
var qGraphFlags = map[string]bool{"dataset": true, "model": true, "bits": true, "abits": true, "wbits": true,
	"hidden": true, "layers": true, "norm": true, "epochs": true, "qat-epochs": true, "seed": true, "device": true,
	"json": true, "quiet": true, "fold": true, "agg": true, "sparse-input": true, "out": true}

// qGraphRun runs graph classification for cmd at widths (none: fp32
// only), prints the report or writes it as JSON, and, when out is not
// empty, writes it to out/sweep.json.
func qGraphRun(cmd string, fs *pflag.FlagSet, c pipeline.Config, widths [][2]int, fold int, device string, quiet, asJSON bool, out string, stdout io.Writer) error {
	if bad := flagOutside(fs, qGraphFlags); bad != "" {
		return fmt.Errorf("%w: --%s does not apply to graph classification (%s)", errUsage, bad, c.Dataset)
	}
	if c.Model != "gin" {
		return fmt.Errorf("%w: --model %s: graph classification (%s) runs gin", errUsage, c.Model, c.Dataset)
	}
	folds, err := qGraphFolds(fold)
	if err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return qUsage(err)
	}
	if out != "" {
		if err := atomicfile.CheckDir(out); err != nil {
			return err
		}
	}
	be, closer, err := qPickBackend(device)
	if err != nil {
		return err
	}
	defer closer.Close()
	j := &pipeline.Job{Config: c, Backend: be, Progress: progress.New(qStderr, quiet), Warnings: qStderr}
	r, err := j.GraphClassify(folds, widths)
	if err != nil {
		return qUsage(err)
	}
	if out != "" {
		if err := qGraphSweepFile(out, r); err != nil {
			return err
		}
	}
	if asJSON {
		return printJSON(stdout, r)
	}
	printGraphReport(stdout, cmd, r)
	return nil
}

func printGraphReport(w io.Writer, cmd string, r *pipeline.GraphReport) {
	fmt.Fprintf(w, "qgtc %s: graph classification, %s on %s (%d graphs), %d layers of width %d, norm %s, kernel %s\n",
		cmd, r.Model, r.Dataset, r.Graphs, r.Layers, r.Hidden, r.Norm, r.Backend)
	fmt.Fprintf(w, "  folds        %v of the shipped 10fold_idx; sum readout of %d-bit node scores per graph\n", r.Folds, r.ReadoutBit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bits\taccuracy %\t± std\tvs fp32\ttrain s/fold\t")
	fmt.Fprintf(tw, "fp32\t%.2f\t%.2f\t\t%.1f\t\n", 100*r.FP32.Mean, 100*r.FP32.Std, r.TrainSecs)
	for _, g := range r.Widths {
		name := fmt.Sprint(g.ABits)
		if g.ABits != g.WBits {
			name = fmt.Sprintf("%d/%d", g.ABits, g.WBits)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.2f\t%.1f\t\n", name, 100*g.Accuracy.Mean, 100*g.Accuracy.Std,
			100*(g.Accuracy.Mean-r.FP32.Mean), g.QATSeconds)
	}
	tw.Flush()
	fmt.Fprintf(w, "  (fp32: %d epochs per fold; quantized: calibration and %d QAT epochs per fold)\n", r.Epochs, r.QATEpochs)
}

// qGraphSweepFile writes the sweep's report as JSON into out.
func qGraphSweepFile(out string, r *pipeline.GraphReport) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(out, "sweep.json"), append(b, '\n'), 0o644)
}

// qGraphTrain is `qgtc train` on a graph-classification dataset: the fp32
// GIN graph classifier over the folds, from the train command's model
// flags (its defaults are the graph recipe's).
func qGraphTrain(fs *pflag.FlagSet, dataset string, fold int, asJSON, quiet bool, stdout io.Writer) error {
	c := pipeline.DefaultGraphConfig(dataset)
	get := func(name string, dst *int) {
		if f := fs.Lookup(name); f != nil && fs.Changed(name) {
			fmt.Sscan(f.Value.String(), dst)
		}
	}
	get("hidden", &c.Hidden)
	get("layers", &c.Layers)
	get("epochs", &c.Epochs)
	if fs.Changed("model") {
		c.Model = fs.Lookup("model").Value.String()
	}
	if fs.Changed("norm") {
		c.Norm = fs.Lookup("norm").Value.String()
	}
	if fs.Changed("seed") {
		fmt.Sscan(fs.Lookup("seed").Value.String(), &c.Seed)
	}
	if c.Epochs < 1 {
		return fmt.Errorf("%w: --epochs %d must be positive for graph classification", errUsage, c.Epochs)
	}
	if fs.Changed("out") {
		return fmt.Errorf("%w: --out does not apply to graph classification (%s): no model file is written", errUsage, dataset)
	}
	return qGraphRun("train", fs, c, [][2]int{}, fold, "cpu", quiet, asJSON, "", stdout)
}
