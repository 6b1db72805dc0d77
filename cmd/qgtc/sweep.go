package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/plot"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
)

func init() {
	register(&command{name: "sweep", summary: "accuracy, latency and model size of a quantized GNN per bit width (table, CSV, JSON, plots)", run: runSweep})
}

// The sweep's report types are the pipeline's (the tests build fixtures).
type (
	sweepRow    = pipeline.SweepRow
	sweepReport = pipeline.SweepReport
)

func qParseBits(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > 32 {
			return nil, fmt.Errorf("%w: --bits entry %q is not a width in 1..32", errUsage, f)
		}
		out = append(out, b)
	}
	return out, nil
}

func runSweep(args []string, stdout io.Writer) error {
	fs := newFlags("sweep", stdout)
	var c pipeline.Config
	var quiet bool
	bitList := fs.String("bits", "1,2,3,4,6,8,16,32", "comma-separated bit widths (activations = weights)")
	seeds := fs.Int("seeds", 1, "seeds per width (split, partition, training); reports mean ± std")
	out := fs.String("out", "qgtc-sweep", "folder for sweep.csv, sweep.json, sweep.svg and sweep.png")
	qJobFlags(fs, &c, &quiet)
	fs.Uint64Var(&c.Seed, "seed", 0, "first seed")
	device := fs.String("device", "cpu", "cpu, gpu or auto")
	asJSON := fs.Bool("json", false, "print the JSON report instead of the table")
	fold := qFoldFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bits, err := qParseBits(*bitList)
	if err != nil {
		return err
	}
	if pipeline.GraphDataset(c.Dataset) {
		qGraphDefaults(fs, &c)
		if !fs.Changed("bits") {
			bits = []int{2, 4, 8}
		}
		var widths [][2]int
		for _, b := range bits {
			widths = append(widths, [2]int{b, b})
		}
		c.ABits, c.WBits = bits[0], bits[0]
		return qGraphRun("sweep", fs, c, widths, *fold, *device, quiet, *asJSON, *out, stdout)
	}
	qRecipe(fs, &c)
	c.ABits, c.WBits = bits[0], bits[0]
	if err := c.Check(); err != nil {
		return qUsage(err)
	}
	if *seeds < 1 {
		return fmt.Errorf("%w: --seeds %d must be positive", errUsage, *seeds)
	}
	// Training takes minutes: a folder that cannot take the results is
	// reported now, not after.
	if *out != "" {
		if err := atomicfile.CheckDir(*out); err != nil {
			return err
		}
	}
	be, closer, err := qPickBackend(*device)
	if err != nil {
		return err
	}
	defer closer.Close()
	j := &pipeline.Job{Config: c, Backend: be, CacheDir: qCacheDir(), Progress: progress.New(qStderr, quiet), Warnings: qStderr}
	rep, err := j.Sweep(bits, *seeds)
	if err != nil {
		return qUsage(err)
	}
	rows := rep.Rows
	if *out != "" {
		if err := qWriteSweep(*out, rep); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "qgtc sweep: %s on %s, %s in %s, %s, kernel %s\n",
		qModelName(rep.Model, rep.GINAggr), rep.Dataset, qNodes(rep.Nodes, rep.ComponentOf), qCount(rep.Batches, "batch", "batches"), qCount(rep.Seeds, "seed", "seeds"), be.Name())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bits\taccuracy %\t± std\tvs fp32\tPTQ %\tcompute ms\tpack ms\tnodes/s\tweights\tbetween layers\t")
	for _, r := range rows {
		name := strconv.Itoa(r.Bits)
		if r.LastBits != 0 {
			name += fmt.Sprintf(" (last %d)", r.LastBits)
		}
		if r.Bits == 0 {
			fmt.Fprintf(tw, "fp32\t%.2f\t%.2f\t\t\t\t\t\t%s\t\t\n", 100*r.Accuracy, 100*r.AccuracyStd, qByteSize(int64(r.WeightBytes)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%+.2f\t%.2f\t%.1f\t%.1f\t%s\t%s\t%s\t\n", name, 100*r.Accuracy, 100*r.AccuracyStd,
			100*(r.Accuracy-rows[0].Accuracy), 100*r.PTQAccuracy,
			r.ComputeMS, r.PackMS, qGroupDigits(r.NodesPerSec), qByteSize(int64(r.WeightBytes)), qByteSize(int64(r.InterBytes)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *out != "" {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*out, "sweep.{csv,json,svg,png}"))
	}
	return nil
}

// qWriteSweep writes sweep.csv, sweep.json, sweep.svg and sweep.png into
// dir. Each goes to a temporary file first; all four are renamed into
// place only once all are written, so a failure leaves no partial set.
func qWriteSweep(dir string, rep *sweepReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"dataset", "model", "bits", "accuracy", "accuracy_std", "ptq_accuracy", "compute_ms", "pack_ms", "nodes_per_sec", "weight_bytes", "inter_layer_bytes", "kernel", "last_bits"})
	for _, r := range rep.Rows {
		bits := strconv.Itoa(r.Bits)
		if r.Bits == 0 {
			bits = "fp32"
		}
		_ = w.Write([]string{rep.Dataset, rep.Model, bits, qDecimal(r.Accuracy), qDecimal(r.AccuracyStd), qDecimal(r.PTQAccuracy), qDecimal(r.ComputeMS), qDecimal(r.PackMS),
			qDecimal(r.NodesPerSec), strconv.Itoa(r.WeightBytes), strconv.Itoa(r.InterBytes), r.Kernel, strconv.Itoa(r.LastBits)})
	}
	w.Flush()
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	fig := qSweepFigure(rep)
	var files []*atomicfile.File
	var paths []string
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"sweep.csv", func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err }},
		{"sweep.json", func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err }},
		{"sweep.svg", fig.WriteSVG},
		{"sweep.png", fig.WritePNG},
	} {
		path := filepath.Join(dir, f.name)
		fh, err := atomicfile.Create(path, 0o644)
		if err != nil {
			return err
		}
		files, paths = append(files, fh), append(paths, path)
		if err := f.write(fh); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	for i, f := range files {
		if err := f.Commit(); err != nil {
			return fmt.Errorf("%s: %w", paths[i], err)
		}
	}
	return nil
}

// qDecimal writes v for the CSV in plain decimal notation (never
// 2.21061e+06), to six significant digits but keeping every integer digit.
func qDecimal(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	digits := max(0, 6-int(math.Floor(math.Log10(math.Abs(v))))-1)
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// qCount is n with its noun, e.g. "1 seed" or "3 seeds".
func qCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func qSweepFigure(rep *sweepReport) *plot.Figure {
	q := rep.Rows[1:]
	ticks := make([]string, len(q))
	acc := make([]float64, len(q))
	std := make([]float64, len(q))
	ptq := make([]float64, len(q))
	fp := make([]float64, len(q))
	speed := make([]float64, len(q))
	for i, r := range q {
		ticks[i] = strconv.Itoa(r.Bits)
		acc[i], std[i], ptq[i] = 100*r.Accuracy, 100*r.AccuracyStd, 100*r.PTQAccuracy
		fp[i] = 100 * rep.Rows[0].Accuracy
		speed[i] = r.NodesPerSec
	}
	if rep.Seeds < 2 {
		std = nil // no spread to draw from one seed
	}
	return &plot.Figure{
		Title:  fmt.Sprintf("qgtc sweep: %s on %s (%s)", qModelName(rep.Model, rep.GINAggr), rep.Dataset, qCount(rep.Seeds, "seed", "seeds")),
		XLabel: "bits (activations = weights)",
		XTicks: ticks,
		Panels: []plot.Panel{
			{Title: "test accuracy", YLabel: "accuracy (%)", Series: []plot.Series{
				{Name: "QAT", Y: acc, Err: std, Color: plot.Palette[0]},
				{Name: "PTQ", Y: ptq, Color: plot.Palette[2]},
				{Name: "fp32", Y: fp, Color: plot.Palette[1]},
			}},
			{Title: "inference speed (pack + compute)", YLabel: "nodes / s", LogY: true, Series: []plot.Series{
				{Name: "nodes/s", Y: speed, Color: plot.Palette[3]},
			}},
		},
	}
}
