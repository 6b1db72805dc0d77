package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/spf13/pflag"
)

func init() {
	register(&command{name: "infer", summary: "batched quantized GNN inference (gcn, gin, sage) on bit tensors", run: runInfer})
}

// qPickBackend returns the backend for --device and what releases it;
// when auto falls back to the CPU it says why on stderr.
func qPickBackend(device string) (bmm.Backend, io.Closer, error) {
	note := func(msg string) { qNote("%s", msg) }
	onCPU := func() (bmm.Backend, io.Closer, error) {
		be := cpu.NewBackend(nil)
		return be, be, nil
	}
	switch device {
	case "cpu":
		return onCPU()
	case "gpu", "auto":
		if openGPUBackend == nil {
			if device == "gpu" {
				return nil, nil, errors.New("this build has no GPU support")
			}
			note("no GPU support in this build; running on the CPU")
			return onCPU()
		}
		be, c, err := openGPUBackend(0)
		if err != nil {
			if device == "gpu" {
				return nil, nil, fmt.Errorf("opening the GPU: %w", err)
			}
			note(fmt.Sprintf("no GPU (%v); running on the CPU", err))
			return onCPU()
		}
		return be, c, nil
	}
	return nil, nil, fmt.Errorf("%w: --device %q (want cpu, gpu, gpu:all, gpu:0,1,... or auto)", errUsage, device)
}

// qPickDevices is qPickBackend that also takes a list of GPUs, gpu:all or
// gpu:I,J,...: one backend each, with their names (gpu:I), when more than
// one; the closer releases them all.
func qPickDevices(device string) (bmm.Backend, []bmm.Backend, []string, io.Closer, error) {
	list, ok := strings.CutPrefix(device, "gpu:")
	if !ok {
		be, c, err := qPickBackend(device)
		return be, nil, nil, c, err
	}
	if openGPUBackend == nil || gpuCount == nil {
		return nil, nil, nil, nil, errors.New("this build has no GPU support")
	}
	var ords []int
	if list == "all" {
		n, err := gpuCount()
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("listing the GPUs: %w", err)
		}
		for i := range n {
			ords = append(ords, i)
		}
	} else {
		for _, f := range strings.Split(list, ",") {
			i, err := strconv.Atoi(f)
			if err != nil || i < 0 || slices.Contains(ords, i) {
				return nil, nil, nil, nil, fmt.Errorf("%w: --device %q: want gpu:all or distinct GPU numbers, e.g. gpu:0,1", errUsage, device)
			}
			ords = append(ords, i)
		}
	}
	var bes []bmm.Backend
	var names []string
	var cs closers
	for _, i := range ords {
		be, c, err := openGPUBackend(i)
		if err != nil {
			cs.Close()
			return nil, nil, nil, nil, fmt.Errorf("opening GPU %d: %w", i, err)
		}
		bes, names, cs = append(bes, be), append(names, fmt.Sprintf("gpu:%d", i)), append(cs, c)
	}
	if len(bes) == 1 {
		return bes[0], nil, nil, cs, nil
	}
	return nil, bes, names, cs, nil
}

// qJobFlags registers the settings infer and sweep share into c: the
// dataset and model, batching, the model trained when none is given and
// input scaling; quiet silences progress. Defaults are
// pipeline.DefaultConfig's.
func qJobFlags(fs *pflag.FlagSet, c *pipeline.Config, quiet *bool) {
	def := pipeline.DefaultConfig("")
	const recipe = "; default: the dataset's and model's recipe, the figure shown where none is specific"
	fs.StringVar(&c.Dataset, "dataset", "", "dataset name (cora, citeseer, amazon_photo, coauthor_physics, ...) or path (required)")
	fs.StringVar(&c.Model, "model", def.Model, "model: gcn, gin or sage")
	fs.IntVar(&c.Parts, "parts", def.Parts, "graph partitions (0: one batch up to 5,000 nodes, else parts of ~2,000 nodes; the recipe gives gin on the Amazon and Coauthor graphs and sage on the Amazon graphs 1, Coauthor Physics' gcn 4 and sage 2)")
	fs.IntVar(&c.Batch, "batch", def.Batch, "partitions per batch")
	fs.StringVar(&c.PartitionFile, "partition", "", "batch by this partition file (qgtc partition --out) instead of partitioning; --parts defaults to its K")
	fs.IntVar(&c.Hidden, "hidden", def.Hidden, "hidden width (when training)"+recipe)
	fs.IntVar(&c.Layers, "layers", def.Layers, "graph layers (when training)")
	fs.IntVar(&c.Epochs, "epochs", def.Epochs, "full-precision training epochs (when training)"+recipe)
	fs.IntVar(&c.QATEpochs, "qat-epochs", def.QATEpochs, "quantization-aware fine-tuning epochs per width (0: post-training quantization only)"+recipe)
	fs.BoolVar(&c.LSQ, "lsq", def.LSQ, "QAT learns each activation quantizer's step size (LSQ)")
	fs.StringVar(&c.SignWeights, "sign-weights", pipeline.ChannelAuto, "1-bit weights: on or auto (sign times the channel's mean |w|) or off (the two levels of least squared error)")
	fs.Var(lastBitsFlag{&c.LastBits}, "last-bits", "the last layer's weights and activations: N bits where the model's are narrower, auto (8 for a model of 1 or 2 bits) or off")
	fs.StringVar(&c.ChannelZ, "channel-z", pipeline.ChannelAuto, "per-channel ranges of the update products (exact, folded into the epilogues): on, off or auto (at 4 bits and less)")
	fs.StringVar(&c.Norm, "norm", def.Norm, "gin: normalization inside each MLP, none or batch (when training)"+recipe)
	fs.StringVar(&c.GINAggr, "gin-aggr", def.GINAggr, "gin: the aggregation, sum (GIN-0: the node plus its neighbours) or mean (of the node and its neighbours) (when training)"+recipe)
	fs.Float64Var(&c.LR, "lr", def.LR, "full-precision learning rate (Adam)"+recipe)
	fs.Float64Var(&c.WeightDecay, "weight-decay", def.WeightDecay, "full-precision weight decay"+recipe)
	fs.Float64Var(&c.Dropout, "dropout", def.Dropout, "full-precision dropout"+recipe)
	fs.BoolVar(&c.KeepInput, "keep-input", def.KeepInput, "full-precision dropout between layers only, not on the input features (as PyG's GCN, GIN and GraphSAGE models)")
	fs.IntVar(&c.Patience, "patience", def.Patience, "stop full-precision training after this many epochs without a better validation accuracy (0: never)"+recipe)
	fs.Float64Var(&c.QATLR, "qat-lr", def.QATLR, "QAT learning rate"+recipe)
	fs.Float64Var(&c.QATWeightDecay, "qat-weight-decay", def.QATWeightDecay, "QAT weight decay"+recipe)
	fs.IntVar(&c.QATPatience, "qat-patience", def.QATPatience, "stop QAT after this many epochs without a better validation accuracy (0: never)"+recipe)
	fs.Float64Var(&c.QATDistill, "qat-distill", def.QATDistill, "QAT loss: this weight times the KL divergence from the fp32 model's predictions on every node, added to the labelled nodes' cross-entropy (0: labels only)"+recipe)
	fs.StringVar(&c.LCC, "lcc", pipeline.LCCAuto, "keep only the graph's largest connected component, Shchur et al.'s standardization: true, false or auto (on for data that ships no split, as train)")
	fs.Lookup("lcc").NoOptDefVal = pipeline.LCCOn
	fs.StringVar(&c.FeatureScale, "feature-scale", def.FeatureScale, "input scaling, folded into the first epilogue: sqrt (1/sqrt(mean row sum)), mean (1/mean row sum), rows (each row to sum 1) or none"+recipe)
	fs.BoolVar(quiet, "quiet", false, "no progress on stderr")
}

// qRecipe fills c's training settings from the recipe of its dataset and
// model, except those given as flags.
func qRecipe(fs *pflag.FlagSet, c *pipeline.Config) {
	c.UseRecipe(pipeline.RecipeFor(c.Dataset, c.Model), func(field string) bool { return fs.Changed(qConfigFlags[field]) })
}

// qParseAgg is --agg's value, or a usage error.
func qParseAgg(s string) (layers.AggMode, error) {
	m, err := layers.ParseAggMode(s)
	if err != nil {
		return m, fmt.Errorf("%w: --agg %q (want auto, dense or sparse)", errUsage, s)
	}
	return m, nil
}

// qConfigFlags names the flag of each pipeline.Config field.
var qConfigFlags = map[string]string{"Dataset": "dataset", "Model": "model", "ABits": "abits", "WBits": "wbits", "Parts": "parts", "PartitionFile": "partition",
	"Batch": "batch", "FeatureScale": "feature-scale", "LCC": "lcc", "Hidden": "hidden", "Layers": "layers", "Norm": "norm", "GINAggr": "gin-aggr", "Epochs": "epochs",
	"QATEpochs": "qat-epochs", "LR": "lr", "WeightDecay": "weight-decay", "Dropout": "dropout", "KeepInput": "keep-input", "Patience": "patience",
	"QATLR": "qat-lr", "QATWeightDecay": "qat-weight-decay", "QATPatience": "qat-patience", "QATDistill": "qat-distill", "Agg": "agg", "SparseInput": "sparse-input", "Merge": "merge", "Passes": "passes", "Shard": "shard", "ChannelZ": "channel-z", "SignWeights": "sign-weights", "LastBits": "last-bits"}

// qUsage turns the pipeline's complaints about its settings or its data
// into usage errors naming the flag; other errors pass unchanged.
func qUsage(err error) error {
	var ce *pipeline.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Field == "Dataset":
		return fmt.Errorf("%w: --dataset is required", errUsage)
	case errors.As(err, &ce):
		return fmt.Errorf("%w: --%s %s", errUsage, qConfigFlags[ce.Field], ce.Detail())
	case errors.Is(err, pipeline.ErrData):
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), pipeline.ErrData.Error()+": "))
	}
	return err
}

// qWeightsFlags takes c's model settings from the model file w: a flag
// given explicitly that disagrees with the file, or one that only applies
// when training, is a usage error naming both values.
func qWeightsFlags(fs *pflag.FlagSet, c *pipeline.Config, bits int, w *pipeline.Weights) error {
	m, o, file := w.Model, w.Origin, w.Path
	conflict := func(flag string, v any, has string) error { return qConflict(file, flag, v, has) }
	if !m.Calibrated {
		return qFloatWeights(fs, c, w)
	}
	widths := fmt.Sprintf("a model of %d-bit activations and %d-bit weights", m.ABits, m.WBits)
	switch {
	case fs.Changed("abits") && c.ABits != m.ABits:
		return conflict("abits", c.ABits, widths)
	case fs.Changed("wbits") && c.WBits != m.WBits:
		return conflict("wbits", c.WBits, widths)
	case fs.Changed("bits") && ((!fs.Changed("abits") && bits != m.ABits) || (!fs.Changed("wbits") && bits != m.WBits)):
		return conflict("bits", bits, widths)
	}
	if err := qShapeConflict(fs, c, w); err != nil {
		return err
	}
	if fs.Changed("feature-scale") && o != nil && c.FeatureScale != o.FeatureScale {
		return conflict("feature-scale", c.FeatureScale, "a model trained with feature scale "+o.FeatureScale)
	}
	for _, f := range []string{"epochs", "qat-epochs", "lsq", "channel-z", "sign-weights", "last-bits", "lr", "weight-decay", "dropout", "patience", "qat-lr", "qat-weight-decay", "qat-patience", "qat-distill"} {
		if fs.Changed(f) {
			return fmt.Errorf("%w: --%s only applies when training, and --weights %s is a trained model", errUsage, f, file)
		}
	}
	c.Adopt(w)
	return nil
}

// qConflict is the usage error of flag's value v disagreeing with the
// model file, which has what has says.
func qConflict(file, flag string, v any, has string) error {
	return fmt.Errorf("%w: --%s %v conflicts with --weights %s, %s (leave --%s out or make them agree)", errUsage, flag, v, file, has, flag)
}

// qShapeConflict is the first of --model, --norm, --gin-aggr, --layers and --hidden
// given explicitly that disagrees with the model file w, quantized or
// float (nil: none).
func qShapeConflict(fs *pflag.FlagSet, c *pipeline.Config, w *pipeline.Weights) error {
	m := w.Model
	switch {
	case fs.Changed("model") && c.Model != m.Kind:
		return qConflict(w.Path, "model", c.Model, "a "+m.Kind+" model")
	case fs.Changed("norm") && c.Norm != m.Norm():
		return qConflict(w.Path, "norm", c.Norm, "a model with norm "+m.Norm())
	case fs.Changed("gin-aggr") && c.GINAggr != m.AggrOf():
		return qConflict(w.Path, "gin-aggr", c.GINAggr, "a "+m.Kind+" model whose aggregation is "+cmp.Or(m.AggrOf(), "fixed"))
	case fs.Changed("layers") && c.Layers != len(m.Layers):
		return qConflict(w.Path, "layers", c.Layers, fmt.Sprintf("a model of %d layers", len(m.Layers)))
	case fs.Changed("hidden") && (m.Kind == layers.GIN || len(m.Layers) > 1) && c.Hidden != m.Layers[0].Lin1.Out:
		return qConflict(w.Path, "hidden", c.Hidden, fmt.Sprintf("a model of hidden width %d", m.Layers[0].Lin1.Out))
	}
	return nil
}

// qFloatWeights is qWeightsFlags for a file of float weights (a PyG state
// dict, or qgtc train --out): quantized at --bits and, unless --qat-epochs
// says otherwise, fine-tuned for the recipe's QAT epochs when a width is 4
// bits or less (post-training quantization alone misses the accuracy
// targets there, and QAT keeps the calibrated model unless it validates
// better; 8 bits and up need no QAT: bench/interop/RESULTS.md); features
// scaled as PyG's NormalizeFeatures unless --feature-scale says otherwise
// (the file cannot tell).
func qFloatWeights(fs *pflag.FlagSet, c *pipeline.Config, w *pipeline.Weights) error {
	m, file := w.Model, w.Path
	if err := qShapeConflict(fs, c, w); err != nil {
		return err
	}
	switch {
	case fs.Changed("epochs"):
		return fmt.Errorf("%w: --epochs trains fp32 weights, and --weights %s holds them (--qat-epochs fine-tunes them quantized)", errUsage, file)
	}
	if !fs.Changed("qat-epochs") && min(c.ABits, c.WBits) > 4 {
		c.QATEpochs = 0
	}
	if !fs.Changed("feature-scale") {
		c.FeatureScale = layers.ScaleRows
	}
	how := "post-training quantization"
	if c.QATEpochs > 0 {
		how += fmt.Sprintf(" and %d QAT epochs", c.QATEpochs)
	}
	qNote("--weights %s holds float weights (%s, %d layers): %s at %d/%d bits, features scaled by --feature-scale %s", file, m.Kind, len(m.Layers), how, c.ABits, c.WBits, c.FeatureScale)
	c.Adopt(w)
	return nil
}

func runInfer(args []string, stdout io.Writer) error {
	fs := newFlags("infer", stdout)
	var c pipeline.Config
	var quiet bool
	bits := fs.Int("bits", 4, "bit width of features, activations and weights (1..32)")
	abits := fs.Int("abits", 0, "bit width of features and activations (default --bits)")
	wbits := fs.Int("wbits", 0, "bit width of weights (default --bits)")
	weights := fs.String("weights", "", "model file: a quantized model (safetensors from a previous run) or float weights to quantize at --bits (a PyG GCN/GIN/GraphSAGE state dict, qgtc train --out); default: train and cache one")
	device := fs.String("device", "cpu", "cpu, gpu, auto (GPU when one opens, else CPU), or several GPUs of this host sharing the batches: gpu:all or gpu:0,1,...")
	qJobFlags(fs, &c, &quiet)
	fs.Uint64Var(&c.Seed, "seed", 0, "seed for the split, partition and training")
	fs.StringVar(&c.SparseInput, "sparse-input", pipeline.SparseAuto, "first product from the sparse feature codes (exact, same codes): on, off or auto (when cheaper)")
	aggFlag := fs.String("agg", "auto", "aggregations: dense (bit product on the packed 1-bit adjacency), sparse (codes summed over the edge list, same results) or auto (the backend's cost model picks, batch by batch)")
	mergeFlag := fs.String("merge", "auto", "batches whose aggregations all take the edge list run as one block-diagonal batch (same results): on, off or auto (the backend's cost model)")
	fs.IntVar(&c.Passes, "passes", 1, "inference passes over the graph; the report adds the median of the passes after the first")
	fs.BoolVar(&c.Resident, "resident", false, "keep the batches' inputs on the backend between passes (a serving process; else each pass uploads them)")
	replay := fs.Bool("replay", true, "with --resident on a GPU: record the second pass as a CUDA graph and replay it (false: launch op by op)")
	profileKernels := fs.Bool("profile-kernels", false, "time each kernel the GPU launches op by op (use with --replay=false: a replayed pass is one launch) and report each kernel's median over the passes (JSON: kernels); the timing adds host time to every launch, so take pass times from a run without it")
	asJSON := fs.Bool("json", false, "print one JSON object")
	out := fs.String("out", "", "write the predictions to this file: a .npy of int32 per node, or with --shard a shard file for qgtc merge")
	shard := fs.String("shard", "", "run shard i/n of the batches (0 <= i < n; a job array's index) and write it to --out")
	fold := qFoldFlag(fs)
	packed := fs.String("packed", "", "run --weights over this packed batch file (qgtc partition --pack-out) batch by batch, without the dataset")
	gpuLanes := fs.Int("gpu-lanes", 1, "with --packed on GPUs: backends (each its own stream and thread) per GPU, so one's uploads overlap another's kernels")
	hostWorkers := fs.Int("host-workers", 0, "with --packed, streamed (GPUs): host goroutines reading and preparing batches (0: one core for each device's goroutine, the rest up to 16 a device)")
	otherData := fs.Bool("other-data", false, "with --packed: allow a model trained on other data than the file's (same features, quantizer and feature scale), e.g. a small synthetic graph's model over a large one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *packed != "" {
		return inferPacked(fs, *packed, *weights, *device, c.Passes, *gpuLanes, *hostWorkers, *otherData, *asJSON, quiet, stdout)
	}
	if *otherData || fs.Changed("gpu-lanes") || fs.Changed("host-workers") {
		return fmt.Errorf("%w: --other-data, --gpu-lanes and --host-workers apply with --packed only", errUsage)
	}
	var err error
	if *shard != "" {
		if c.Shard, err = pipeline.ParseShard(*shard); err != nil {
			return fmt.Errorf("%w: --shard %q is not i/n with 0 <= i < n", errUsage, *shard)
		}
		if *out == "" {
			return fmt.Errorf("%w: --shard %s needs --out (the shard file qgtc merge reads)", errUsage, *shard)
		}
	}
	if c.Agg, err = qParseAgg(*aggFlag); err != nil {
		return err
	}
	if c.Merge, err = layers.ParseMergeMode(*mergeFlag); err != nil {
		return fmt.Errorf("%w: --merge %q (want auto, on or off)", errUsage, *mergeFlag)
	}
	if c.Passes < 1 {
		return fmt.Errorf("%w: --passes %d must be at least 1", errUsage, c.Passes)
	}
	c.NoReplay = !*replay
	if *bits < 1 || *bits > 32 {
		return fmt.Errorf("%w: --bits %d is outside 1..32", errUsage, *bits)
	}
	c.ABits, c.WBits = *bits, *bits
	if *abits != 0 {
		c.ABits = *abits
	}
	if *wbits != 0 {
		c.WBits = *wbits
	}
	if pipeline.GraphDataset(c.Dataset) {
		qGraphDefaults(fs, &c)
		return qGraphRun("infer", fs, c, [][2]int{{c.ABits, c.WBits}}, *fold, *device, quiet, *asJSON, "", stdout)
	}
	qRecipe(fs, &c)
	var w *pipeline.Weights
	if *weights != "" {
		// The file fixes the model's kind and shape: the settings are
		// checked once it has (a GIN's --gin-aggr needs no --model gin).
		if w, err = pipeline.ReadWeights(*weights); err != nil {
			return fmt.Errorf("--weights %s: %w", *weights, err)
		}
		if err := qWeightsFlags(fs, &c, *bits, w); err != nil {
			return err
		}
	}
	if err := c.Check(); err != nil {
		return qUsage(err)
	}
	j := &pipeline.Job{Config: c, Weights: w, CacheDir: qCacheDir(), Out: *out, Progress: progress.New(qStderr, quiet), Warnings: qStderr}
	be, devs, names, closer, err := qPickDevices(*device)
	if err != nil {
		return err
	}
	defer closer.Close()
	j.Backend, j.Devices, j.DeviceNames = be, devs, names
	var kp bmm.KernelProfiler
	if *profileKernels {
		var ok bool
		if kp, ok = be.(bmm.KernelProfiler); !ok {
			return fmt.Errorf("%w: --profile-kernels needs one GPU (--device gpu): it times the GPU's kernels", errUsage)
		}
		kp.ProfileKernels(true)
	}
	r, err := j.Infer()
	if err != nil {
		return qUsage(err)
	}
	var kernels []bmm.KernelGroup
	if kp != nil {
		kernels = repeatedKernels(bmm.GroupKernels(kp.KernelSegments()))
	}
	if *asJSON {
		return printJSON(stdout, struct {
			*pipeline.Report
			Kernels []bmm.KernelGroup `json:"kernels,omitempty"`
		}{r, kernels})
	}
	printInfer(stdout, r)
	printKernels(stdout, kernels)
	return nil
}

// repeatedKernels keeps the groups of kernels launched in more than one
// segment (the passes after the first, each batch of them), or all when
// none repeats (one pass).
func repeatedKernels(g []bmm.KernelGroup) []bmm.KernelGroup {
	n := 0
	for n < len(g) && g[n].Segments > 1 {
		n++
	}
	if n == 0 {
		return g
	}
	return g[:n]
}

// printKernels prints each group's kernels with their medians.
func printKernels(w io.Writer, groups []bmm.KernelGroup) {
	for _, g := range groups {
		fmt.Fprintf(w, "  kernels      %d launches, %.3f ms in all (medians over %d segments)\n", len(g.Kernels), g.MS, g.Segments)
		for _, k := range g.Kernels {
			fmt.Fprintf(w, "    %8.3f ms  %-9s %s (%d×%d)\n", k.MS, k.Op, k.Kernel, k.Grid, k.Block)
		}
	}
}

// qModelName is the model's kind, with a GIN's aggregation.
func qModelName(kind, ginAggr string) string {
	if ginAggr == "" {
		return kind
	}
	return kind + " (" + ginAggr + ")"
}

func printInfer(w io.Writer, r *pipeline.Report) {
	first := "bit product"
	if r.SparseInput {
		first = "sparse codes"
	}
	fmt.Fprintf(w, "qgtc infer: %s on %s, %d-bit activations x %d-bit weights (features %d-bit, first product from %s), kernel %s\n",
		qModelName(r.Model, r.GINAggr), r.Dataset, r.ABits, r.WBits, r.FeatureBits, first, r.Kernel)
	agg := "bit products on the packed 1-bit adjacency"
	switch {
	case r.EdgeListBatches == r.Batches:
		agg = "codes summed over the edge list (same integers as the bit product)"
	case r.EdgeListBatches > 0:
		agg = fmt.Sprintf("edge list in %d of %d batches, packed adjacency in the rest", r.EdgeListBatches, r.Batches)
	}
	if r.Merged {
		agg += ", the batches merged into one"
	}
	fmt.Fprintf(w, "  aggregation  %s\n", agg)
	fmt.Fprintf(w, "  graph        %s, %d edges; %d parts in %d batches keep %.1f%% of the edges\n",
		qNodes(r.Nodes, r.ComponentOf), r.Edges, r.Parts, r.Batches, 100*r.KeptEdges)
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
		pack += " (feature lists)" // gathered once per batch for the sparse first product
	}
	setup := ""
	if r.SetupMS > 0 { // the batches' graph checks and feature lists, made before the first pass
		setup = fmt.Sprintf(" (%.1f ms setup)", rd(r.SetupMS))
	}
	fmt.Fprintf(w, "  latency      load %.1f ms | partition %.1f ms%s | prepare %.1f ms%s | %s | compute %.1f ms | other %.1f ms | total %.1f ms\n",
		rd(r.LoadMS), rd(r.PartitionMS), cached, rd(r.PrepareMS), setup, pack, rd(r.ComputeMS), total-sum, total)
	if r.TrainMS > 0 {
		where := "not cached"
		if r.CachedIn != "" {
			where = "now cached under " + r.CachedIn
		}
		what := "fp32 + QAT"
		if r.Weights != "" {
			what = "calibrating and fine-tuning the float weights"
		}
		fmt.Fprintf(w, "  training     %.1f s (%s, %s)\n", r.TrainMS/1000, what, where)
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
	fmt.Fprintf(w, "  transfers    %s to the backend, %s back, %d ops in the pass; weights %s uploaded once\n",
		qByteSize(r.H2DBytes), qByteSize(r.D2HBytes), r.Ops, qByteSize(r.WeightUploadBytes))
	if r.MorePasses > 0 {
		inputs := "uploaded each pass"
		if r.Resident {
			inputs = "resident"
		}
		if r.Replayed {
			inputs += ", replayed as one launch"
		}
		fmt.Fprintf(w, "  passes       %d more (inputs %s): median %.3f ms (pack + compute), each moving %s up, %s back in %d ops\n",
			r.MorePasses, inputs, r.PassMedianMS, qByteSize(r.PassH2DBytes), qByteSize(r.PassD2HBytes), r.PassOps)
		if r.PassLaunches > 0 {
			fmt.Fprintf(w, "  a pass       upload %.3f ms, device %.3f ms, download %.3f ms, host the rest; %d launches\n",
				r.PassUploadMS, r.PassDeviceMS, r.PassDownloadMS, r.PassLaunches)
		}
	}
	if r.DevicePeakBytes > 0 {
		fmt.Fprintf(w, "  device memory %s held, %s at most\n", qByteSize(r.DeviceBytes), qByteSize(r.DevicePeakBytes))
	}
	fmt.Fprintf(w, "  between layers %s (%s) vs %s as int32+float32 (%s); weights %s\n",
		qByteSize(int64(r.InterBytes)), held, qByteSize(int64(r.UnfusedBytes)), ratio, qByteSize(int64(r.WeightBytes)))
	fmt.Fprintf(w, "  peak memory  %s\n", qByteSize(r.PeakBytes))
	for _, d := range r.Devices {
		fmt.Fprintf(w, "  device       %s: batches %s (%d, %d nodes), pack %.1f ms, compute %.1f ms", d.Device, d.BatchSpan, d.Batches, d.Nodes, d.PackMS, d.ComputeMS)
		if d.PassMedian > 0 {
			fmt.Fprintf(w, ", passes' median %.3f ms", d.PassMedian)
		}
		fmt.Fprintln(w)
	}
	switch {
	case r.Shard != "":
		fmt.Fprintf(w, "  shard        %s: batches %s of the plan, written to %s\n", r.Shard, r.ShardBatches, r.Out)
	case r.Out != "":
		fmt.Fprintf(w, "  predictions  written to %s\n", r.Out)
	}
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

// lastBitsFlag is --last-bits: auto (0), off (−1) or a width 1..32.
type lastBitsFlag struct{ v *int }

func (f lastBitsFlag) String() string {
	switch {
	case f.v == nil || *f.v == 0:
		return "auto"
	case *f.v < 0:
		return "off"
	}
	return strconv.Itoa(*f.v)
}

func (f lastBitsFlag) Set(s string) error {
	switch s {
	case "auto":
		*f.v = 0
	case "off":
		*f.v = -1
	default:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 32 {
			return fmt.Errorf("want auto, off or a width 1..32")
		}
		*f.v = n
	}
	return nil
}

func (f lastBitsFlag) Type() string { return "auto|off|N" }

// qNodes says how many nodes a job ran on, and of how many when --lcc kept
// the graph's largest component only.
func qNodes(n, of int) string {
	if of == 0 {
		return fmt.Sprintf("%d nodes", n)
	}
	return fmt.Sprintf("%d nodes (the largest component of %d; --lcc=false keeps them all)", n, of)
}
