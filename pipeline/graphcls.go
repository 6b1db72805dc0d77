package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// Graph classification (TU datasets such as PROTEINS): per cross-validation
// fold, a GIN graph classifier (layers.GraphModel) trained in full
// precision on the fold's training graphs, then per width calibrated,
// fine-tuned with QAT and run on the backend over the fold's test graphs.

// The graph-classification recipe: Adam with these settings, the rate
// halved after each third of the fp32 epochs and the last third run with
// batch norm frozen (layers.GraphTrainConfig), the graphs shuffled into
// batches of trainGraphs (Xu et al.'s 32) every epoch, test batches of
// evalGraphs block-diagonal graphs.
const (
	graphLR, graphWD, graphDropout = 0.01, 0, 0
	graphQATLR                     = 0.001
	trainGraphs, evalGraphs        = 32, 128
	graphCalibBatches              = 2
)

// DefaultGraphConfig is the job qgtc runs on a graph-classification dataset
// given only its name: a 4-bit GIN with batch norm, three layers of width
// 32, trained 60 fp32 epochs and 10 QAT epochs per fold.
func DefaultGraphConfig(dataset string) Config {
	return Config{Dataset: dataset, Model: layers.GIN, ABits: 4, WBits: 4, Batch: 1, FeatureScale: layers.ScaleNone,
		Hidden: 32, Layers: 3, Norm: layers.NormBatch, Epochs: 60, QATEpochs: 10, SparseInput: SparseAuto,
		LR: graphLR, WeightDecay: graphWD, Dropout: graphDropout, QATLR: graphQATLR}
}

// GraphDataset reports whether nameOrPath names a graph-classification
// dataset: a folder (or the text file in it) of a TU text file next to its
// 10fold_idx folds.
func GraphDataset(nameOrPath string) bool {
	p, err := subgraph.Locate(nameOrPath)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	dir := p
	if !st.IsDir() {
		dir = filepath.Dir(p)
	}
	if st, err := os.Stat(filepath.Join(dir, "10fold_idx")); err != nil || !st.IsDir() {
		return false
	}
	txts, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	return len(txts) == 1
}

// GraphStat is an accuracy over folds: the mean and the standard
// deviation over folds (population, as Xu et al. report), and each fold's.
type GraphStat struct {
	Mean    float64   `json:"mean"`
	Std     float64   `json:"std"`
	PerFold []float64 `json:"per_fold"`
}

func (s *GraphStat) add(v float64) {
	s.PerFold = append(s.PerFold, v)
	var sum, sq float64
	for _, x := range s.PerFold {
		sum += x
	}
	s.Mean = sum / float64(len(s.PerFold))
	for _, x := range s.PerFold {
		sq += (x - s.Mean) * (x - s.Mean)
	}
	s.Std = math.Sqrt(sq / float64(len(s.PerFold)))
}

// GraphWidth is one width's outcome over the folds.
type GraphWidth struct {
	ABits    int       `json:"abits"`
	WBits    int       `json:"wbits"`
	Accuracy GraphStat `json:"accuracy"` // on the backend, over each fold's test graphs
	// QATSeconds is calibration and QAT per fold, on average.
	QATSeconds float64 `json:"qat_seconds_per_fold"`
	InferMS    float64 `json:"infer_ms_per_fold"` // compile and the test graphs on the backend
}

// GraphReport is the outcome of GraphClassify.
type GraphReport struct {
	Dataset    string       `json:"dataset"`
	Model      string       `json:"model"`
	Hidden     int          `json:"hidden"`
	Layers     int          `json:"layers"`
	Norm       string       `json:"norm"`
	Epochs     int          `json:"epochs"`
	QATEpochs  int          `json:"qat_epochs"`
	Backend    string       `json:"backend"`
	Graphs     int          `json:"graphs"`
	Folds      []int        `json:"folds"` // 1-based, as the fold files
	FP32       GraphStat    `json:"fp32_accuracy"`
	Widths     []GraphWidth `json:"widths"`
	TrainSecs  float64      `json:"fp32_train_seconds_per_fold"`
	ReadoutBit int          `json:"readout_bits"`
	// Curve is each fold's fp32 test accuracy after every epoch (running
	// batch-norm statistics, as at the end), for Xu et al.'s protocol;
	// CurveSecs is the time its evaluations took per fold, not in
	// TrainSecs.
	Curve     [][]float64 `json:"fp32_test_curve"`
	CurveSecs float64     `json:"curve_seconds_per_fold"`
	// XuEpoch and XuBest are Xu et al.'s protocol (optimistic: the epoch
	// is chosen on the test folds): the epoch (1-based) whose accuracy
	// averaged over the folds is best, and that epoch's accuracy.
	XuEpoch int       `json:"xu_epoch"`
	XuBest  GraphStat `json:"xu_best_epoch_accuracy"`
}

// XuProtocol returns the epoch (1-based) whose accuracy averaged over the
// curves (one per fold, equally long) is the best, the first of ties, and
// that epoch's accuracies; 0 and an empty stat without curves.
func XuProtocol(curves [][]float64) (int, GraphStat) {
	var best GraphStat
	epoch := 0
	if len(curves) == 0 {
		return 0, best
	}
	for e := range curves[0] {
		var s GraphStat
		for _, c := range curves {
			if e >= len(c) {
				return epoch, best
			}
			s.add(c[e])
		}
		if epoch == 0 || s.Mean > best.Mean {
			epoch, best = e+1, s
		}
	}
	return epoch, best
}

// GraphClassify runs the job's GIN graph classification on the folds
// (1-based; nil: every fold the dataset ships) at each width of widths
// (pairs of activation and weight bits; nil: the job's ABits and WBits):
// per fold one fp32 model, then per width its calibrated, QAT-tuned copy
// run on the backend. Accuracies are over each fold's test graphs.
func (j *Job) GraphClassify(folds []int, widths [][2]int) (*GraphReport, error) {
	if err := j.Check(); err != nil {
		return nil, err
	}
	if j.Model != layers.GIN {
		return nil, &ConfigError{"Model", j.Model, "(graph classification runs gin)"}
	}
	if j.Backend == nil {
		return nil, ErrNoBackend
	}
	if widths == nil {
		widths = [][2]int{{j.ABits, j.WBits}}
	}
	j.Progress.Printf("qgtc: loading %s", j.Dataset)
	set, err := subgraph.LoadGraphSet(j.Dataset)
	j.Progress.Done()
	if err != nil {
		return nil, err
	}
	if len(set.Folds) == 0 {
		return nil, fmt.Errorf("%w: dataset %s ships no cross-validation folds (10fold_idx)", ErrData, set.Name)
	}
	if folds == nil {
		for k := range set.Folds {
			folds = append(folds, k+1)
		}
	}
	for _, k := range folds {
		if k < 1 || k > len(set.Folds) {
			return nil, fmt.Errorf("%w: fold %d outside 1..%d", ErrData, k, len(set.Folds))
		}
	}
	r := &GraphReport{Dataset: set.Name, Model: layers.GIN, Hidden: j.Hidden, Layers: j.Layers, Norm: j.Norm,
		Epochs: j.Epochs, QATEpochs: j.QATEpochs, Backend: j.Backend.Name(), Graphs: set.NumGraphs(), Folds: folds,
		ReadoutBit: layers.ReadoutBits}
	for _, w := range widths {
		r.Widths = append(r.Widths, GraphWidth{ABits: w[0], WBits: w[1]})
	}
	inputs := map[int]*layers.Input{}
	for _, k := range folds {
		fold := set.Folds[k-1]
		in32, err := graphInput(inputs, set, 32)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		fp, err := layers.NewGraphModel(set.NumTags, j.Hidden, set.NumClasses, j.Layers, 32, 32, j.Norm, j.Seed+uint64(k))
		if err != nil {
			return nil, err
		}
		var nodes int
		for _, g := range fold.Train {
			nodes += int(set.Offsets[g+1] - set.Offsets[g])
		}
		fp.Scale = float32(float64(len(fold.Train)) / float64(max(nodes, 1)))
		test, err := layers.NewGraphBatches(set, fold.Test, evalGraphs, true)
		if err != nil {
			return nil, err
		}
		var curve []float64
		var curveSecs float64
		var curveErr error
		_, err = fp.TrainGraphs(set, fold.Train, in32, false, layers.GraphTrainConfig{Epochs: j.Epochs, LR: graphLR,
			WeightDecay: graphWD, Dropout: graphDropout, PerBatch: trainGraphs,
			Halve: max(1, j.Epochs/3), Frozen: j.Epochs / 3, Seed: j.Seed + uint64(k),
			Progress: func(ep int, loss float64) {
				t := time.Now()
				acc, err := fp.GraphAccuracy(test, in32, set.Labels, false)
				curveSecs += time.Since(t).Seconds()
				curveErr = cmp.Or(curveErr, err)
				curve = append(curve, acc)
				j.Progress.Printf("qgtc: fold %d: fp32 epoch %d/%d loss %.3f test %.1f%%", k, ep, j.Epochs, loss, 100*acc)
			}})
		j.Progress.Done()
		if err := cmp.Or(err, curveErr); err != nil {
			return nil, err
		}
		r.TrainSecs += (time.Since(t0).Seconds() - curveSecs) / float64(len(folds))
		r.CurveSecs += curveSecs / float64(len(folds))
		acc, err := fp.GraphAccuracy(test, in32, set.Labels, false)
		if err != nil {
			return nil, err
		}
		r.Curve = append(r.Curve, curve)
		r.FP32.add(acc)
		train, err := layers.NewGraphBatches(set, fold.Train, evalGraphs, true)
		if err != nil {
			return nil, err
		}
		for wi := range r.Widths {
			gw := &r.Widths[wi]
			in, err := graphInput(inputs, set, gw.ABits)
			if err != nil {
				return nil, err
			}
			t1 := time.Now()
			m := fp.Clone()
			m.ABits, m.WBits = gw.ABits, gw.WBits
			if err := m.CalibrateGraphs(train, in, graphCalibBatches); err != nil {
				return nil, err
			}
			if j.QATEpochs > 0 {
				_, err := m.TrainGraphs(set, fold.Train, in, true, layers.GraphTrainConfig{Epochs: j.QATEpochs, LR: graphQATLR,
					PerBatch: trainGraphs, Seed: j.Seed + uint64(k),
					Progress: func(ep int, loss float64) {
						j.Progress.Printf("qgtc: fold %d: QAT %d/%d-bit epoch %d/%d loss %.3f", k, gw.ABits, gw.WBits, ep, j.QATEpochs, loss)
					}})
				j.Progress.Done()
				if err != nil {
					return nil, err
				}
			}
			gw.QATSeconds += time.Since(t1).Seconds() / float64(len(folds))
			t2 := time.Now()
			acc, err := graphTest(j, m, test, in, set)
			if err != nil {
				return nil, err
			}
			gw.InferMS += float64(time.Since(t2).Microseconds()) / 1000 / float64(len(folds))
			gw.Accuracy.add(acc)
		}
	}
	r.XuEpoch, r.XuBest = XuProtocol(r.Curve)
	return r, nil
}

// graphInput is set's features quantized to bits, made once per width.
func graphInput(inputs map[int]*layers.Input, set *subgraph.GraphSet, bits int) (*layers.Input, error) {
	if in := inputs[bits]; in != nil {
		return in, nil
	}
	in, err := layers.QuantizeInput(set.Features, bits)
	if err != nil {
		return nil, err
	}
	inputs[bits] = in
	return in, nil
}

// graphTest compiles m for the job's backend and returns its accuracy on
// the test batches.
func graphTest(j *Job, m *layers.GraphModel, test []*layers.GraphBatch, in *layers.Input, set *subgraph.GraphSet) (float64, error) {
	plan, err := m.CompileGraphs(j.Backend)
	if err != nil {
		return 0, err
	}
	defer plan.Close()
	plan.Agg = j.Agg
	sparse := j.SparseInput == SparseOn || (j.SparseInput != SparseOff && plan.SparseCheaper(in))
	pred, err := plan.Predict(test, in, sparse, set.NumGraphs())
	if err != nil {
		return 0, err
	}
	var hit, n int
	for _, b := range test {
		for _, g := range b.Graphs {
			if pred[g] == set.Labels[g] {
				hit++
			}
			n++
		}
	}
	return float64(hit) / float64(max(n, 1)), nil
}
