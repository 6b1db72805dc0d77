package pipeline

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/par"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// Packed batch files (subgraph.PackedFile): WritePacked writes the batches
// a job's Infer runs, with their feature codes, node ids and scales;
// InferPacked runs a model over such a file batch by batch, holding one
// batch (and the predictions) beyond the model, with the predictions Infer
// gives over the same partition.

// fingerprint16 is a hex fingerprint (128 bits) as the file stores it.
func fingerprint16(s string) [16]byte {
	var f [16]byte
	b, err := hex.DecodeString(s)
	if err == nil {
		copy(f[:], b)
	}
	return f
}

// WritePacked writes d's inference batches (after Partition) with in's
// codes (the model's input quantization) to path, atomically, and returns
// the number of batches.
func (j *Job) WritePacked(path string, d *Data, in *layers.Input) (int, error) {
	q := d.Batches
	return j.writePacked(path, d.Dataset, func() string { return d.Fingerprint }, q.Parts, q.K, q.PerBatch, q.NodeScale, in)
}

// writePacked writes the batches Infer runs over ds with parts into k
// (nil: one part), perBatch parts a batch: the batcher's plan as layers
// makes its Eval batches, each built when written, so that only the graph,
// the codes and one batch are held. nodeScale is each node's feature scale.
// fingerprint gives the data fingerprint, asked for once the last batch is
// built (it may be computed meanwhile: the header is written last).
func (j *Job) writePacked(path string, ds *subgraph.Dataset, fingerprint func() string, parts []int32, k, perBatch int, nodeScale []float32, in *layers.Input) (int, error) {
	g := ds.Graph
	p := &subgraph.Partitioning{K: k, Parts: parts}
	if parts == nil || k <= 1 {
		p = &subgraph.Partitioning{K: 1, Parts: make([]int32, g.N())}
	}
	// layers.evalBatches' plan with the diagonal left to the self-loop flag
	// (the packed format's CSR holds none): the same groups and rows.
	plan, err := subgraph.Batches(g, p, subgraph.BatchOptions{PartsPerBatch: min(max(1, perBatch), p.K),
		Rows: subgraph.BandRows, SelfLoops: true, LazyAdj: true})
	if err != nil {
		return 0, err
	}
	info := subgraph.PackFileInfo{Nodes: g.N(), FeatureCodes: len(in.Codes), AllOnes: in.AllOnes(),
		Scales: nodeScale != nil, Batches: plan.Len(), FeatCols: in.Cols,
		QBits: in.Params.Bits, QScale: in.Params.Scale, QLower: in.Params.Lower,
		ScaleMode: j.FeatureScale}
	// PlanFingerprint's hash, over the batches as they are written.
	fp := newPlanHash(g.N(), plan.Len())
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	// Batches are built and packed plan.Concurrency() at a time (the one
	// bound on the batcher's scratches), a few ahead of the one being
	// written (tokens bound how many are held), and written in order.
	build := func(i int) (subgraph.PackFileBatch, error) {
		b, err := plan.Batch(i)
		if err != nil {
			return subgraph.PackFileBatch{}, err
		}
		x, err := in.Pack(b.Nodes)
		if err != nil {
			return subgraph.PackFileBatch{}, err
		}
		// The batch's own codes are its rows: pack them as rows 0..n-1.
		nodes := b.Nodes
		b.Nodes = make([]int32, len(nodes))
		for r := range b.Nodes {
			b.Nodes[r] = int32(r)
		}
		buf, err := b.Pack(x)
		if err != nil {
			return subgraph.PackFileBatch{}, fmt.Errorf("batch %d: %w", i, err)
		}
		out := subgraph.PackFileBatch{Packed: buf, Nodes: nodes}
		if nodeScale != nil {
			out.Scale = make([]float32, len(nodes))
			for r, v := range nodes {
				out.Scale[r] = nodeScale[v]
			}
		}
		// Validated, laid out and checksummed here, on the builders' cores.
		if err := out.Seal(&info); err != nil {
			return subgraph.PackFileBatch{}, fmt.Errorf("batch %d: %w", i, err)
		}
		return out, nil
	}
	type built struct {
		b   subgraph.PackFileBatch
		err error
	}
	nb, workers := plan.Len(), plan.Concurrency()
	take, stop := par.Ordered(nb, workers, 2*workers, func(i int) built {
		b, err := build(i)
		return built{b, err}
	})
	defer stop()
	err = subgraph.WritePackedBatches(f, &info, func(i int) (subgraph.PackFileBatch, error) {
		j.Progress.Printf("qgtc: packing batch %d/%d", i+1, nb)
		r := take(i)
		if r.err != nil {
			return subgraph.PackFileBatch{}, r.err
		}
		fp.i32s("batch", r.b.Nodes)
		if i == nb-1 {
			copy(info.Partition[:], fp.sum16())
			info.Data = fingerprint16(fingerprint())
		}
		return r.b, nil
	})
	j.Progress.Done()
	if err != nil {
		return 0, err
	}
	return plan.Len(), f.Commit()
}

// PackedReport is what InferPacked measured. Times are in milliseconds.
type PackedReport struct {
	File        string `json:"file"`
	Model       string `json:"model"`
	GINAggr     string `json:"gin_aggr,omitempty"` // a GIN's aggregation, sum or mean
	ABits       int    `json:"abits"`
	WBits       int    `json:"wbits"`
	Nodes       int    `json:"nodes"` // of the graph
	Batches     int    `json:"batches"`
	BatchNodes  int    `json:"batch_nodes"` // predicted
	Kernel      string `json:"kernel"`
	SparseInput bool   `json:"sparse_input"`
	Agg         string `json:"agg"` // aggregations: auto (per batch), dense or sparse
	// Mode is how the batches ran: "lanes" (one batch per core, each core
	// reading, preparing and computing its own) or "stream" (host workers
	// prepare batches while each device computes the one before) or
	// "resident" (streamed once, then run from the devices' memory).
	Mode    string `json:"mode"`
	Workers int    `json:"workers,omitempty"` // stream: host goroutines preparing batches
	// OpenMS is opening the backends (device init, set by the caller) and
	// CompileMS compiling the model on them (weights uploaded): start-up,
	// outside every pass.
	OpenMS    float64 `json:"open_ms,omitempty"`
	CompileMS float64 `json:"compile_ms"`
	// WarmupMS is one batch run on each device before the passes
	// (streamed runs): the kernels a device compiles on first use and its
	// first allocations, start-up too.
	WarmupMS float64 `json:"warmup_ms,omitempty"`
	// Read (checksums, validation, unpacking), pack and compute are summed
	// over the lanes or host workers (stream: pack is the host's preparing
	// and compute the devices' running), for the first pass; PassMS is the
	// first pass's wall time, NodesPerSec its rate.
	ReadMS      float64 `json:"read_ms"`
	PackMS      float64 `json:"pack_ms"`
	ComputeMS   float64 `json:"compute_ms"`
	PassMS      float64 `json:"pass_ms"`
	TotalMS     float64 `json:"total_ms"`
	NodesPerSec float64 `json:"nodes_per_sec"`
	// Passes after the first (--passes): each one's wall time, their
	// median and its rate, and whether each predicted what the first did.
	Passes          int       `json:"passes"`
	MorePassMS      []float64 `json:"more_pass_ms,omitempty"`
	PassMedianMS    float64   `json:"pass_median_ms,omitempty"`
	SteadyNodesPerS float64   `json:"steady_nodes_per_sec,omitempty"`
	SameAsFirst     bool      `json:"same_as_first"`
	// PeakBytes is the process's peak resident set (host memory), and
	// DevicePeakBytes the most device memory any one device held (backends
	// that count it, bmm.Profiler).
	PeakBytes         int64               `json:"peak_bytes"`
	DevicePeakBytes   int64               `json:"device_peak_bytes,omitempty"`
	Devices           []PackedDeviceShare `json:"devices,omitempty"`
	PredictionsSHA256 string              `json:"predictions_sha256"` // as Report's
	Pred              []int32             `json:"-"`
}

// PackedDeviceShare is one device's part of a streamed first pass.
type PackedDeviceShare struct {
	Device  string  `json:"device"`
	Batches int     `json:"batches"`
	Nodes   int     `json:"nodes"`
	RunMS   float64 `json:"run_ms"`  // running its batches
	WaitMS  float64 `json:"wait_ms"` // waiting for the host to have one ready
	// ResidentMS is each later pass's time on the device (--resident:
	// its kept batches run again, predictions read back and placed).
	ResidentMS       []float64 `json:"resident_ms,omitempty"`
	ResidentMedianMS float64   `json:"resident_median_ms,omitempty"`
	DevicePeakBytes  int64     `json:"device_peak_bytes,omitempty"`
}

// PackedOptions are InferPacked's choices beyond the job's.
type PackedOptions struct {
	// OtherData runs a model trained on other data than the file's (the
	// same features, quantizer and classes): a small graph's model over a
	// large synthetic one. The fingerprints then differ by design.
	OtherData bool
	// Stream forces the streamed run on a backend that could run lanes
	// (the CPU), to test it; several devices or a GPU always stream.
	Stream bool
	// Workers sets a streamed run's host workers (0: automatic).
	Workers int
	// Resident keeps each batch's inputs on the device that ran it in the
	// first pass (a streamed run): the later passes read and upload
	// nothing. The graph must fit the devices' memory.
	Resident bool
}

// streamWorkersPerDevice bounds a streamed run's automatic host workers
// per device.
const streamWorkersPerDevice = 16

// InferPacked runs j.Weights (a calibrated model) over the packed batch
// file at path in batch order on j.Backend, or spread over j.Devices. The
// model must take the file's feature codes (the same quantizer and
// columns) and, where it records them, have been trained on the file's
// data with its feature scale. It runs j.Passes passes (at least one).
func (j *Job) InferPacked(path string) (*PackedReport, error) {
	return j.InferPackedWith(path, PackedOptions{})
}

// InferPackedWith is InferPacked with options.
func (j *Job) InferPackedWith(path string, o PackedOptions) (*PackedReport, error) {
	start := time.Now()
	w := j.Weights
	if w == nil || !w.Model.Calibrated {
		return nil, fmt.Errorf("%w: inference from a packed batch file needs a quantized model (--weights from qgtc infer or train)", ErrData)
	}
	pf, err := subgraph.OpenPackedBatches(path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	m, info := w.Model, pf.Info
	params := layers.Params{Bits: info.QBits, Scale: info.QScale, Lower: info.QLower}
	switch {
	case params != m.Input || info.FeatCols != m.Layers[0].Lin1.In:
		return nil, fmt.Errorf("%s: %w: features of %d columns quantized with %+v, model %s expects %d with %+v",
			path, layers.ErrModel, info.FeatCols, params, w.Path, m.Layers[0].Lin1.In, m.Input)
	case !o.OtherData && w.Origin != nil && w.Origin.Data != "" && fingerprint16(w.Origin.Data) != info.Data:
		return nil, fmt.Errorf("%s: packed from data %x, model %s was trained on data %.32s (%s)", path, info.Data, w.Path, w.Origin.Data, w.Origin.Dataset)
	case w.Origin != nil && w.Origin.FeatureScale != "" && w.Origin.FeatureScale != info.ScaleMode:
		return nil, fmt.Errorf("%s: features scaled by %q, model %s was trained with %q", path, info.ScaleMode, w.Path, w.Origin.FeatureScale)
	case m.NormRows && !info.Scales:
		return nil, fmt.Errorf("%s: the file carries no feature scales and model %s scales its input rows", path, w.Path)
	}
	t0 := time.Now()
	g, err := j.CompileGroup(m)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	compile := time.Since(t0)
	plan := g.Plans[0]
	// A streamed pass makes the code lists from the file's planes every
	// time; a resident one once.
	sparse := j.sparseOr(func() bool {
		return plan.SparseCheaperSize(info.Nodes, info.FeatCols, info.FeatureCodes, info.QBits, !o.Resident)
	})
	r := &PackedReport{File: path, Model: m.Kind, GINAggr: m.AggrOf(), ABits: m.ABits, WBits: m.WBits, Nodes: info.Nodes, Batches: pf.Len(),
		Kernel: plan.Backend.Name(), SparseInput: sparse, Pred: make([]int32, info.Nodes), CompileMS: ms(compile),
		Passes: max(1, j.Passes), SameAsFirst: true, Mode: "lanes", Agg: j.Agg.String()}
	ld := newPackedLoader(pf, path)
	load := ld.load
	_, forks := plan.Backend.(bmm.Forker)
	stream := o.Stream || o.Resident || len(g.Plans) > 1 || !forks
	if stream {
		r.Mode = "stream"
	}
	var shares []*layers.Resident
	if o.Resident {
		for _, p := range g.Plans {
			p.Resident = true
		}
		r.Mode = "resident"
		defer func() {
			for _, s := range shares {
				s.Free()
			}
		}()
	}
	// A streamed batch's file pages are given back by a goroutine of their
	// own: madvise on a shared mapping shoots down every core's TLB, which
	// the device's goroutine (done runs on it) waited for between batches.
	release := pf.Release
	if stream {
		rel, relDone := make(chan int, 64), make(chan struct{})
		go func() {
			for i := range rel {
				pf.Release(i)
			}
			close(relDone)
		}()
		defer func() { close(rel); <-relDone }()
		release = func(i int) { rel <- i }
	}
	var mu sync.Mutex // progress
	finished := 0
	done := func(i int) {
		release(i)
		mu.Lock()
		finished++
		j.Progress.Printf("qgtc: packed batch %d/%d", finished, pf.Len())
		mu.Unlock()
	}
	workers := runtime.GOMAXPROCS(0)
	if stream {
		// A core for each device's goroutine, and at most
		// streamWorkersPerDevice workers a device: the workers read,
		// prepare and stage every batch, so they, not the devices, set the
		// pace (bench/scale/RESULTS.md), while more than a device needs
		// only hold more batches ready.
		workers = max(1, min(workers-len(g.Plans), streamWorkersPerDevice*len(g.Plans)))
		if o.Workers > 0 {
			workers = o.Workers
		}
	}
	if stream && pf.Len() > 0 {
		t0 := time.Now()
		for _, p := range g.Plans {
			pb, err := load(0)
			var pp *layers.PreparedBatch
			if err == nil {
				pp, err = p.PreparePacked(pb, params, info.AllOnes, sparse)
			}
			if err == nil {
				err = p.RunPrepared(pp, r.Pred) // the first pass writes every prediction again
			}
			if err != nil {
				return nil, err
			}
			ld.newPass()
		}
		r.WarmupMS = ms(time.Since(t0))
	}
	var first []int32
	for pass := range r.Passes {
		pred := r.Pred
		if pass > 0 {
			pred = make([]int32, info.Nodes)
		}
		for i := range pred {
			pred[i] = -1
		}
		ld.newPass()
		finished = 0
		t0 := time.Now()
		var read, pack, compute time.Duration
		var st layers.StreamTimes
		switch {
		case shares != nil:
			var took []time.Duration
			took, err = layers.RunResident(shares, pred)
			for d, t := range took {
				r.Devices[d].ResidentMS = append(r.Devices[d].ResidentMS, ms(t))
			}
		case o.Resident:
			shares, st, err = layers.KeepPackedStream(g.Plans, workers, 2*workers+2*len(g.Plans), pf.Len(), load, done, params, info.AllOnes, sparse, pred)
			if err != nil {
				err = fmt.Errorf("%w (without --resident the batches stream through the devices each pass)", err)
			}
			read, pack, compute = st.Sums()
		case stream:
			st, err = layers.RunPackedStream(g.Plans, workers, 2*workers+2*len(g.Plans), pf.Len(), load, done, params, info.AllOnes, sparse, pred)
			read, pack, compute = st.Sums()
		default:
			read, pack, compute, err = plan.RunPackedAll(pf.Len(), load, done, params, info.AllOnes, sparse, pred)
		}
		wall := time.Since(t0)
		j.Progress.Done()
		if err != nil {
			return nil, err
		}
		ld.disjoint = true // the pass loaded every batch
		if pass > 0 {
			r.MorePassMS = append(r.MorePassMS, ms(wall))
			r.SameAsFirst = r.SameAsFirst && slices.Equal(pred, first)
			continue
		}
		first = pred
		r.ReadMS, r.PackMS, r.ComputeMS, r.PassMS = ms(read), ms(pack), ms(compute), ms(wall)
		if stream {
			r.Workers = workers
			for d := range g.Plans {
				r.Devices = append(r.Devices, PackedDeviceShare{Device: g.Names[d], Batches: st.Batches[d], Nodes: st.Nodes[d],
					RunMS: ms(st.Run[d]), WaitMS: ms(st.Wait[d])})
			}
		}
	}
	for _, p := range r.Pred {
		if p >= 0 {
			r.BatchNodes++
		}
	}
	if r.PassMS > 0 {
		r.NodesPerSec = float64(r.BatchNodes) / (r.PassMS / 1e3)
	}
	if len(r.MorePassMS) > 0 {
		r.PassMedianMS = median(r.MorePassMS)
		r.SteadyNodesPerS = float64(r.BatchNodes) / (r.PassMedianMS / 1e3)
	}
	for d := range r.Devices {
		if ts := r.Devices[d].ResidentMS; len(ts) > 0 {
			r.Devices[d].ResidentMedianMS = median(ts)
		}
	}
	for d, p := range g.Plans {
		peak := profile(p).PeakDeviceBytes
		r.DevicePeakBytes = max(r.DevicePeakBytes, peak)
		if d < len(r.Devices) {
			r.Devices[d].DevicePeakBytes = peak
		}
	}
	r.TotalMS = ms(time.Since(start))
	r.PredictionsSHA256 = predictionsHash(r.Pred)
	r.PeakBytes = peakRSS()
	return r, nil
}

// PackPartition writes the packed batch file of ds, loaded already, as
// Infer with this partition (parts into k, perBatch parts a batch) batches
// it: codes quantized at bits, features scaled by j.FeatureScale, the split
// (and so the data fingerprint) as Load makes it with j.Seed.
func (j *Job) PackPartition(path string, ds *subgraph.Dataset, parts []int32, k, perBatch, bits int) (int, error) {
	if ds.Features == nil || ds.Labels == nil {
		return 0, fmt.Errorf("%w: dataset %s needs node features and single-label classes for inference", ErrData, ds.Name)
	}
	if !knownFeatureScale(j.FeatureScale) {
		return 0, &ConfigError{"FeatureScale", j.FeatureScale, "is not mean, sqrt, rows or none"}
	}
	if len(ds.Train) == 0 {
		ds.RandomSplit(20, 30, j.Seed)
	}
	// The fingerprint hashes every byte of the data on one core (tens of
	// seconds at 100M nodes): it runs beside the quantizing and packing,
	// which only read the data too.
	fp := make(chan string, 1)
	go func() { fp <- Fingerprint(ds) }()
	fingerprint := sync.OnceValue(func() string { return <-fp })
	defer fingerprint()
	in, err := layers.QuantizeInput(ds.Features, bits)
	if err != nil {
		return 0, err
	}
	return j.writePacked(path, ds, fingerprint, parts, k, perBatch, layers.FeatureScale(ds.Features, j.FeatureScale), in)
}

// packedLoader reads a packed file's batches for inference: each batch
// checked against the others (no node in two) and decoded for
// layers.PreparePacked, its CSR and node ids read in place (views of the
// map) and its feature planes copied into reused storage.
type packedLoader struct {
	pf   *subgraph.PackedFile
	path string
	seen []uint64 // the nodes of the batches loaded this pass
	// disjoint: a whole pass loaded every batch, none sharing a node, so
	// later passes over the same (checksummed, mapped) file skip the check.
	disjoint bool
	// feats are feature words given back (PackedBatch.Release): as many as
	// batches were in flight at once, which the stream bounds.
	mu    sync.Mutex
	feats [][]uint64
}

func newPackedLoader(pf *subgraph.PackedFile, path string) *packedLoader {
	return &packedLoader{pf: pf, path: path, seen: make([]uint64, (pf.Info.Nodes+63)/64)}
}

// load reads batch i.
func (l *packedLoader) load(i int) (*layers.PackedBatch, error) {
	pf, path, seen := l.pf, l.path, l.seen
	pk, fb, err := pf.Batch(i)
	if err != nil {
		return nil, err
	}
	if !l.disjoint {
		for _, v := range fb.Nodes {
			if atomic.OrUint64(&seen[v/64], 1<<(v%64))&(1<<(v%64)) != 0 {
				return nil, fmt.Errorf("%s: batch %d: %w: node %d is in another batch too", path, i, subgraph.ErrPackFile, v)
			}
		}
	}
	if !pk.SelfLoops {
		return nil, fmt.Errorf("%s: batch %d: %w: no self-loops (the file was not written for inference)", path, i, subgraph.ErrPackFile)
	}
	// The adjacency is made only for a batch that runs dense (MakeAdj).
	pb := &layers.PackedBatch{Nodes: fb.Nodes, FeatScale: fb.Scale,
		MakeAdj: func() (*bittensor.Tensor, error) {
			t, err := pk.Adjacency()
			if err != nil {
				return nil, fmt.Errorf("%s: batch %d: %w", path, i, err)
			}
			return t, nil
		}}
	pb.Indptr, pb.Indices = pk.CSR(nil, nil)
	buf := l.takeFeat()
	pb.Feat, err = pk.FeaturesIn(buf)
	if err == nil && pb.Feat == nil {
		err = fmt.Errorf("%w: no features", subgraph.ErrPackFile)
	}
	if err != nil {
		l.giveFeat(buf)
		return nil, fmt.Errorf("%s: batch %d: %w", path, i, err)
	}
	words := pb.Feat.Words()
	pb.Release = func() { l.giveFeat(words) }
	return pb, nil
}

// newPass forgets the nodes of the last pass's batches, until a whole
// pass has shown them disjoint.
func (l *packedLoader) newPass() {
	if !l.disjoint {
		clear(l.seen)
	}
}

func (l *packedLoader) takeFeat() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k := len(l.feats); k > 0 {
		buf := l.feats[k-1]
		l.feats = l.feats[:k-1]
		return buf
	}
	return nil
}

func (l *packedLoader) giveFeat(buf []uint64) {
	if cap(buf) == 0 {
		return
	}
	l.mu.Lock()
	l.feats = append(l.feats, buf)
	l.mu.Unlock()
}
