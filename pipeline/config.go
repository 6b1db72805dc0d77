package pipeline

import (
	"fmt"
	"math"

	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// Config is every setting of a quantized job: which data, how it is
// batched, which model at which widths, and how that model is trained
// when no trained one is given.
type Config struct {
	Dataset string // a bundled dataset's name or a path (subgraph.Load)
	Model   string // layers.GCN, layers.GIN or layers.SAGE
	// ABits is the width of the features and activations, WBits of the
	// weights (1..32).
	ABits, WBits int
	// Parts is the number of graph partitions (0: one batch up to 5,000
	// nodes, else parts of about 2,000 nodes, see AutoParts); Batch
	// partitions form one batch.
	Parts, Batch int
	// PartitionFile is a subgraph partition file (qgtc partition --out) to
	// batch by instead of partitioning; it must be made for this graph, and
	// its K is the job's (Parts 0 or equal to it).
	PartitionFile string
	Seed          uint64 // the split (when the data ships none), the partition and training
	// FeatureScale scales the input rows (layers.QScale*), folded into the
	// first epilogue.
	FeatureScale string
	// LCC keeps only the graph's largest connected component, Shchur et
	// al.'s standardization, on which their tuned anchors are measured:
	// LCCAuto (also "") for data that ships no split, as `qgtc train`
	// does; LCCOn always; LCCOff never.
	LCC string

	// Training, used when no trained model is given.
	Hidden, Layers int    // hidden width and graph layers
	Norm           string // GIN's MLP normalization: layers.NormNone or QNormBatch
	GINAggr        string // GIN's aggregation: layers.AggrSum or AggrMean ("" for the other models)
	Epochs         int    // full-precision epochs
	QATEpochs      int    // quantization-aware fine-tuning epochs (0: post-training quantization only)
	LSQ            bool   // QAT learns the activation step sizes
	// ChannelZ gives the update products per-channel ranges
	// (layers.Model.ChannelZ): ChannelAuto (also "") with 1-bit
	// activations, ChannelOn or ChannelOff.
	ChannelZ string
	// SignWeights makes 1-bit weights ±mean|w| per channel
	// (layers.Model.SetSignWeights): ChannelAuto (also "") and ChannelOn
	// do, ChannelOff keeps the two levels of least squared error.
	SignWeights string
	// LastBits widens the last layer's weights and activations to
	// LastBits where the model's widths are narrower
	// (layers.Model.LastBits): 0 (auto) widens a 1- or 2-bit model's to 8 bits,
	// −1 keeps it as the others (bench/accuracy/RESULTS.md).
	LastBits int
	// LR, WeightDecay, Dropout and Patience (epochs without a better
	// validation accuracy before stopping, 0: never) train the fp32 model,
	// QATLR, QATWeightDecay and QATPatience fine-tune it (see Recipe).
	LR, WeightDecay, Dropout float64
	// KeepInput drops out only between layers, not the input features
	// (layers.TrainConfig.KeepInput; PyG's BasicGNN models).
	KeepInput             bool
	Patience              int
	QATLR, QATWeightDecay float64
	QATPatience           int
	// QATDistill weighs the fp32 model's predictions on every node in the
	// QAT loss (layers.TrainConfig.Distill; 0: the labels only).
	QATDistill float64

	// Running.
	Agg   layers.AggMode   // dense or edge-list aggregations
	Merge layers.MergeMode // edge-list batches merged into one (layers.Plan.Merge)
	// Passes is how many inference passes Infer runs over the graph (0 or
	// 1: one); the report gives the first and the median of the others.
	Passes int
	// Resident keeps the batches' inputs on the backend between passes (a
	// serving process); otherwise each pass uploads them (cold).
	Resident bool
	// NoReplay runs every resident pass op by op; otherwise, on a backend
	// that records (a GPU), the second pass is recorded and later ones
	// replay it with one launch.
	NoReplay bool
	// SparseInput is whether the first product reads the sparse feature
	// codes (same results): SparseAuto (when cheaper, also ""), SparseOn or
	// SparseOff.
	SparseInput string
	// Shard runs one contiguous share of the batch plan (ShardRange); the
	// zero Shard runs them all.
	Shard Shard
}

// Values of Config.ChannelZ and Config.SignWeights.
const (
	ChannelAuto = "auto"
	ChannelOn   = "on"
	ChannelOff  = "off"
)

// Values of Config.LCC, the words of `qgtc train --lcc`.
const (
	LCCAuto = "auto"
	LCCOn   = "true"
	LCCOff  = "false"
)

// ValidLCC is whether s is a value of Config.LCC ("" is LCCAuto).
func ValidLCC(s string) bool {
	return s == "" || s == LCCAuto || s == LCCOn || s == LCCOff
}

// Component applies c.LCC to ds: ds restricted to its graph's largest
// connected component and that component's nodes (ascending, in ds's
// numbering), or ds itself and nil when every node stays.
func (c *Config) Component(ds *subgraph.Dataset) (*subgraph.Dataset, []int32) {
	on := c.LCC == LCCOn || ((c.LCC == "" || c.LCC == LCCAuto) && len(ds.Train) == 0)
	if !on {
		return ds, nil
	}
	return ds.LargestComponent()
}

// ginMean says the job trains a GIN that averages (GINAggr AggrMean).
func (c *Config) ginMean() bool { return c.Model == layers.GIN && c.GINAggr == layers.AggrMean }

// channelZ is whether the job's quantized model has per-channel Z ranges:
// auto gives them to activations of 4 bits and less, where one range for
// all the channels of an update product costs accuracy that QAT does not
// win back (citeseer GCN at 2 bits, Amazon Photo GCN and SAGE at 4); at 4
// bits they cost about a point on Cora GCN and GIN, less than they gain
// elsewhere (bench/interop/RESULTS.md).
func (c *Config) channelZ() bool {
	switch c.ChannelZ {
	case ChannelOn:
		return true
	case ChannelOff:
		return false
	}
	return c.ABits <= 4
}

// signWeights is whether the job's 1-bit weights are binarized by sign.
func (c *Config) signWeights() bool { return c.WBits == 1 && c.SignWeights != ChannelOff }

// lastBits is the last layer's width where LastBits widens it, else 0.
func (c *Config) lastBits() int {
	switch {
	case c.LastBits < 0:
		return 0
	case c.LastBits == 0 && max(c.ABits, c.WBits) <= 2:
		return autoLastBits
	case c.LastBits > max(c.ABits, c.WBits):
		return c.LastBits
	}
	return 0
}

// autoLastBits is the last layer's width of a 1- or 2-bit model by
// default: the class scores of a few levels lose more than the rest of
// the model does (bench/accuracy/RESULTS.md).
const autoLastBits = 8

// Values of Config.SparseInput.
const (
	SparseAuto = "auto"
	SparseOn   = "on"
	SparseOff  = "off"
)

// DefaultConfig is the job qgtc infer runs when given only a dataset: a
// 4-bit two-layer GCN of width 64, trained with the dataset's Recipe (see
// RecipeFor; set Model, then call UseRecipe to train another kind with
// its own).
func DefaultConfig(dataset string) Config {
	c := Config{Dataset: dataset, Model: layers.GCN, ABits: 4, WBits: 4, Batch: 1,
		Hidden: 64, Layers: 2, SparseInput: SparseAuto}
	c.UseRecipe(RecipeFor(dataset, c.Model), nil)
	return c
}

// AutoParts is the partition count of Parts 0 for n nodes: one batch up to
// 5,000 nodes, else parts of about 2,000 nodes (the dense 1-bit adjacency
// of a batch grows with the square of its size).
func AutoParts(n int) int {
	if n <= 5000 {
		return 1
	}
	return (n + 1999) / 2000
}

// ConfigError is a Config setting that cannot run: Field names the Config
// field, so a front end can name its own flag instead.
type ConfigError struct {
	Field   string
	Value   any
	Problem string // e.g. "must be positive", "(want gcn, gin or sage)"
}

// Detail is the value and the problem without the field's name.
func (e *ConfigError) Detail() string {
	if s, ok := e.Value.(string); ok {
		return fmt.Sprintf("%q %s", s, e.Problem)
	}
	return fmt.Sprintf("%v %s", e.Value, e.Problem)
}

func (e *ConfigError) Error() string { return "pipeline: Config." + e.Field + " " + e.Detail() }

// knownFeatureScale is whether s names a feature scale (layers.Scale*).
func knownFeatureScale(s string) bool {
	switch s {
	case layers.ScaleSqrt, layers.ScaleMean, layers.ScaleRows, layers.ScaleNone:
		return true
	}
	return false
}

// Check returns a *ConfigError for the first setting that cannot run: an
// empty Dataset, an unknown Model, Norm, GINAggr, FeatureScale or SparseInput,
// widths outside 1..32, sizes that are not positive, negative epochs.
func (c *Config) Check() error {
	bad := func(field string, v any, problem string) error { return &ConfigError{field, v, problem} }
	switch {
	case c.Dataset == "":
		return bad("Dataset", c.Dataset, "is required")
	case c.Model != layers.GCN && c.Model != layers.GIN && c.Model != layers.SAGE:
		return bad("Model", c.Model, "(want gcn, gin or sage)")
	case c.Norm != layers.NormNone && c.Norm != layers.NormBatch:
		return bad("Norm", c.Norm, "(want none or batch)")
	case c.Norm == layers.NormBatch && c.Model != layers.GIN:
		return bad("Norm", c.Norm, "applies to gin only (gcn and sage have no normalization)")
	case c.GINAggr != "" && c.GINAggr != layers.AggrSum && c.GINAggr != layers.AggrMean:
		return bad("GINAggr", c.GINAggr, "(want sum or mean)")
	case c.GINAggr != "" && c.Model != layers.GIN:
		return bad("GINAggr", c.GINAggr, "applies to gin only (gcn's and sage's aggregations are fixed)")
	}
	if !knownFeatureScale(c.FeatureScale) {
		return bad("FeatureScale", c.FeatureScale, "(want sqrt, mean, rows or none)")
	}
	switch c.ChannelZ {
	case "", ChannelAuto, ChannelOn, ChannelOff:
	default:
		return bad("ChannelZ", c.ChannelZ, "(want auto, on or off)")
	}
	switch c.SignWeights {
	case "", ChannelAuto, ChannelOn, ChannelOff:
	default:
		return bad("SignWeights", c.SignWeights, "(want auto, on or off)")
	}
	if !ValidLCC(c.LCC) {
		return bad("LCC", c.LCC, "(want true, false or auto)")
	}
	switch c.SparseInput {
	case "", SparseAuto, SparseOn, SparseOff:
	default:
		return bad("SparseInput", c.SparseInput, "(want on, off or auto)")
	}
	if c.Agg < layers.AggAuto || c.Agg > layers.AggSparse {
		return bad("Agg", int(c.Agg), "is not a layers.AggMode")
	}
	if c.Merge < layers.MergeAuto || c.Merge > layers.MergeOff {
		return bad("Merge", int(c.Merge), "is not a layers.MergeMode")
	}
	if c.Shard != (Shard{}) && (c.Shard.Count < 1 || c.Shard.Index < 0 || c.Shard.Index >= c.Shard.Count) {
		return bad("Shard", c.Shard.String(), "is not i/n with 0 <= i < n")
	}
	if c.Passes < 0 {
		return bad("Passes", c.Passes, "must not be negative")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"ABits", c.ABits}, {"WBits", c.WBits}} {
		if f.v < 1 || f.v > 32 {
			return bad(f.name, f.v, "is outside 1..32")
		}
	}
	if c.LastBits < -1 || c.LastBits > 32 {
		return bad("LastBits", c.LastBits, "is outside -1..32")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Batch", c.Batch}, {"Hidden", c.Hidden}, {"Layers", c.Layers}} {
		if f.v < 1 {
			return bad(f.name, f.v, "must be positive")
		}
	}
	switch {
	case c.Parts < 0:
		return bad("Parts", c.Parts, "must be positive (or 0 to choose by size)")
	case c.Epochs < 0:
		return bad("Epochs", c.Epochs, "must not be negative")
	case c.QATEpochs < 0:
		return bad("QATEpochs", c.QATEpochs, "must not be negative")
	case c.Patience < 0:
		return bad("Patience", c.Patience, "must not be negative (0: never stop early)")
	case c.QATPatience < 0:
		return bad("QATPatience", c.QATPatience, "must not be negative (0: never stop early)")
	case c.QATDistill < 0 || math.IsNaN(c.QATDistill) || math.IsInf(c.QATDistill, 0):
		return bad("QATDistill", c.QATDistill, "must be a finite weight, 0 or more")
	case c.Dropout < 0 || c.Dropout >= 1 || math.IsNaN(c.Dropout):
		return bad("Dropout", c.Dropout, "is outside [0, 1)")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"LR", c.LR}, {"QATLR", c.QATLR}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return bad(f.name, f.v, "must be a positive number")
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"WeightDecay", c.WeightDecay}, {"QATWeightDecay", c.QATWeightDecay}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return bad(f.name, f.v, "must not be negative")
		}
	}
	return nil
}
