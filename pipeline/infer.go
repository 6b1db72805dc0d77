package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/qgtc/qgtc/layers"
)

// Weights is a trained quantized model read from a file.
type Weights struct {
	Path   string
	Model  *layers.Model
	Origin *layers.Origin // what it was trained on; nil in files written before origins
	// ReadTime is how long reading the file took (part of Report.TotalMS).
	ReadTime time.Duration
}

// ReadWeights reads the model file at path (safetensors as the cache or
// qgtc infer write it; a file that fails its checksum is an error), or a
// state dict of float weights (PyG's BasicGNN names, as PyG or qgtc train
// save them), which Infer calibrates at the job's widths and fine-tunes
// for QATEpochs.
func ReadWeights(path string) (*Weights, error) {
	t0 := time.Now()
	m, o, err := fileOrigin(path)
	if err != nil {
		return nil, err
	}
	return &Weights{Path: path, Model: m, Origin: o, ReadTime: time.Since(t0)}, nil
}

// Adopt takes the settings a trained model fixes from w: Model, Norm, GINAggr, Hidden,
// ABits, WBits (not from float weights, which are quantized at c's) and,
// when the file records it, FeatureScale.
func (c *Config) Adopt(w *Weights) {
	m := w.Model
	c.Model, c.Norm, c.GINAggr = m.Kind, m.Norm(), m.AggrOf()
	if m.Kind == layers.GIN || len(m.Layers) > 1 { // a one-layer GCN or SAGE has no hidden width
		c.Hidden = m.Layers[0].Lin1.Out
	}
	if m.Calibrated {
		c.ABits, c.WBits, c.LastBits = m.ABits, m.WBits, m.LastBits
		if m.LastBits == 0 {
			c.LastBits = -1 // as the model: not widened
		}
	}
	if w.Origin != nil && w.Origin.FeatureScale != "" {
		c.FeatureScale = w.Origin.FeatureScale
	}
}

// Report is what one quantized inference job measured; its JSON is the
// object `qgtc infer --json` prints. Times are in milliseconds.
type Report struct {
	Dataset         string   `json:"dataset"`
	Model           string   `json:"model"`
	GINAggr         string   `json:"gin_aggr,omitempty"` // a GIN's aggregation, sum or mean
	Bits            int      `json:"bits"`               // ABits when it equals WBits, else 0
	ABits           int      `json:"abits"`
	WBits           int      `json:"wbits"`
	LastBits        int      `json:"last_bits,omitempty"` // the last layer's, where wider (--last-bits)
	FeatureBits     int      `json:"feature_bits"`
	Accuracy        *float64 `json:"accuracy"`                // on the test nodes; nil without any
	FP32Accuracy    *float64 `json:"fp32_accuracy,omitempty"` // the fp32 model's, when trained or cached now
	Nodes           int      `json:"nodes"`
	ComponentOf     int      `json:"component_of,omitempty"` // the loaded graph's nodes, when Nodes is its largest component (Config.LCC)
	Edges           int      `json:"edges"`                  // undirected
	Parts           int      `json:"parts"`
	Batches         int      `json:"batches"`
	KeptEdges       float64  `json:"kept_edges"`
	Kernel          string   `json:"kernel"`
	LoadMS          float64  `json:"load_ms"`
	PartitionMS     float64  `json:"partition_ms"`
	PartitionCached bool     `json:"partition_cached"`
	PrepareMS       float64  `json:"prepare_ms"` // batches, quantized input, model and plan, SetupMS
	// SetupMS is the part of PrepareMS that readies the plan for the
	// batches (layers.Plan.Prepare: the merged batch, feature lists and
	// graph checks the first pass would otherwise make and keep).
	SetupMS         float64 `json:"setup_ms"`
	PackMS          float64 `json:"pack_ms"`
	ComputeMS       float64 `json:"compute_ms"`
	OtherMS         float64 `json:"other_ms"` // total less the parts above
	TotalMS         float64 `json:"total_ms"` // without training
	TrainMS         float64 `json:"train_ms"` // 0 when the models came from the cache or Weights
	NodesPerSec     float64 `json:"nodes_per_sec"`
	PeakBytes       int64   `json:"peak_bytes"` // the process's peak resident set
	InterBytes      int     `json:"inter_layer_bytes"`
	UnfusedBytes    int     `json:"unfused_inter_layer_bytes"`
	WeightBytes     int     `json:"weight_bytes"`
	Weights         string  `json:"weights,omitempty"`
	CachedIn        string  `json:"cached_in,omitempty"` // where the model trained now was cached
	SparseInput     bool    `json:"sparse_input"`
	EdgeListBatches int     `json:"edge_list_batches"` // batches aggregated over the edge list
	// What the pass moved between host and backend (0 on the CPU, whose
	// operands are host memory) and the ops it ran; the weights went up
	// once, when the plan was compiled.
	H2DBytes          int64 `json:"h2d_bytes"`
	D2HBytes          int64 `json:"d2h_bytes"`
	Ops               int64 `json:"ops"`
	WeightUploadBytes int64 `json:"weight_upload_bytes"`
	// PredictionsSHA256 hashes the predicted class of every node (int32,
	// little-endian, node order; -1 where no batch holds the node): two
	// runs, on any backends, agree bit for bit exactly when it does.
	PredictionsSHA256 string `json:"predictions_sha256"`
	// Merged: the batches ran as one block-diagonal batch; Resident: the
	// inputs stayed on the backend between passes.
	Merged   bool `json:"merged"`
	Resident bool `json:"resident"`
	// Passes after the first (Config.Passes − 1): each one's pack +
	// compute, their median, and one's traffic (the first pass's is above).
	MorePasses   int       `json:"more_passes,omitempty"`
	PassMS       []float64 `json:"pass_ms,omitempty"`
	PassMedianMS float64   `json:"pass_median_ms,omitempty"`
	PassH2DBytes int64     `json:"pass_h2d_bytes,omitempty"`
	PassD2HBytes int64     `json:"pass_d2h_bytes,omitempty"`
	PassOps      int64     `json:"pass_ops,omitempty"`
	// Where a pass's time goes on a backend that times it (a GPU): the
	// uploads' wall time, the device's time from its first kernel to the
	// download (waits for the host's launches included), the download's;
	// and the host's launches (kernels, or one replayed recording). The
	// first pass's, then the medians of the later ones.
	UploadMS       float64 `json:"upload_ms,omitempty"`
	DeviceMS       float64 `json:"device_ms,omitempty"`
	DownloadMS     float64 `json:"download_ms,omitempty"`
	Launches       int64   `json:"launches,omitempty"`
	PassUploadMS   float64 `json:"pass_upload_ms,omitempty"`
	PassDeviceMS   float64 `json:"pass_device_ms,omitempty"`
	PassDownloadMS float64 `json:"pass_download_ms,omitempty"`
	PassLaunches   int64   `json:"pass_launches,omitempty"`
	// Replayed: the later passes ran from a recording (one launch each).
	Replayed bool `json:"replayed,omitempty"`
	// Device memory the backend's device held at the end and at most.
	DeviceBytes     int64 `json:"device_bytes,omitempty"`
	DevicePeakBytes int64 `json:"device_peak_bytes,omitempty"`
	// A sharded run (Config.Shard): which shard, and its batches of the
	// plan ("first-last", or "none").
	// Devices is each device's share of a run on several (Job.Devices).
	Devices      []DeviceReport `json:"devices,omitempty"`
	Shard        string         `json:"shard,omitempty"`
	ShardBatches string         `json:"shard_batches,omitempty"`
	// Where the predictions went (Job.Out) and, for a shard file, the
	// model's fingerprint it records.
	Out              string `json:"out,omitempty"`
	ModelFingerprint string `json:"model_fingerprint,omitempty"`
}

// predictionsHash is Report.PredictionsSHA256 of pred.
func predictionsHash(pred []int32) string {
	h := sha256.New()
	b := make([]byte, 4*len(pred))
	for i, p := range pred {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(p))
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Infer runs the whole job: load, partition, batch, then the model of
// Weights (whose settings it adopts) or one trained now (fp32, calibrated,
// QAT; cached), compile, run over every batch, and report.
func (j *Job) Infer() (*Report, error) {
	start := time.Now()
	if j.Weights != nil {
		j.Adopt(j.Weights)
	}
	if err := j.Check(); err != nil {
		return nil, err
	}
	if len(j.backends()) == 0 { // before training a model it could not run
		return nil, ErrNoBackend
	}
	d, err := j.Load()
	if err != nil {
		return nil, err
	}
	if err := j.Partition(d); err != nil {
		return nil, err
	}
	ds := d.Dataset
	t2 := time.Now()
	var trainTime time.Duration
	var in *layers.Input
	var m, fp *layers.Model
	if w := j.Weights; w != nil {
		if m, in, err = j.weightsInput(d, w); err != nil {
			return nil, err
		}
		if !m.Calibrated { // float weights: calibrated (and QAT) now, uncached: no cache key names the file
			uncached := *j
			uncached.CacheDir = ""
			fp = m
			if m, trainTime, err = uncached.Quantized(d, fp, nil, in); err != nil {
				return nil, err
			}
		}
	} else {
		if in, err = j.Input(d, j.ABits); err != nil {
			return nil, err
		}
		var d1, d2 time.Duration
		if fp, d1, err = j.TrainFP32(d, in); err != nil {
			return nil, err
		}
		if m, d2, err = j.Quantized(d, fp, nil, in); err != nil {
			return nil, err
		}
		trainTime = d1 + d2
	}
	g, err := j.CompileGroup(m) // one plan per device
	if err != nil {
		return nil, err
	}
	defer g.Close()
	plan := g.Plans[0]
	quantPrep := time.Since(t2) - trainTime // quantizing the input, the model and its plan
	sd, first, last := j.shardData(d)       // d itself unless Config.Shard is set
	var setup time.Duration
	if len(g.Plans) == 1 {
		t := time.Now()
		if err := plan.Prepare(sd.Batches, in, j.Sparse(plan, in)); err != nil {
			return nil, err
		}
		setup = time.Since(t)
	}
	before := profile(plan)
	run, each, err := j.RunGroup(g, sd, in)
	if err != nil {
		return nil, err
	}
	prof := profile(plan).Sub(before) // the first device's
	var devs []DeviceReport
	if len(g.Plans) > 1 {
		devs = g.DeviceReports(each, first)
	}
	total := time.Since(start) - trainTime
	var more *Passes
	if j.Passes > 1 {
		if more, err = j.MoreGroup(g, sd, in, run, j.Passes-1, devs); err != nil {
			return nil, err
		}
		if !more.SameAsHead {
			return nil, fmt.Errorf("pipeline: a later pass predicted otherwise than the first on %s (%s): the backend is not deterministic", ds.Name, j.backendName())
		}
	}
	r := &Report{Dataset: ds.Name, Model: m.Kind, GINAggr: m.AggrOf(), ABits: m.ABits, WBits: m.WBits, LastBits: m.LastBits, FeatureBits: in.Params.Bits,
		Nodes: ds.Graph.N(), ComponentOf: d.componentOf(), Edges: ds.Graph.NumEdges() / 2, Parts: d.Parts, Batches: run.Batches, KeptEdges: d.KeptEdges,
		Kernel: plan.Backend.Name(), LoadMS: ms(d.LoadTime), PartitionMS: ms(d.PartitionTime), PartitionCached: d.PartitionCached,
		PrepareMS: ms(d.BatchTime + quantPrep + setup), SetupMS: ms(setup), PackMS: ms(run.Pack), ComputeMS: ms(run.Compute), TrainMS: ms(trainTime),
		InterBytes: run.Stats.InterBytes, UnfusedBytes: run.Stats.UnfusedBytes, WeightBytes: plan.WeightBytes,
		SparseInput: j.Sparse(plan, in), EdgeListBatches: run.EdgeListBatches,
		H2DBytes: run.Traffic.HostToDevice, D2HBytes: run.Traffic.DeviceToHost, Ops: run.Traffic.Ops,
		WeightUploadBytes: g.upload(), PredictionsSHA256: predictionsHash(run.Pred),
		Merged: run.Merged, Resident: plan.Resident, Devices: devs,
		UploadMS: ms(prof.Upload), DeviceMS: ms(prof.Device), DownloadMS: ms(prof.Download), Launches: prof.Launches}
	if more != nil {
		r.MorePasses, r.PassMS, r.PassMedianMS = more.N, more.ComputeMS, more.MedianMS
		r.PassH2DBytes, r.PassD2HBytes, r.PassOps = more.H2DBytes, more.D2HBytes, more.Ops
		r.Replayed, r.PassLaunches = more.Replayed, more.Launches
		r.PassUploadMS, r.PassDeviceMS, r.PassDownloadMS = more.UploadMS, more.DeviceMS, more.DownloadMS
	}
	if pr := profile(plan); pr.PeakDeviceBytes > 0 {
		r.DeviceBytes, r.DevicePeakBytes = pr.DeviceBytes, pr.PeakDeviceBytes
	}
	if m.ABits == m.WBits {
		r.Bits = m.ABits
	}
	if j.Weights != nil {
		r.Weights = j.Weights.Path
		total += j.Weights.ReadTime
	}
	if trainTime > 0 && j.Cached() && j.Weights == nil {
		r.CachedIn = j.CacheDir
	}
	r.TotalMS = ms(total)
	r.OtherMS = max(0, r.TotalMS-(r.LoadMS+r.PartitionMS+r.PrepareMS+r.PackMS+r.ComputeMS))
	if inf := run.Pack + run.Compute; inf > 0 {
		r.NodesPerSec = float64(run.Nodes) / inf.Seconds()
	}
	test := ds.Test
	if j.Shard.Count > 0 {
		test = coveredTest(sd) // a shard answers for its own nodes only
		r.Shard, r.ShardBatches = j.Shard.String(), batchSpan(first, last)
	}
	if len(test) > 0 {
		a := layers.Accuracy(run.Pred, ds.Labels, test)
		r.Accuracy = &a
		if fp != nil {
			fa, err := fp.Accuracy(sd.Batches, in, false, test)
			if err != nil {
				return nil, err
			}
			r.FP32Accuracy = &fa
		}
	}
	if j.Out != "" {
		if r.ModelFingerprint, err = j.writeOut(d, sd, m, run.Pred, first, last); err != nil {
			return nil, fmt.Errorf("writing %s: %w", j.Out, err)
		}
		r.Out = j.Out
	}
	r.PeakBytes = peakRSS()
	return r, nil
}

// weightsInput checks that w's model fits d (features, classes and the
// quantization of d's features), warns when w was trained on other data,
// and returns the model with d's features quantized for it.
func (j *Job) weightsInput(d *Data, w *Weights) (*layers.Model, *layers.Input, error) {
	m, ds := w.Model, d.Dataset
	if m.Layers[0].Lin1.In != ds.Features.Cols || m.Classes != ds.NumClasses {
		return nil, nil, fmt.Errorf("weights %s: model takes %d features and %d classes, %s has %d and %d: %w",
			w.Path, m.Layers[0].Lin1.In, m.Classes, ds.Name, ds.Features.Cols, ds.NumClasses, layers.ErrModel)
	}
	if o := w.Origin; o != nil && o.Data != "" && o.Data != d.Fingerprint {
		j.warn("weights %s were trained on %s (data %.16s), applied to %s (data %.16s): other graph, features, labels or split",
			w.Path, o.Dataset, o.Data, j.Dataset, d.Fingerprint)
	}
	bits := m.ABits
	if !m.Calibrated {
		bits = j.ABits
	}
	in, err := j.Input(d, bits)
	if err != nil {
		return nil, nil, err
	}
	if m.Calibrated && in.Params != m.Input {
		return nil, nil, fmt.Errorf("weights %s: features of %s quantize to %+v, the model expects %+v: %w", w.Path, ds.Name, in.Params, m.Input, layers.ErrModel)
	}
	return m, in, nil
}
