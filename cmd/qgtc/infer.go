package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"syscall"
	"time"

	"github.com/qgtc/qgtc/bmm"
	_ "github.com/qgtc/qgtc/cpu" // registers the CPU bit kernels with bmm
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{name: "infer", summary: "batched quantized GNN inference (gcn, gin) on bit tensors", run: runInfer})
}

// qjob is what identifies a quantized model and its batches.
type qjob struct {
	dataset      string
	kind         string
	abits, wbits int
	hidden       int
	layers       int
	parts, batch int
	seed         uint64
	epochs       int
	qatEpochs    int
	quiet        bool
	scale        string // feature scale: layers.ScaleMean or ScaleRows
	norm         string // GIN's MLP normalization: layers.NormNone or NormBatch
	lsq          bool   // QAT learns the activation step sizes

	name       string             // the loaded dataset's name
	data       string             // qDataFingerprint of the loaded dataset
	prog       *progress.Reporter // nil: silent
	cacheErr   error              // caching a trained model failed
	cacheNoted bool               // the cache's failure was reported
}

// qtask is a loaded dataset with its batches.
type qtask struct {
	ds         *subgraph.Dataset
	data       *layers.Data
	load, part time.Duration
	prep       time.Duration
	partCached bool
	parts      int
	keptEdges  float64 // fraction of edges inside the batches
}

// qAutoParts picks a partition count: one batch up to 5,000 nodes, else
// parts of about 2,000 nodes (the dense 1-bit adjacency of a batch grows
// with the square of its size).
func qAutoParts(n int) int {
	if n <= 5000 {
		return 1
	}
	return (n + 1999) / 2000
}

// loadTask loads the dataset, splits it when it ships no split, and builds
// the batches from a partition that is cached on disk.
func qLoadTask(j *qjob) (*qtask, error) {
	t := &qtask{}
	t0 := time.Now()
	j.prog.Printf("qgtc: loading %s", j.dataset)
	ds, err := subgraph.Load(j.dataset)
	j.prog.Done()
	if err != nil {
		return nil, err
	}
	if ds.Features == nil {
		return nil, fmt.Errorf("%w: dataset %s has no node features; quantized inference needs them", errUsage, ds.Name)
	}
	if ds.Labels == nil {
		return nil, fmt.Errorf("%w: dataset %s has no single-label classes", errUsage, ds.Name)
	}
	if len(ds.Train) == 0 {
		ds.RandomSplit(20, 30, j.seed)
	}
	t.ds = ds
	j.name, j.data = ds.Name, qDataFingerprint(ds)
	t.load = time.Since(t0)
	n := ds.Graph.N()
	if j.parts <= 0 {
		j.parts = qAutoParts(n)
	}
	if j.parts > n {
		return nil, fmt.Errorf("%w: --parts %d is more than the %d nodes", errUsage, j.parts, n)
	}
	t.parts = j.parts
	var p []int32
	t1 := time.Now()
	if j.parts > 1 {
		p, t.partCached, err = qPartition(j, ds, j.parts)
		if err != nil {
			return nil, err
		}
	}
	t.part = time.Since(t1)
	t2 := time.Now()
	t.data, err = layers.NewDataScaled(ds, p, j.parts, j.batch, j.scale)
	if err != nil {
		return nil, err
	}
	t.prep = time.Since(t2)
	var kept int
	for _, b := range t.data.Eval {
		kept += len(b.Indices) - b.N()
	}
	if e := ds.Graph.NumEdges(); e > 0 {
		t.keptEdges = float64(kept) / float64(e)
	}
	return t, nil
}

// fp32Model returns the trained full-precision model of j (from the cache
// or trained now) and how long training took (0 when cached).
func qFP32Model(j *qjob, t *qtask, in *layers.Input) (*layers.Model, time.Duration, error) {
	key := j.modelKey(false)
	path := j.modelPath("fp32", key)
	fits := func(m *layers.Model) bool {
		return m.Kind == j.kind && m.Classes == t.ds.NumClasses && m.Layers[0].Lin1.In == t.ds.Features.Cols
	}
	if m := qCachedModel(path, key, fits); m != nil {
		return m, 0, nil
	}
	t0 := time.Now()
	m, err := layers.NewModel(j.kind, t.ds.Features.Cols, j.hidden, t.ds.NumClasses, j.layers, 8, 8, j.seed)
	if err != nil {
		return nil, 0, err
	}
	if err := m.SetNorm(j.norm); err != nil {
		return nil, 0, fmt.Errorf("%w: --norm: %v", errUsage, err)
	}
	_, err = m.TrainFP32(t.data, in, layers.TrainConfig{Epochs: j.epochs, LR: qFP32LR, WeightDecay: qFP32WD, Dropout: qFP32Dropout,
		Patience: qFP32Patience, Seed: j.seed, Progress: func(ep int, loss, val float64) {
			j.prog.Printf("qgtc: training fp32 %s on %s: epoch %d/%d loss %.3f val %.1f%%", j.kind, t.ds.Name, ep, j.epochs, loss, 100*val)
		}})
	j.prog.Done()
	if err != nil {
		return nil, 0, err
	}
	j.saveModel(path, m, key)
	return m, time.Since(t0), nil
}

// qCalibrate returns fp at j's bit widths, calibrated (post-training
// quantization) on up to qCalibBatches batches.
func qCalibrate(j *qjob, t *qtask, fp *layers.Model, in *layers.Input) (*layers.Model, error) {
	m := fp.Clone()
	m.ABits, m.WBits = j.abits, j.wbits
	j.prog.Printf("qgtc: calibrating %d/%d-bit %s", j.abits, j.wbits, j.kind)
	defer j.prog.Done()
	if err := m.Calibrate(t.data, in, qCalibBatches); err != nil {
		return nil, err
	}
	return m, nil
}

// quantModel returns the model of j at its bit widths: calibrated from the
// fp32 model (or ptq, when the caller has already calibrated it with
// qCalibrate), then fine-tuned with QAT (cached).
func qQuantModel(j *qjob, t *qtask, fp, ptq *layers.Model, in *layers.Input) (*layers.Model, time.Duration, error) {
	bits := fmt.Sprintf("a%dw%d", j.abits, j.wbits)
	key := j.modelKey(true)
	path := j.modelPath(bits, key)
	fits := func(m *layers.Model) bool {
		return m.Calibrated && m.Kind == j.kind && m.ABits == j.abits && m.WBits == j.wbits && m.Input == in.Params
	}
	if m := qCachedModel(path, key, fits); m != nil {
		return m, 0, nil
	}
	t0 := time.Now()
	var m *layers.Model
	if ptq != nil {
		m = ptq.Clone()
	} else {
		var err error
		if m, err = qCalibrate(j, t, fp, in); err != nil {
			return nil, 0, err
		}
	}
	if j.qatEpochs > 0 {
		_, err := m.QAT(t.data, in, layers.TrainConfig{Epochs: j.qatEpochs, LR: qQATLR, WeightDecay: qQATWD, Patience: qQATPatience, Seed: j.seed, LearnScales: j.lsq,
			Progress: func(ep int, loss, val float64) {
				j.prog.Printf("qgtc: QAT %d/%d-bit %s: epoch %d/%d loss %.3f val %.1f%%", j.abits, j.wbits, j.kind, ep, j.qatEpochs, loss, 100*val)
			}})
		j.prog.Done()
		if err != nil {
			return nil, 0, err
		}
	}
	j.saveModel(path, m, key)
	return m, time.Since(t0), nil
}

// qPickKernel returns the bit kernel for --device and a closer; when auto
// falls back to the CPU it says why on stderr.
func qPickKernel(device string) (bmm.Kernel, io.Closer, error) {
	note := func(msg string) { qNote("%s", msg) }
	switch device {
	case "cpu":
		return bmm.Default(), nil, nil
	case "gpu", "auto":
		if openGPUKernel == nil {
			if device == "gpu" {
				return nil, nil, errors.New("this build has no GPU support")
			}
			note("no GPU support in this build; running on the CPU")
			return bmm.Default(), nil, nil
		}
		k, c, err := openGPUKernel()
		if err != nil {
			if device == "gpu" {
				return nil, nil, fmt.Errorf("opening the GPU: %w", err)
			}
			note(fmt.Sprintf("no GPU (%v); running on the CPU", err))
			return bmm.Default(), nil, nil
		}
		return k, c, nil
	}
	return nil, nil, fmt.Errorf("%w: --device %q (want cpu, gpu or auto)", errUsage, device)
}

// peakRSS is the process's peak resident set in bytes (0 if unknown).
func qPeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024
}

func qms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// inferReport is the --json object of `qgtc infer`.
type inferReport struct {
	Dataset         string   `json:"dataset"`
	Model           string   `json:"model"`
	Bits            int      `json:"bits"`
	ABits           int      `json:"abits"`
	WBits           int      `json:"wbits"`
	FeatureBits     int      `json:"feature_bits"`
	Accuracy        *float64 `json:"accuracy"`
	FP32Accuracy    *float64 `json:"fp32_accuracy,omitempty"`
	Nodes           int      `json:"nodes"`
	Edges           int      `json:"edges"`
	Parts           int      `json:"parts"`
	Batches         int      `json:"batches"`
	KeptEdges       float64  `json:"kept_edges"`
	Kernel          string   `json:"kernel"`
	LoadMS          float64  `json:"load_ms"`
	PartitionMS     float64  `json:"partition_ms"`
	PartitionCached bool     `json:"partition_cached"`
	PrepareMS       float64  `json:"prepare_ms"`
	PackMS          float64  `json:"pack_ms"`
	ComputeMS       float64  `json:"compute_ms"`
	OtherMS         float64  `json:"other_ms"` // total less the parts above
	TotalMS         float64  `json:"total_ms"`
	TrainMS         float64  `json:"train_ms"`
	NodesPerSec     float64  `json:"nodes_per_sec"`
	PeakBytes       int64    `json:"peak_bytes"`
	InterBytes      int      `json:"inter_layer_bytes"`
	UnfusedBytes    int      `json:"unfused_inter_layer_bytes"`
	WeightBytes     int      `json:"weight_bytes"`
	Weights         string   `json:"weights,omitempty"`
	CachedIn        string   `json:"cached_in,omitempty"` // where the model trained now was cached
	SparseInput     bool     `json:"sparse_input"`
	EdgeListBatches int      `json:"edge_list_batches"` // batches aggregated over the edge list
}

// jobFlags registers the settings infer and sweep share: the dataset and
// model, batching, the model trained when none is given, input scaling and
// progress (checked by check).
func (j *qjob) jobFlags(fs *pflag.FlagSet) {
	fs.StringVar(&j.dataset, "dataset", "", "dataset name (cora, citeseer, amazon_photo, coauthor_physics, ...) or path (required)")
	fs.StringVar(&j.kind, "model", "gcn", "model: gcn or gin")
	fs.IntVar(&j.parts, "parts", 0, "graph partitions (0: one batch up to 5,000 nodes, else parts of ~2,000 nodes)")
	fs.IntVar(&j.batch, "batch", 1, "partitions per batch")
	fs.IntVar(&j.hidden, "hidden", 64, "hidden width (when training)")
	fs.IntVar(&j.layers, "layers", 2, "graph layers (when training)")
	fs.IntVar(&j.epochs, "epochs", 200, "full-precision training epochs (when training)")
	fs.IntVar(&j.qatEpochs, "qat-epochs", 40, "quantization-aware fine-tuning epochs per width (0: post-training quantization only)")
	fs.BoolVar(&j.lsq, "lsq", false, "QAT learns each activation quantizer's step size (LSQ)")
	fs.StringVar(&j.norm, "norm", layers.NormNone, "gin: normalization inside each MLP, none or batch (when training)")
	fs.StringVar(&j.scale, "feature-scale", layers.ScaleSqrt, "input scaling, folded into the first epilogue: sqrt (1/sqrt(mean row sum)), mean (1/mean row sum), rows (each row to sum 1) or none")
	fs.BoolVar(&j.quiet, "quiet", false, "no progress on stderr")
}

// check refuses the job flags infer and sweep share: a missing --dataset,
// an unknown --model, --norm or --feature-scale, sizes that are not
// positive and negative epochs.
func (j *qjob) check() error {
	if j.dataset == "" {
		return fmt.Errorf("%w: --dataset is required", errUsage)
	}
	if j.kind != layers.GCN && j.kind != layers.GIN {
		return fmt.Errorf("%w: --model %q (want gcn or gin)", errUsage, j.kind)
	}
	switch {
	case j.norm != layers.NormNone && j.norm != layers.NormBatch:
		return fmt.Errorf("%w: --norm %q (want none or batch)", errUsage, j.norm)
	case j.norm == layers.NormBatch && j.kind != layers.GIN:
		return fmt.Errorf("%w: --norm %s: only gin has a normalization", errUsage, j.norm)
	}
	switch j.scale {
	case layers.ScaleSqrt, layers.ScaleMean, layers.ScaleRows, layers.ScaleNone:
	default:
		return fmt.Errorf("%w: --feature-scale %q (want sqrt, mean, rows or none)", errUsage, j.scale)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"batch", j.batch}, {"hidden", j.hidden}, {"layers", j.layers}} {
		if f.v < 1 {
			return fmt.Errorf("%w: --%s %d must be positive", errUsage, f.name, f.v)
		}
	}
	if j.parts < 0 {
		return fmt.Errorf("%w: --parts %d must be positive (or 0 to choose by size)", errUsage, j.parts)
	}
	if j.epochs < 0 || j.qatEpochs < 0 {
		return fmt.Errorf("%w: --epochs %d and --qat-epochs %d must not be negative", errUsage, j.epochs, j.qatEpochs)
	}
	return nil
}

// qWeightsFlags takes j's model settings from the model file m (with its
// origin o, nil for older files): a flag given explicitly that disagrees
// with the file, or one that only applies when training, is a usage error
// naming both values.
func qWeightsFlags(fs *pflag.FlagSet, j *qjob, bits int, m *layers.Model, o *layers.Origin, file string) error {
	conflict := func(flag string, v any, has string) error {
		return fmt.Errorf("%w: --%s %v conflicts with --weights %s, %s (leave --%s out or make them agree)", errUsage, flag, v, file, has, flag)
	}
	widths := fmt.Sprintf("a model of %d-bit activations and %d-bit weights", m.ABits, m.WBits)
	switch {
	case fs.Changed("abits") && j.abits != m.ABits:
		return conflict("abits", j.abits, widths)
	case fs.Changed("wbits") && j.wbits != m.WBits:
		return conflict("wbits", j.wbits, widths)
	case fs.Changed("bits") && ((!fs.Changed("abits") && bits != m.ABits) || (!fs.Changed("wbits") && bits != m.WBits)):
		return conflict("bits", bits, widths)
	case fs.Changed("model") && j.kind != m.Kind:
		return conflict("model", j.kind, "a "+m.Kind+" model")
	case fs.Changed("norm") && j.norm != m.Norm():
		return conflict("norm", j.norm, "a model with norm "+m.Norm())
	case fs.Changed("layers") && j.layers != len(m.Layers):
		return conflict("layers", j.layers, fmt.Sprintf("a model of %d layers", len(m.Layers)))
	case fs.Changed("hidden") && (m.Kind == layers.GIN || len(m.Layers) > 1) && j.hidden != m.Layers[0].Lin1.Out:
		return conflict("hidden", j.hidden, fmt.Sprintf("a model of hidden width %d", m.Layers[0].Lin1.Out))
	case fs.Changed("feature-scale") && o != nil && j.scale != o.FeatureScale:
		return conflict("feature-scale", j.scale, "a model trained with feature scale "+o.FeatureScale)
	}
	for _, f := range []string{"epochs", "qat-epochs", "lsq"} {
		if fs.Changed(f) {
			return fmt.Errorf("%w: --%s only applies when training, and --weights %s is a trained model", errUsage, f, file)
		}
	}
	j.kind, j.norm, j.abits, j.wbits = m.Kind, m.Norm(), m.ABits, m.WBits
	if o != nil && o.FeatureScale != "" {
		j.scale = o.FeatureScale
	}
	return nil
}

func runInfer(args []string, stdout io.Writer) error {
	fs := newFlags("infer", stdout)
	j := &qjob{}
	bits := fs.Int("bits", 4, "bit width of features, activations and weights (1..32)")
	abits := fs.Int("abits", 0, "bit width of features and activations (default --bits)")
	wbits := fs.Int("wbits", 0, "bit width of weights (default --bits)")
	weights := fs.String("weights", "", "quantized model file (safetensors from a previous run); default: train and cache one")
	device := fs.String("device", "cpu", "cpu, gpu or auto (GPU when one opens, else CPU)")
	j.jobFlags(fs)
	fs.Uint64Var(&j.seed, "seed", 0, "seed for the split, partition and training")
	sparseIn := fs.String("sparse-input", "auto", "first product from the sparse feature codes (exact, same codes): on, off or auto (when cheaper)")
	aggFlag := fs.String("agg", "auto", "aggregations: dense (bit product on the packed 1-bit adjacency), sparse (codes summed over the edge list, same results) or auto (edge list on the CPU where it is cheaper)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	aggMode, err := layers.ParseAggMode(*aggFlag)
	if err != nil {
		return fmt.Errorf("%w: --agg %q (want auto, dense or sparse)", errUsage, *aggFlag)
	}
	if err := j.check(); err != nil {
		return err
	}
	if *sparseIn != "on" && *sparseIn != "off" && *sparseIn != "auto" {
		return fmt.Errorf("%w: --sparse-input %q (want on, off or auto)", errUsage, *sparseIn)
	}
	j.abits, j.wbits = *bits, *bits
	if *abits != 0 {
		j.abits = *abits
	}
	if *wbits != 0 {
		j.wbits = *wbits
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"bits", *bits}, {"abits", j.abits}, {"wbits", j.wbits}} {
		if b.v < 1 || b.v > 32 {
			return fmt.Errorf("%w: --%s %d is outside 1..32", errUsage, b.name, b.v)
		}
	}
	j.prog = progress.New(qStderr, j.quiet)
	start := time.Now()
	var m, fp *layers.Model
	var origin *layers.Origin
	if *weights != "" {
		if m, origin, err = qLoadModel(*weights); err != nil {
			return fmt.Errorf("--weights %s: %w", *weights, err)
		}
		if err := qWeightsFlags(fs, j, *bits, m, origin, *weights); err != nil {
			return err
		}
	}
	kernel, closer, err := qPickKernel(*device)
	if err != nil {
		return err
	}
	if closer != nil {
		defer closer.Close()
	}
	t, err := qLoadTask(j)
	if err != nil {
		return err
	}
	t2 := time.Now()
	var trainTime time.Duration
	var in *layers.Input
	if m != nil {
		if m.Layers[0].Lin1.In != t.ds.Features.Cols || m.Classes != t.ds.NumClasses {
			return fmt.Errorf("--weights %s: model takes %d features and %d classes, %s has %d and %d: %w",
				*weights, m.Layers[0].Lin1.In, m.Classes, t.ds.Name, t.ds.Features.Cols, t.ds.NumClasses, layers.ErrModel)
		}
		if origin != nil && origin.Data != "" && origin.Data != j.data {
			qWarn("--weights %s was trained on %s (data %.16s), applied to %s (data %.16s): other graph, features, labels or split",
				*weights, origin.Dataset, origin.Data, j.dataset, j.data)
		}
		in, err = layers.QuantizeInput(t.ds.Features, m.ABits)
		if err != nil {
			return err
		}
		if in.Params != m.Input {
			return fmt.Errorf("--weights %s: features of %s quantize to %+v, the model expects %+v: %w", *weights, t.ds.Name, in.Params, m.Input, layers.ErrModel)
		}
	} else {
		in, err = layers.QuantizeInput(t.ds.Features, j.abits)
		if err != nil {
			return err
		}
		var d1, d2 time.Duration
		fp, d1, err = qFP32Model(j, t, in)
		if err != nil {
			return err
		}
		m, d2, err = qQuantModel(j, t, fp, nil, in)
		if err != nil {
			return err
		}
		trainTime = d1 + d2
	}
	plan, err := m.Compile(kernel)
	if err != nil {
		return err
	}
	quantPrep := time.Since(t2) - trainTime // quantizing the input, the model and its plan
	plan.Agg = aggMode
	sparse := *sparseIn == "on" || (*sparseIn == "auto" && plan.SparseCheaper(in))
	run, err := plan.Run(t.data, in, sparse, func(done, total int) {
		if total > 1 {
			j.prog.Printf("qgtc: inference batch %d/%d", done, total)
		}
	})
	j.prog.Done()
	if err != nil {
		return err
	}
	total := time.Since(start) - trainTime
	r := inferReport{Dataset: t.ds.Name, Model: j.kind, ABits: j.abits, WBits: j.wbits, FeatureBits: in.Params.Bits,
		Nodes: t.ds.Graph.N(), Edges: t.ds.Graph.NumEdges() / 2, Parts: t.parts, Batches: run.Batches, KeptEdges: t.keptEdges,
		Kernel: kernel.Name(), LoadMS: qms(t.load), PartitionMS: qms(t.part), PartitionCached: t.partCached,
		PrepareMS: qms(t.prep + quantPrep), PackMS: qms(run.Pack), ComputeMS: qms(run.Compute), TrainMS: qms(trainTime),
		InterBytes: run.Stats.InterBytes, UnfusedBytes: run.Stats.UnfusedBytes, WeightBytes: plan.WeightBytes, Weights: *weights,
		SparseInput: sparse, EdgeListBatches: run.EdgeListBatches}
	if j.abits == j.wbits {
		r.Bits = j.abits
	}
	if trainTime > 0 && j.cacheErr == nil {
		r.CachedIn = qCacheDir()
	}
	r.TotalMS = qms(total)
	r.OtherMS = max(0, r.TotalMS-(r.LoadMS+r.PartitionMS+r.PrepareMS+r.PackMS+r.ComputeMS))
	if inf := run.Pack + run.Compute; inf > 0 {
		r.NodesPerSec = float64(run.Nodes) / inf.Seconds()
	}
	if len(t.ds.Test) > 0 {
		a := layers.Accuracy(run.Pred, t.ds.Labels, t.ds.Test)
		r.Accuracy = &a
		if fp != nil {
			fa, err := fp.Accuracy(t.data, in, false, t.ds.Test)
			if err != nil {
				return err
			}
			r.FP32Accuracy = &fa
		}
	}
	r.PeakBytes = qPeakRSS()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printInfer(stdout, &r)
	return nil
}

func printInfer(w io.Writer, r *inferReport) {
	first := "bit product"
	if r.SparseInput {
		first = "sparse codes"
	}
	fmt.Fprintf(w, "qgtc infer: %s on %s, %d-bit activations x %d-bit weights (features %d-bit, first product from %s), kernel %s\n",
		r.Model, r.Dataset, r.ABits, r.WBits, r.FeatureBits, first, r.Kernel)
	agg := "bit products on the packed 1-bit adjacency"
	switch {
	case r.EdgeListBatches == r.Batches:
		agg = "codes summed over the edge list (same integers as the bit product)"
	case r.EdgeListBatches > 0:
		agg = fmt.Sprintf("edge list in %d of %d batches, packed adjacency in the rest", r.EdgeListBatches, r.Batches)
	}
	fmt.Fprintf(w, "  aggregation  %s\n", agg)
	fmt.Fprintf(w, "  graph        %d nodes, %d edges; %d parts in %d batches keep %.1f%% of the edges\n",
		r.Nodes, r.Edges, r.Parts, r.Batches, 100*r.KeptEdges)
	if r.Accuracy != nil {
		fmt.Fprintf(w, "  accuracy     %.2f%% on the test nodes", 100**r.Accuracy)
		if r.FP32Accuracy != nil {
			fmt.Fprintf(w, " (fp32 model on the same batches: %.2f%%)", 100**r.FP32Accuracy)
		}
		fmt.Fprintln(w)
	}
	cached := ""
	if r.PartitionCached {
		cached = ", cached"
	}
	// Each figure is rounded as printed and "other" (e.g. reading a
	// --weights file, collecting predictions) is what is left, so the line
	// adds up.
	rd := func(v float64) float64 { return math.Round(10*v) / 10 }
	sum := rd(r.LoadMS) + rd(r.PartitionMS) + rd(r.PrepareMS) + rd(r.PackMS) + rd(r.ComputeMS)
	total := max(rd(r.TotalMS), sum)
	pack := fmt.Sprintf("pack %.1f ms", rd(r.PackMS))
	if r.SparseInput {
		pack = "pack none (sparse codes)"
	}
	fmt.Fprintf(w, "  latency      load %.1f ms | partition %.1f ms%s | prepare %.1f ms | %s | compute %.1f ms | other %.1f ms | total %.1f ms\n",
		rd(r.LoadMS), rd(r.PartitionMS), cached, rd(r.PrepareMS), pack, rd(r.ComputeMS), total-sum, total)
	if r.TrainMS > 0 {
		where := "not cached"
		if r.CachedIn != "" {
			where = "now cached under " + r.CachedIn
		}
		fmt.Fprintf(w, "  training     %.1f s (fp32 + QAT, %s)\n", r.TrainMS/1000, where)
	}
	fmt.Fprintf(w, "  throughput   %s nodes/s (pack + compute)\n", qGroupDigits(r.NodesPerSec))
	held := "packed bit planes"
	if r.EdgeListBatches > 0 {
		held = "bit planes and byte codes"
	}
	ratio := fmt.Sprintf("%.1fx less", float64(r.UnfusedBytes)/math.Max(1, float64(r.InterBytes)))
	if r.InterBytes > r.UnfusedBytes {
		ratio = fmt.Sprintf("%.1fx more", float64(r.InterBytes)/math.Max(1, float64(r.UnfusedBytes)))
	}
	fmt.Fprintf(w, "  between layers %s (%s) vs %s as int32+float32 (%s); weights %s\n",
		qByteSize(int64(r.InterBytes)), held, qByteSize(int64(r.UnfusedBytes)), ratio, qByteSize(int64(r.WeightBytes)))
	fmt.Fprintf(w, "  peak memory  %s\n", qByteSize(r.PeakBytes))
}

func qGroupDigits(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	out := ""
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out += ","
		}
		out += string(c)
	}
	return out
}

func qByteSize(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
