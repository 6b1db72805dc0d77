package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/qgtc/qgtc/layers"
)

// SweepRow is one bit width of a sweep, over the seeds.
type SweepRow struct {
	Bits         int       `json:"bits"`                // 0: the fp32 model
	LastBits     int       `json:"last_bits,omitempty"` // the last layer's, where wider
	Accuracy     float64   `json:"accuracy"`
	AccuracyStd  float64   `json:"accuracy_std"`
	Accuracies   []float64 `json:"accuracies"`
	PTQAccuracy  float64   `json:"ptq_accuracy"` // mean over seeds, before QAT
	ComputeMS    float64   `json:"compute_ms"`   // mean over seeds: bit products and epilogues
	PackMS       float64   `json:"pack_ms"`
	NodesPerSec  float64   `json:"nodes_per_sec"` // over pack + compute
	WeightBytes  int       `json:"weight_bytes"`
	InterBytes   int       `json:"inter_layer_bytes"`
	Kernel       string    `json:"kernel"`
	FeatureBits  int       `json:"feature_bits"`
	TrainSeconds float64   `json:"train_seconds"`
}

// SweepReport is a sweep's outcome; its JSON is what `qgtc sweep` writes.
type SweepReport struct {
	Dataset string `json:"dataset"`
	Model   string `json:"model"`
	GINAggr string `json:"gin_aggr,omitempty"` // a GIN's aggregation, sum or mean
	Nodes   int    `json:"nodes"`
	// ComponentOf is the loaded graph's nodes when Nodes is its largest
	// component (Config.LCC).
	ComponentOf int        `json:"component_of,omitempty"`
	Parts       int        `json:"parts"`
	Batches     int        `json:"batches"`
	Seeds       int        `json:"seeds"`
	Rows        []SweepRow `json:"rows"` // the fp32 model first
}

// meanStd is the mean and sample standard deviation of v (NaN when empty).
func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	var s float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	var d float64
	for _, x := range v {
		d += (x - m) * (x - m)
	}
	return m, math.Sqrt(d / float64(len(v)-1))
}

// Sweep measures the job's model at each width of bits (activations =
// weights), for seeds seeds from j.Seed on: per seed it loads and
// partitions the data and trains the fp32 model once, then per width
// calibrates it (the PTQ accuracy), fine-tunes it with QAT (cached as
// Quantized caches) and runs it. j's ABits and WBits are ignored.
func (j *Job) Sweep(bits []int, seeds int) (*SweepReport, error) {
	if len(bits) == 0 || seeds < 1 {
		return nil, fmt.Errorf("pipeline: a sweep of %d widths and %d seeds measures nothing", len(bits), seeds)
	}
	cfg := j.Config
	cfg.ABits, cfg.WBits = bits[0], bits[0]
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if j.Backend == nil {
		return nil, ErrNoBackend
	}
	rep := &SweepReport{Model: j.Model, GINAggr: j.GINAggr, Seeds: seeds}
	rows := make([]SweepRow, len(bits)+1)
	acc := make([][]float64, len(bits)+1)
	ptq := make([][]float64, len(bits)+1)
	for s := 0; s < seeds; s++ {
		sj := *j
		sj.Config = cfg
		sj.Seed = j.Seed + uint64(s)
		d, err := sj.Load()
		if err != nil {
			return nil, err
		}
		if err := sj.Partition(d); err != nil {
			return nil, err
		}
		ds := d.Dataset
		rep.Dataset, rep.Nodes, rep.ComponentOf, rep.Parts, rep.Batches = ds.Name, ds.Graph.N(), d.componentOf(), d.Parts, len(d.Batches.Eval)
		// The fp32 model: trained once per seed, on features quantized at the
		// first width (its float values do not depend on the width).
		in0, err := sj.Input(d, bits[0])
		if err != nil {
			return nil, err
		}
		fp, dt, err := sj.TrainFP32(d, in0)
		if err != nil {
			return nil, err
		}
		fa, err := fp.Accuracy(d.Batches, in0, false, ds.Test)
		if err != nil {
			return nil, err
		}
		acc[0] = append(acc[0], fa)
		rows[0].WeightBytes = fp32Bytes(fp)
		rows[0].TrainSeconds += dt.Seconds()
		for bi, b := range bits {
			sj.ABits, sj.WBits = b, b
			in, err := sj.Input(d, b)
			if err != nil {
				return nil, err
			}
			// PTQ accuracy, then the QAT model fine-tuned from that same
			// calibration.
			t0 := time.Now()
			pm, err := sj.Calibrate(d, fp, in)
			if err != nil {
				return nil, err
			}
			ct := time.Since(t0)
			pa, err := pm.Accuracy(d.Batches, in, true, ds.Test)
			if err != nil {
				return nil, err
			}
			ptq[bi+1] = append(ptq[bi+1], pa)
			m, dt, err := sj.Quantized(d, fp, pm, in)
			if err != nil {
				return nil, err
			}
			if dt > 0 { // trained now: its calibration counts
				dt += ct
			}
			plan, err := sj.Compile(m)
			if err != nil {
				return nil, err
			}
			sj.Progress.Printf("qgtc: sweep seed %d: %d-bit inference", sj.Seed, b)
			run, err := plan.Run(d.Batches, in, sj.Sparse(plan, in), nil)
			plan.Close()
			if err != nil {
				return nil, err
			}
			r := &rows[bi+1]
			r.Bits, r.LastBits, r.Kernel, r.FeatureBits = b, m.LastBits, sj.backendName(), in.Params.Bits
			r.WeightBytes, r.InterBytes = plan.WeightBytes, run.Stats.InterBytes
			r.ComputeMS += ms(run.Compute) / float64(seeds)
			r.PackMS += ms(run.Pack) / float64(seeds)
			r.TrainSeconds += dt.Seconds()
			acc[bi+1] = append(acc[bi+1], layers.Accuracy(run.Pred, ds.Labels, ds.Test))
		}
		sj.Progress.Done()
		j.cacheErr, j.cacheNoted = sj.cacheErr, sj.cacheNoted
	}
	for i := range rows {
		rows[i].Accuracies = acc[i]
		rows[i].Accuracy, rows[i].AccuracyStd = meanStd(acc[i])
		rows[i].PTQAccuracy, _ = meanStd(ptq[i])
		if t := rows[i].ComputeMS + rows[i].PackMS; t > 0 {
			rows[i].NodesPerSec = float64(rep.Nodes) / (t / 1000)
		}
	}
	rows[0].PTQAccuracy = rows[0].Accuracy
	rep.Rows = rows
	return rep, nil
}
