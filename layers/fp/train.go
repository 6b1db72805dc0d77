package fp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/qgtc/qgtc/internal/learn"
	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/subgraph"
)

// Data is a node-classification task: the model input, one label per node
// and the split.
type Data struct {
	Name             string
	Input            *Input
	Labels           []int32
	NumClasses       int
	Train, Val, Test []int32
}

// NewData builds a task from a loaded dataset with its split, row-normalizing
// the features when normalize is set.
func NewData(d *subgraph.Dataset, normalize bool) (*Data, error) {
	if d.Features == nil {
		return nil, fmt.Errorf("%w: dataset %q has no node features", ErrData, d.Name)
	}
	if d.Labels == nil {
		return nil, fmt.Errorf("%w: dataset %q has no single-label classes", ErrData, d.Name)
	}
	if len(d.Train) == 0 || len(d.Test) == 0 {
		return nil, fmt.Errorf("%w: dataset %q has no train/test split (use a random split)", ErrData, d.Name)
	}
	in, err := NewInput(d.Graph, d.Features)
	if err != nil {
		return nil, fmt.Errorf("dataset %q: %w", d.Name, err)
	}
	if normalize {
		in.NormalizeRows()
	}
	n := d.Graph.N()
	if len(d.Labels) != n {
		return nil, fmt.Errorf("%w: dataset %q has %d labels for %d nodes", ErrData, d.Name, len(d.Labels), n)
	}
	for _, split := range [][]int32{d.Train, d.Val, d.Test} {
		for _, v := range split {
			if v < 0 || int(v) >= n || d.Labels[v] < 0 || int(d.Labels[v]) >= d.NumClasses {
				return nil, fmt.Errorf("%w: dataset %q split node %d is out of range or unlabeled", ErrData, d.Name, v)
			}
		}
	}
	return &Data{Name: d.Name, Input: in, Labels: d.Labels, NumClasses: d.NumClasses,
		Train: d.Train, Val: d.Val, Test: d.Test}, nil
}

// DefaultNormalize says whether row normalization suits features f: yes
// (as for Planetoid and the Coauthor counts) except for binary
// bag-of-words with 64 or more words per node on average (the Amazon
// sets, ~260), where rows summing to 1 shrink every input to a few
// thousandths and Adam needs thousands of epochs to make up for it.
func DefaultNormalize(f *subgraph.Features) bool {
	if f == nil || f.Rows == 0 {
		return false
	}
	return !(f.Binary() && f.NNZ() >= 64*f.Rows)
}

// TrainConfig controls Train.
type TrainConfig struct {
	Epochs      int
	LR          float32
	WeightDecay float32
	// Patience stops training after this many epochs without a better
	// validation accuracy or loss (0: run every epoch). The parameters of
	// the best validation accuracy (ties: lower loss) are restored at the end.
	Patience int
	Seed     uint64 // dropout stream; New takes the initialization seed
	// Clusters > 0 trains Cluster-GCN style: the graph is partitioned into
	// Clusters parts once, and every epoch takes one optimizer step per
	// random group of ClustersPerBatch parts (the induced subgraph of
	// their union; edges between groups are dropped). Evaluation stays
	// full-graph.
	Clusters, ClustersPerBatch int
	// Progress, when set, is called after every epoch.
	Progress func(EpochStats)
}

// EpochStats is one epoch's progress.
type EpochStats struct {
	Epoch           int
	Loss            float64 // training loss (with dropout)
	ValLoss, ValAcc float64
	Seconds         float64 // training step time (forward, backward, update)
}

// Result is the outcome of Train. Accuracies are of the restored best
// parameters.
type Result struct {
	Epochs           int // epochs run
	BestEpoch        int
	TrainAcc, ValAcc float64
	TestAcc, ValLoss float64
	Seconds          float64 // whole run, evaluation included
	EpochSeconds     float64 // mean training step time
	EpochSecondsMin  float64
}

// Check reports whether cfg can train m on d.
func (cfg TrainConfig) Check(m Model, d *Data) error {
	if cfg.Epochs < 1 || !(cfg.LR > 0) || cfg.WeightDecay < 0 || cfg.Patience < 0 {
		return fmt.Errorf("%w: epochs %d, lr %v, weight decay %v, patience %d", ErrConfig, cfg.Epochs, cfg.LR, cfg.WeightDecay, cfg.Patience)
	}
	if c := m.Config(); c.In != d.Input.X.Cols || c.Out != d.NumClasses {
		return fmt.Errorf("%w: model is %d→%d but dataset %q has %d features and %d classes", ErrConfig, c.In, c.Out, d.Name, d.Input.X.Cols, d.NumClasses)
	}
	return nil
}

// Engine runs a model's training steps and evaluations where its tensors
// live: Train's on the host tensors, a device's (package gpufp) on the
// device. TrainWith drives either through the same epochs.
type Engine interface {
	// Step runs one epoch of training (forward, backward, Adam), drawing
	// its dropout seeds from rng in the order nn.Dropout draws them, and
	// returns the training loss.
	Step(rng *rand.Rand) (float64, error)
	// Evaluate evaluates the current parameters (Evaluate's figures).
	Evaluate() (Eval, error)
	// Keep saves the current parameters as the best so far; Restore puts
	// the kept ones back into the model.
	Keep() error
	Restore() error
}

// Train fits m to d with Adam (L2 weight decay on the parameters marked
// Decay) on the full graph or Cluster-GCN batches, evaluating on the validation nodes after every
// epoch. It is deterministic for a given model seed and cfg.Seed.
func Train(m Model, d *Data, cfg TrainConfig) (*Result, error) {
	if err := cfg.Check(m, d); err != nil {
		return nil, err
	}
	e := &hostEngine{m: m, d: d, opt: newAdam(cfg.LR, cfg.WeightDecay), params: m.Params()}
	e.best = snapshot(e.params)
	if cfg.Clusters > 0 {
		var err error
		if e.cb, err = newClusterBatches(d, cfg.Clusters, max(cfg.ClustersPerBatch, 1), cfg.Seed); err != nil {
			return nil, err
		}
	}
	return TrainWith(e, cfg)
}

// TrainWith runs Train's epochs on e: a step, an evaluation, progress,
// the best validation accuracy (ties: lower loss) kept, early stopping
// after cfg.Patience epochs without a better accuracy or loss, the best
// parameters restored at the end. Its caller checks cfg (Check).
func TrainWith(e Engine, cfg TrainConfig) (*Result, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7261696e))
	res := &Result{BestEpoch: -1, ValAcc: -1, EpochSecondsMin: math.Inf(1)}
	if err := e.Keep(); err != nil {
		return nil, err
	}
	bestLoss := math.Inf(1)
	var stepTotal float64
	wait := 0
	for epoch := range cfg.Epochs {
		t0 := time.Now()
		lossSum, err := e.Step(rng)
		if err != nil {
			return nil, err
		}
		step := time.Since(t0).Seconds()
		stepTotal += step
		res.EpochSecondsMin = min(res.EpochSecondsMin, step)
		res.Epochs = epoch + 1

		ev, err := e.Evaluate()
		if err != nil {
			return nil, err
		}
		if cfg.Progress != nil {
			cfg.Progress(EpochStats{Epoch: epoch + 1, Loss: lossSum, ValLoss: ev.ValLoss, ValAcc: ev.ValAcc, Seconds: step})
		}
		improved := false
		if ev.ValAcc > res.ValAcc || (ev.ValAcc == res.ValAcc && ev.ValLoss < res.ValLoss) {
			res.BestEpoch, res.ValAcc, res.ValLoss = epoch+1, ev.ValAcc, ev.ValLoss
			res.TrainAcc, res.TestAcc = ev.TrainAcc, ev.TestAcc
			if err := e.Keep(); err != nil {
				return nil, err
			}
			improved = true
		}
		if ev.ValLoss < bestLoss {
			bestLoss = ev.ValLoss
			improved = true
		}
		if improved {
			wait = 0
		} else if wait++; cfg.Patience > 0 && wait >= cfg.Patience {
			break
		}
	}
	if err := e.Restore(); err != nil {
		return nil, err
	}
	res.EpochSeconds = stepTotal / float64(res.Epochs)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// hostEngine is Train's engine: the tape over the model's host tensors.
type hostEngine struct {
	m      Model
	d      *Data
	opt    *adam
	params []*nn.Param
	best   paramSnapshot
	cb     *clusterBatches // nil: full batch
}

func (e *hostEngine) Step(rng *rand.Rand) (float64, error) {
	if e.cb == nil {
		tp := nn.NewTape(true, rng)
		loss := tp.CrossEntropy(e.m.Forward(tp, e.d.Input), e.d.Labels, e.d.Train)
		tp.Backward(loss)
		e.opt.Step(e.params)
		return float64(loss.Data[0]), nil
	}
	batches, err := e.cb.epoch(rng)
	if err != nil {
		return 0, err
	}
	var lossSum float64
	for _, b := range batches {
		tp := nn.NewTape(true, rng)
		loss := tp.CrossEntropy(e.m.Forward(tp, b.in), b.lab, b.train)
		tp.Backward(loss)
		e.opt.Step(e.params)
		lossSum += float64(loss.Data[0]) / float64(len(batches))
	}
	return lossSum, nil
}

func (e *hostEngine) Evaluate() (Eval, error) { return Evaluate(e.m, e.d), nil }
func (e *hostEngine) Keep() error             { e.best.save(e.params); return nil }
func (e *hostEngine) Restore() error          { e.best.restore(e.params); return nil }

// Eval holds accuracies and the validation loss of one evaluation.
type Eval struct {
	TrainAcc, ValAcc, TestAcc float64
	ValLoss                   float64
}

// Evaluate runs m in evaluation mode on d.
func Evaluate(m Model, d *Data) Eval {
	tp := nn.NewTape(false, nil)
	logits := m.Forward(tp, d.Input)
	return Eval{
		TrainAcc: Accuracy(logits, d.Labels, d.Train),
		ValAcc:   Accuracy(logits, d.Labels, d.Val),
		TestAcc:  Accuracy(logits, d.Labels, d.Test),
		ValLoss:  float64(tp.CrossEntropy(logits, d.Labels, d.Val).Data[0]),
	}
}

// Accuracy is the fraction of nodes idx whose arg-max logit is their label
// (0 for an empty idx).
func Accuracy(logits *nn.Tensor, labels, idx []int32) float64 {
	if len(idx) == 0 {
		return 0
	}
	c, hit := logits.Cols, 0
	for _, v := range idx {
		if int32(learn.Argmax(logits.Data[int(v)*c:(int(v)+1)*c])) == labels[v] {
			hit++
		}
	}
	return float64(hit) / float64(len(idx))
}

// adam is learn.Adam over a model's parameters: buffers and parameters
// without a gradient are left alone, and gradients are cleared after a step.
type adam struct {
	opt           *learn.Adam
	params, grads [][]float32
	decay         []bool
}

func newAdam(lr, weightDecay float32) *adam {
	return &adam{opt: learn.NewAdam(float64(lr), float64(weightDecay))}
}

// Step updates every trainable parameter of ps from its gradient, then
// clears the gradients.
func (a *adam) Step(ps []*nn.Param) {
	a.params, a.grads, a.decay = a.params[:0], a.grads[:0], a.decay[:0]
	for _, p := range ps {
		if p.Buffer || p.Grad == nil {
			continue
		}
		a.params, a.grads, a.decay = append(a.params, p.Data), append(a.grads, p.Grad), append(a.decay, p.Decay)
	}
	a.opt.Step(a.params, a.grads, a.decay)
	for _, p := range ps {
		if !p.Buffer && p.Grad != nil {
			p.ZeroGrad()
		}
	}
}

type paramSnapshot [][]float32

func snapshot(ps []*nn.Param) paramSnapshot {
	s := make(paramSnapshot, len(ps))
	s.save(ps)
	return s
}

func (s paramSnapshot) save(ps []*nn.Param) {
	for i, p := range ps {
		s[i] = append(s[i][:0], p.Data...)
	}
}

func (s paramSnapshot) restore(ps []*nn.Param) {
	for i, p := range ps {
		copy(p.Data, s[i])
	}
}
