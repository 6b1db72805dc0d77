package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/qgtc/qgtc/bmm"
	_ "github.com/qgtc/qgtc/cpu" // registers the CPU bit kernels with bmm
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
	scale        string // feature scale: layers.QScaleMean or QScaleRows
	norm         string // GIN's MLP normalization: layers.QNormNone or QNormBatch
	lsq          bool   // QAT learns the activation step sizes
}

// qtask is a loaded dataset with its batches.
type qtask struct {
	ds         *subgraph.Dataset
	data       *layers.QData
	load, part time.Duration
	prep       time.Duration
	partCached bool
	parts      int
	keptEdges  float64 // fraction of edges inside the batches
}

// qTTY says whether stderr is a terminal: progress lines redraw in place
// there and are left out of logs.
var qTTY = func() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}()

func qProgress(quiet bool, format string, args ...any) {
	if !quiet && qTTY {
		fmt.Fprintf(os.Stderr, "\r\033[K"+format, args...)
	}
}

func qProgressDone(quiet bool) {
	if !quiet && qTTY {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

// qCacheDir is $QGTC_CACHE, else <user cache dir>/qgtc.
func qCacheDir() string {
	if d := os.Getenv("QGTC_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "qgtc")
	}
	return filepath.Join(os.TempDir(), "qgtc-cache")
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
	ds, err := subgraph.Load(j.dataset)
	if err != nil {
		return nil, err
	}
	if ds.Features == nil {
		return nil, fmt.Errorf("%w: dataset %s has no node features; quantized inference needs them", errUsage, ds.Name)
	}
	if len(ds.Train) == 0 && ds.Labels != nil {
		ds.RandomSplit(20, 30, j.seed)
	}
	t.ds = ds
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
		p, t.partCached, err = qCachedPartition(ds, j.parts, j.seed)
		if err != nil {
			return nil, err
		}
	}
	t.part = time.Since(t1)
	t2 := time.Now()
	if ds.Labels == nil {
		return nil, fmt.Errorf("%w: dataset %s has no single-label classes", errUsage, ds.Name)
	}
	t.data, err = layers.NewQDataScaled(ds, p, j.parts, j.batch, j.scale)
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

// qCachedPartition returns the partition of ds into k parts, from the cache
// when an earlier run computed it.
func qCachedPartition(ds *subgraph.Dataset, k int, seed uint64) ([]int32, bool, error) {
	g := ds.Graph
	name := fmt.Sprintf("%s-n%d-e%d-k%d-s%d.parts", filepath.Base(ds.Name), g.N(), g.NumEdges(), k, seed)
	path := filepath.Join(qCacheDir(), "partitions", name)
	if b, err := os.ReadFile(path); err == nil && len(b) == 4*g.N() {
		p := make([]int32, g.N())
		ok := true
		for i := range p {
			p[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
			ok = ok && p[i] >= 0 && int(p[i]) < k
		}
		if ok {
			return p, true, nil
		}
	}
	part, err := subgraph.Partition(g, k, subgraph.PartitionOptions{Seed: seed}) // METIS-style multilevel k-way
	if err != nil {
		return nil, false, err
	}
	p := part.Parts
	b := make([]byte, 4*len(p))
	for i, v := range p {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = os.WriteFile(path, b, 0o644) // a cache: failing to write it only costs time
	}
	return p, false, nil
}

func (j *qjob) modelPath(bits string) string {
	name := fmt.Sprintf("%s-%s-n%s-h%d-l%d-p%dx%d-s%d-f%s-%s.safetensors", filepath.Base(j.dataset), j.kind, j.norm, j.hidden, j.layers, j.parts, j.batch, j.seed, j.scale, bits)
	return filepath.Join(qCacheDir(), "models", name)
}

func qLoadModel(path string) (*layers.QModel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return layers.ReadQModel(f)
}

func qSaveModel(path string, m *layers.QModel) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := m.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// fp32Model returns the trained full-precision model of j (from the cache
// or trained now) and how long training took (0 when cached).
func qFP32Model(j *qjob, t *qtask, in *layers.QInput) (*layers.QModel, time.Duration, error) {
	path := j.modelPath("fp32")
	if m, err := qLoadModel(path); err == nil && m.Kind == j.kind && m.Classes == t.ds.NumClasses && m.Layers[0].Lin1.In == t.ds.Features.Cols {
		return m, 0, nil
	}
	t0 := time.Now()
	m, err := layers.NewQModel(j.kind, t.ds.Features.Cols, j.hidden, t.ds.NumClasses, j.layers, 8, 8, j.seed)
	if err != nil {
		return nil, 0, err
	}
	if err := m.SetNorm(j.norm); err != nil {
		return nil, 0, fmt.Errorf("%w: --norm: %v", errUsage, err)
	}
	_, err = m.TrainFP32(t.data, in, layers.QTrainConfig{Epochs: j.epochs, LR: 0.01, WeightDecay: 5e-4, Dropout: 0.5,
		Patience: 50, Seed: j.seed, Progress: func(ep int, loss, val float64) {
			qProgress(j.quiet, "qgtc: training fp32 %s on %s: epoch %d/%d loss %.3f val %.1f%%", j.kind, t.ds.Name, ep, j.epochs, loss, 100*val)
		}})
	qProgressDone(j.quiet)
	if err != nil {
		return nil, 0, err
	}
	if err := qSaveModel(path, m); err != nil {
		fmt.Fprintf(os.Stderr, "qgtc: note: could not cache the model: %v\n", err)
	}
	return m, time.Since(t0), nil
}

// qCalibrate returns fp at j's bit widths, calibrated (post-training
// quantization) on up to 8 batches.
func qCalibrate(j *qjob, t *qtask, fp *layers.QModel, in *layers.QInput) (*layers.QModel, error) {
	m := fp.Clone()
	m.ABits, m.WBits = j.abits, j.wbits
	qProgress(j.quiet, "qgtc: calibrating %d/%d-bit %s", j.abits, j.wbits, j.kind)
	if err := m.Calibrate(t.data, in, 8); err != nil {
		return nil, err
	}
	return m, nil
}

// quantModel returns the model of j at its bit widths: calibrated from the
// fp32 model (or ptq, when the caller has already calibrated it with
// qCalibrate), then fine-tuned with QAT (cached).
func qQuantModel(j *qjob, t *qtask, fp, ptq *layers.QModel, in *layers.QInput) (*layers.QModel, time.Duration, error) {
	bits := fmt.Sprintf("a%dw%d", j.abits, j.wbits)
	if j.lsq {
		bits += "-lsq"
	}
	path := j.modelPath(bits)
	if m, err := qLoadModel(path); err == nil && m.Calibrated && m.ABits == j.abits && m.WBits == j.wbits && m.Input == in.Params {
		return m, 0, nil
	}
	t0 := time.Now()
	var m *layers.QModel
	if ptq != nil {
		m = ptq.Clone()
	} else {
		var err error
		if m, err = qCalibrate(j, t, fp, in); err != nil {
			return nil, 0, err
		}
	}
	if j.qatEpochs > 0 {
		_, err := m.QAT(t.data, in, layers.QTrainConfig{Epochs: j.qatEpochs, LR: 0.003, WeightDecay: 5e-4, Patience: 15, Seed: j.seed, LearnScales: j.lsq,
			Progress: func(ep int, loss, val float64) {
				qProgress(j.quiet, "qgtc: QAT %d/%d-bit %s: epoch %d/%d loss %.3f val %.1f%%", j.abits, j.wbits, j.kind, ep, j.qatEpochs, loss, 100*val)
			}})
		if err != nil {
			return nil, 0, err
		}
	}
	qProgressDone(j.quiet)
	if err := qSaveModel(path, m); err != nil {
		fmt.Fprintf(os.Stderr, "qgtc: note: could not cache the model: %v\n", err)
	}
	return m, time.Since(t0), nil
}

// qPickKernel returns the bit kernel for --device and a closer; when auto
// falls back to the CPU it says why on stderr.
func qPickKernel(device string) (bmm.Kernel, io.Closer, error) {
	note := func(msg string) { fmt.Fprintln(os.Stderr, "qgtc: note:", msg) }
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
	TotalMS         float64  `json:"total_ms"`
	TrainMS         float64  `json:"train_ms"`
	NodesPerSec     float64  `json:"nodes_per_sec"`
	PeakBytes       int64    `json:"peak_bytes"`
	InterBytes      int      `json:"inter_layer_bytes"`
	UnfusedBytes    int      `json:"unfused_inter_layer_bytes"`
	WeightBytes     int      `json:"weight_bytes"`
	Weights         string   `json:"weights,omitempty"`
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
	fs.StringVar(&j.norm, "norm", layers.QNormNone, "gin: normalization inside each MLP, none or batch (when training)")
	fs.StringVar(&j.scale, "feature-scale", layers.QScaleSqrt, "input scaling, folded into the first epilogue: sqrt (1/sqrt(mean row sum)), mean (1/mean row sum), rows (each row to sum 1) or none")
	fs.BoolVar(&j.quiet, "quiet", false, "no progress on stderr")
}

// check refuses the job flags infer and sweep share: a missing --dataset,
// an unknown --model or --norm, sizes that are not positive and negative
// epochs.
func (j *qjob) check() error {
	if j.dataset == "" {
		return fmt.Errorf("%w: --dataset is required", errUsage)
	}
	if j.kind != layers.QGCN && j.kind != layers.QGIN {
		return fmt.Errorf("%w: --model %q (want gcn or gin)", errUsage, j.kind)
	}
	switch {
	case j.norm != layers.QNormNone && j.norm != layers.QNormBatch:
		return fmt.Errorf("%w: --norm %q (want none or batch)", errUsage, j.norm)
	case j.norm == layers.QNormBatch && j.kind != layers.QGIN:
		return fmt.Errorf("%w: --norm %s: only gin has a normalization", errUsage, j.norm)
	}
	if j.batch < 1 || j.hidden < 1 || j.layers < 1 || j.epochs < 0 || j.qatEpochs < 0 {
		return fmt.Errorf("%w: --batch, --hidden and --layers must be positive, --epochs and --qat-epochs not negative", errUsage)
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
	aggMode, err := layers.ParseQAggMode(*aggFlag)
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
	kernel, closer, err := qPickKernel(*device)
	if err != nil {
		return err
	}
	if closer != nil {
		defer closer.Close()
	}
	start := time.Now()
	t, err := qLoadTask(j)
	if err != nil {
		return err
	}
	t2 := time.Now()
	var m, fp *layers.QModel
	var trainTime time.Duration
	var in *layers.QInput
	if *weights != "" {
		m, err = qLoadModel(*weights)
		if err != nil {
			return fmt.Errorf("--weights %s: %w", *weights, err)
		}
		if m.Layers[0].Lin1.In != t.ds.Features.Cols || m.Classes != t.ds.NumClasses {
			return fmt.Errorf("--weights %s: model takes %d features and %d classes, %s has %d and %d: %w",
				*weights, m.Layers[0].Lin1.In, m.Classes, t.ds.Name, t.ds.Features.Cols, t.ds.NumClasses, layers.ErrQModel)
		}
		in, err = layers.QuantizeInput(t.ds.Features, m.ABits)
		if err != nil {
			return err
		}
		if in.Params != m.Input {
			return fmt.Errorf("--weights %s: features of %s quantize to %+v, the model expects %+v: %w", *weights, t.ds.Name, in.Params, m.Input, layers.ErrQModel)
		}
		j.abits, j.wbits = m.ABits, m.WBits
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
	quantPrep := time.Since(t2) - trainTime
	plan, err := m.Compile(kernel)
	if err != nil {
		return err
	}
	plan.Agg = aggMode
	sparse := *sparseIn == "on" || (*sparseIn == "auto" && plan.SparseCheaper(in))
	run, err := plan.Run(t.data, in, sparse, func(done, total int) {
		if total > 1 {
			qProgress(j.quiet, "qgtc: inference batch %d/%d", done, total)
		}
	})
	qProgressDone(j.quiet)
	if err != nil {
		return err
	}
	r := inferReport{Dataset: t.ds.Name, Model: j.kind, Bits: *bits, ABits: j.abits, WBits: j.wbits, FeatureBits: in.Params.Bits,
		Nodes: t.ds.Graph.N(), Edges: t.ds.Graph.NumEdges() / 2, Parts: t.parts, Batches: run.Batches, KeptEdges: t.keptEdges,
		Kernel: kernel.Name(), LoadMS: qms(t.load), PartitionMS: qms(t.part), PartitionCached: t.partCached,
		PrepareMS: qms(t.prep + quantPrep), PackMS: qms(run.Pack), ComputeMS: qms(run.Compute), TrainMS: qms(trainTime),
		InterBytes: run.Stats.InterBytes, UnfusedBytes: run.Stats.UnfusedBytes, WeightBytes: plan.WeightBytes, Weights: *weights,
		SparseInput: sparse, EdgeListBatches: run.EdgeListBatches}
	if j.abits != j.wbits {
		r.Bits = 0
	}
	r.TotalMS = qms(time.Since(start) - trainTime)
	if inf := run.Pack + run.Compute; inf > 0 {
		r.NodesPerSec = float64(run.Nodes) / inf.Seconds()
	}
	if len(t.ds.Test) > 0 {
		a := layers.QAccuracy(run.Pred, t.ds.Labels, t.ds.Test)
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
	fmt.Fprintf(w, "  latency      load %.1f ms | partition %.1f ms%s | prepare %.1f ms | pack %.1f ms | compute %.1f ms | total %.1f ms\n",
		r.LoadMS, r.PartitionMS, cached, r.PrepareMS, r.PackMS, r.ComputeMS, r.TotalMS)
	if r.TrainMS > 0 {
		fmt.Fprintf(w, "  training     %.1f s (fp32 + QAT, now cached under %s)\n", r.TrainMS/1000, qCacheDir())
	}
	fmt.Fprintf(w, "  throughput   %s nodes/s (pack + compute)\n", qGroupDigits(r.NodesPerSec))
	held := "packed bit planes"
	if r.EdgeListBatches > 0 {
		held = "bit planes and byte codes"
	}
	fmt.Fprintf(w, "  between layers %s (%s) vs %s as int32+float32 (%.1fx less); weights %s\n",
		qByteSize(int64(r.InterBytes)), held, qByteSize(int64(r.UnfusedBytes)), float64(r.UnfusedBytes)/math.Max(1, float64(r.InterBytes)), qByteSize(int64(r.WeightBytes)))
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
