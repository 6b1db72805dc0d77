package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// ErrData: a dataset a quantized job cannot use (no node features, no
// single-label classes).
var ErrData = errors.New("pipeline: unusable dataset")

// Job is a quantized job: its Config, where it computes and caches, and
// where it reports. Its steps (Load, Partition, TrainFP32, Calibrate,
// Quantized, Compile, Run) can be called one by one; Infer runs them all.
// A Job is used by one goroutine at a time; copy it to vary the Config
// (sweeps do, per seed and width).
type Job struct {
	Config
	// Backend runs the compiled plans: cpu.NewBackend or a GPU's. The
	// caller chooses the device (the pipeline never opens one) and closes
	// it; Compile refuses a nil one.
	Backend bmm.Backend
	// Devices, when set, runs the job on these backends instead of
	// Backend (one per GPU of a host): each runs a contiguous group of the
	// batches, all at once (Group). DeviceNames labels them in the report.
	Devices     []bmm.Backend
	DeviceNames []string
	// CacheDir holds trained models and partitions between runs; "" caches
	// nothing.
	CacheDir string
	// Weights is a trained model to run instead of training one (see
	// ReadWeights and Config.Adopt).
	Weights *Weights
	// Out, when set, is where Infer writes the predictions: the whole
	// graph's (WritePredictions), or a shard file when Config.Shard is set.
	Out string
	// Progress reports long steps; nil is silent.
	Progress *progress.Reporter
	// Warnings receives one line per warning ("qgtc: warning: ...": the
	// dataset's, a corrupt cache entry, weights trained on other data) and
	// per note ("qgtc: note: ...": the cache could not be written); nil
	// discards them.
	Warnings io.Writer

	cacheErr   error // caching a trained model failed
	cacheNoted bool  // the cache's failure was reported
}

func (j *Job) warn(format string, args ...any) {
	if j.Warnings != nil {
		fmt.Fprintf(j.Warnings, "qgtc: warning: "+format+"\n", args...)
	}
}

func (j *Job) note(format string, args ...any) {
	if j.Warnings != nil {
		fmt.Fprintf(j.Warnings, "qgtc: note: "+format+"\n", args...)
	}
}

// ErrNoBackend: Compile was called on a Job without a Backend.
var ErrNoBackend = errors.New("pipeline: the job has no backend (set Job.Backend, e.g. cpu.NewBackend(nil))")

// backendName is the job's backend's name, "" without one.
func (j *Job) backendName() string {
	if j.Backend == nil {
		return ""
	}
	return j.Backend.Name()
}

// Data is a loaded dataset and, after Partition, its batches.
type Data struct {
	Dataset *subgraph.Dataset
	// Component is the loaded graph's node of each of Dataset's when
	// Config.LCC kept only its largest component, nil when it kept all
	// LoadedNodes.
	Component   []int32
	LoadedNodes int
	Fingerprint string // of the graph, features, labels and split (see Fingerprint)

	Batches         *layers.Data // nil until Partition
	Parts           int          // partitions (Config.Parts, or AutoParts when 0)
	PartitionCached bool         // the partition came from the cache or Config.PartitionFile
	// PartitionSum identifies a partition read from Config.PartitionFile
	// (its parts' hash), so models trained on it are cached apart.
	PartitionSum string
	KeptEdges    float64 // fraction of the graph's edges inside the batches

	LoadTime, PartitionTime, BatchTime time.Duration
}

// Load reads the dataset, checks that it has node features and
// single-label classes, keeps its largest component as Config.LCC says,
// splits it at random (20 training and 30 validation nodes per class, with
// the job's seed) when it ships no split, and reports its warnings.
func (j *Job) Load() (*Data, error) {
	t0 := time.Now()
	j.Progress.Printf("qgtc: loading %s", j.Dataset)
	ds, err := subgraph.Load(j.Dataset)
	j.Progress.Done()
	if err != nil {
		return nil, err
	}
	for _, w := range ds.Warnings {
		j.warn("%s", w)
	}
	if ds.Features == nil {
		return nil, fmt.Errorf("%w: dataset %s has no node features; quantized inference needs them", ErrData, ds.Name)
	}
	if ds.Labels == nil {
		return nil, fmt.Errorf("%w: dataset %s has no single-label classes", ErrData, ds.Name)
	}
	all := ds.Graph.N()
	ds, comp := j.Component(ds)
	if len(ds.Train) == 0 {
		ds.RandomSplit(20, 30, j.Seed)
	}
	return &Data{Dataset: ds, Component: comp, LoadedNodes: all, Fingerprint: Fingerprint(ds), LoadTime: time.Since(t0)}, nil
}

// Partition partitions d's graph (cached under CacheDir), or reads
// Config.PartitionFile, and builds its batches of Batch partitions each.
func (j *Job) Partition(d *Data) error {
	ds := d.Dataset
	n := ds.Graph.N()
	d.Parts = j.Parts
	if d.Parts == 0 {
		d.Parts = AutoParts(n)
	}
	if d.Parts > n {
		return &ConfigError{"Parts", d.Parts, fmt.Sprintf("is more than the %d nodes of %s", n, ds.Name)}
	}
	var p []int32
	var err error
	t1 := time.Now()
	switch {
	case j.PartitionFile != "":
		pf, err := subgraph.OpenPartition(j.PartitionFile, ds.Graph)
		if err != nil {
			if d.Component != nil && errors.Is(err, subgraph.ErrCacheMismatch) {
				return fmt.Errorf("dataset %s, its largest component (--lcc): %w", ds.Name, err)
			}
			return fmt.Errorf("dataset %s: %w", ds.Name, err)
		}
		if j.Parts != 0 && j.Parts != pf.K {
			return &ConfigError{"Parts", j.Parts, fmt.Sprintf("disagrees with the %d parts of partition file %s", pf.K, j.PartitionFile)}
		}
		d.Parts, p, d.PartitionCached, d.PartitionSum = pf.K, pf.Parts, true, partsSum(pf.Parts)
	case d.Parts > 1:
		if p, d.PartitionCached, err = j.partition(ds, d.Parts); err != nil {
			return err
		}
	}
	d.PartitionTime = time.Since(t1)
	t2 := time.Now()
	if d.Batches, err = layers.NewDataScaled(ds, p, d.Parts, j.Batch, j.FeatureScale); err != nil {
		return err
	}
	d.BatchTime = time.Since(t2)
	var kept int
	for _, b := range d.Batches.Eval {
		kept += len(b.Indices) - b.N()
	}
	if e := ds.Graph.NumEdges(); e > 0 {
		d.KeptEdges = float64(kept) / float64(e)
	}
	return nil
}

// Input quantizes d's features at bits (the model's activation width).
func (j *Job) Input(d *Data, bits int) (*layers.Input, error) {
	return layers.QuantizeInput(d.Dataset.Features, bits)
}

// TrainFP32 returns the job's full-precision model on d (from the cache, or
// trained now) and how long training took (0 when cached). in is any
// quantization of d's features: the fp32 model reads their float values.
func (j *Job) TrainFP32(d *Data, in *layers.Input) (*layers.Model, time.Duration, error) {
	ds := d.Dataset
	key := j.modelKey(d, false)
	path := j.modelPath(d, "fp32", key)
	fits := func(m *layers.Model) bool {
		return m.Kind == j.Model && m.Classes == ds.NumClasses && m.Layers[0].Lin1.In == ds.Features.Cols
	}
	if m := j.cachedModel(path, key, fits); m != nil {
		return m, 0, nil
	}
	t0 := time.Now()
	m, err := layers.NewModel(j.Model, ds.Features.Cols, j.Hidden, ds.NumClasses, j.Layers, 8, 8, j.Seed)
	if err != nil {
		return nil, 0, err
	}
	if err := m.SetNorm(j.Norm); err != nil {
		return nil, 0, err
	}
	if j.ginMean() {
		m.Aggr = layers.AggrMean
	}
	_, err = m.TrainFP32(d.Batches, in, layers.TrainConfig{Epochs: j.Epochs, LR: float32(j.LR), WeightDecay: float32(j.WeightDecay),
		Dropout: float32(j.Dropout), KeepInput: j.KeepInput, Patience: j.Patience, PreciseBN: true, Seed: j.Seed, Progress: func(ep int, loss, val float64) {
			j.Progress.Printf("qgtc: training fp32 %s on %s: epoch %d/%d loss %.3f val %.1f%%", j.Model, ds.Name, ep, j.Epochs, loss, 100*val)
		}})
	j.Progress.Done()
	if err != nil {
		return nil, 0, err
	}
	j.saveModel(d, path, m, key)
	return m, time.Since(t0), nil
}

// Calibrate returns fp at the job's bit widths, calibrated (post-training
// quantization) on up to 8 batches of d.
func (j *Job) Calibrate(d *Data, fp *layers.Model, in *layers.Input) (*layers.Model, error) {
	m := fp.Clone()
	m.ABits, m.WBits, m.ChannelZ, m.LastBits = j.ABits, j.WBits, j.channelZ(), j.lastBits()
	m.SetSignWeights(j.signWeights())
	j.Progress.Printf("qgtc: calibrating %d/%d-bit %s", j.ABits, j.WBits, j.Model)
	defer j.Progress.Done()
	if err := m.Calibrate(d.Batches, in, calibBatches); err != nil {
		return nil, err
	}
	return m, nil
}

// Quantized returns the job's model at its bit widths (from the cache, or
// made now) and how long making it took (0 when cached): fp calibrated
// (or ptq, when the caller has calibrated it already with Calibrate), then
// fine-tuned for QATEpochs.
func (j *Job) Quantized(d *Data, fp, ptq *layers.Model, in *layers.Input) (*layers.Model, time.Duration, error) {
	key := j.modelKey(d, true)
	stage := fmt.Sprintf("a%dw%d", j.ABits, j.WBits)
	if l := j.lastBits(); l != 0 {
		stage += fmt.Sprintf("l%d", l)
	}
	path := j.modelPath(d, stage, key)
	fits := func(m *layers.Model) bool {
		return m.Calibrated && m.Kind == j.Model && m.ABits == j.ABits && m.WBits == j.WBits && m.Input == in.Params && m.ChannelZ == j.channelZ() &&
			m.SignWeights() == j.signWeights() && m.LastBits == j.lastBits()
	}
	if m := j.cachedModel(path, key, fits); m != nil {
		return m, 0, nil
	}
	t0 := time.Now()
	var m *layers.Model
	if ptq != nil {
		m = ptq.Clone()
	} else {
		var err error
		if m, err = j.Calibrate(d, fp, in); err != nil {
			return nil, 0, err
		}
	}
	if j.QATEpochs > 0 {
		_, err := m.QAT(d.Batches, in, layers.TrainConfig{Epochs: j.QATEpochs, LR: float32(j.QATLR), WeightDecay: float32(j.QATWeightDecay), Patience: j.QATPatience, Seed: j.Seed, LearnScales: j.LSQ, Distill: float32(j.QATDistill),
			Progress: func(ep int, loss, val float64) {
				j.Progress.Printf("qgtc: QAT %d/%d-bit %s: epoch %d/%d loss %.3f val %.1f%%", j.ABits, j.WBits, j.Model, ep, j.QATEpochs, loss, 100*val)
			}})
		j.Progress.Done()
		if err != nil {
			return nil, 0, err
		}
	}
	j.saveModel(d, path, m, key)
	return m, time.Since(t0), nil
}

// Cached says whether every model this job trained went into its cache.
func (j *Job) Cached() bool { return j.CacheDir != "" && j.cacheErr == nil }

// Compile turns m into a plan on the job's backend with its aggregation
// mode; the caller closes the plan.
func (j *Job) Compile(m *layers.Model) (*layers.Plan, error) {
	if j.Backend == nil {
		return nil, ErrNoBackend
	}
	plan, err := m.Compile(j.Backend)
	if err != nil {
		return nil, err
	}
	plan.Agg, plan.Merge, plan.Resident, plan.Replay = j.Agg, j.Merge, j.Resident, !j.NoReplay
	return plan, nil
}

// Sparse says whether plan's first product reads in's sparse codes under
// the job's SparseInput.
func (j *Job) Sparse(plan *layers.Plan, in *layers.Input) bool {
	return j.sparseOr(func() bool { return plan.SparseCheaper(in) })
}

// sparseOr is SparseInput's choice, or cheaper's when it is auto.
func (j *Job) sparseOr(cheaper func() bool) bool {
	switch j.SparseInput {
	case SparseOn:
		return true
	case SparseOff:
		return false
	}
	return cheaper()
}

// Run runs plan over d's batches with input in, reporting batch progress.
func (j *Job) Run(plan *layers.Plan, d *Data, in *layers.Input) (*layers.Result, error) {
	run, err := plan.Run(d.Batches, in, j.Sparse(plan, in), func(done, total int) {
		if total > 1 {
			j.Progress.Printf("qgtc: inference batch %d/%d", done, total)
		}
	})
	j.Progress.Done()
	return run, err
}

// Passes is what the passes after the first measured.
type Passes struct {
	N          int // passes after the first
	ComputeMS  []float64
	MedianMS   float64
	H2DBytes   int64 // each pass's, the same every pass
	D2HBytes   int64
	Ops        int64
	SameAsHead bool // every pass predicted what the first did
	Replayed   bool // the last pass ran from a recording (layers.Plan.Replay)
	// The medians of each pass's parts on a backend that times them
	// (bmm.Profiler): uploads, device work, downloads; and the launches
	// of the last pass.
	UploadMS, DeviceMS, DownloadMS float64
	Launches                       int64
}

// profile is plan's backend's bmm.Profile, zero where it keeps none.
func profile(plan *layers.Plan) bmm.Profile {
	if p, ok := plan.Backend.(bmm.Profiler); ok {
		return p.Profile()
	}
	return bmm.Profile{}
}

// median is the median of v (0 for none).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// More runs n more passes of plan after first, checking that each
// predicts what first did.
func (j *Job) More(plan *layers.Plan, d *Data, in *layers.Input, first *layers.Result, n int) (*Passes, error) {
	ps := &Passes{N: n, SameAsHead: true}
	var up, dev, down []float64
	for i := range n {
		before := profile(plan)
		run, err := plan.Run(d.Batches, in, j.Sparse(plan, in), nil)
		if err != nil {
			return nil, err
		}
		pr := profile(plan).Sub(before)
		j.Progress.Printf("qgtc: pass %d/%d", i+2, n+1)
		ps.ComputeMS = append(ps.ComputeMS, ms(run.Pack+run.Compute))
		up, dev, down = append(up, ms(pr.Upload)), append(dev, ms(pr.Device)), append(down, ms(pr.Download))
		ps.H2DBytes, ps.D2HBytes, ps.Ops = run.Traffic.HostToDevice, run.Traffic.DeviceToHost, run.Traffic.Ops
		ps.Launches, ps.Replayed = pr.Launches, run.Replayed
		ps.SameAsHead = ps.SameAsHead && slices.Equal(run.Pred, first.Pred)
	}
	j.Progress.Done()
	ps.MedianMS = median(ps.ComputeMS)
	ps.UploadMS, ps.DeviceMS, ps.DownloadMS = median(up), median(dev), median(down)
	return ps, nil
}

// peakRSS is the process's peak resident set in bytes (0 if unknown).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024
}

// fp32Bytes is the size of m's weights and biases as float32.
func fp32Bytes(m *layers.Model) int {
	n := 0
	for _, ly := range m.Layers {
		n += 4 * (len(ly.Lin1.W) + len(ly.Lin1.B))
		if ly.Lin2 != nil {
			n += 4 * (len(ly.Lin2.W) + len(ly.Lin2.B))
		}
	}
	return n
}

// fileOrigin reads the model file at path (a qgtc model or a PyG state
// dict, layers.ReadModelOrPyG) and what it records about its training.
func fileOrigin(path string) (*layers.Model, *layers.Origin, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return layers.ReadModelOrPyG(f)
}

// loadedNode is the loaded graph's number of d's node v.
func (d *Data) loadedNode(v int32) int32 {
	if d.Component == nil {
		return v
	}
	return d.Component[v]
}

// loadedPred is pred (a class per node of d) over the loaded graph's
// nodes: −1 for those outside the kept component.
func (d *Data) loadedPred(pred []int32) []int32 {
	if d.Component == nil {
		return pred
	}
	out := make([]int32, d.LoadedNodes)
	for i := range out {
		out[i] = -1
	}
	for v, p := range pred {
		out[d.Component[v]] = p
	}
	return out
}

// componentOf is the loaded graph's node count when d is its largest
// component, 0 when d is all of it.
func (d *Data) componentOf() int {
	if d.Component == nil {
		return 0
	}
	return d.LoadedNodes
}
