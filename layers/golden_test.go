package layers_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// goldenDir holds model files written by the qgtc of issue #15's
// pre-redesign commit, each with the predictions it gave: later code must
// read the same bytes and predict the same, bit for bit (issue #15).
const goldenDir = "testdata/golden"

// goldenRecord is one golden case: how its batches were built, the model
// file, and the hashes of what inference gave when it was recorded.
type goldenRecord struct {
	Case    string `json:"case"`
	Dataset string `json:"dataset"` // folder under the module's testdata/
	Model   string `json:"model"`   // layers.GCN or layers.GIN
	Norm    string `json:"norm"`
	ABits   int    `json:"abits"`
	WBits   int    `json:"wbits"`
	Hidden  int    `json:"hidden"`
	Layers  int    `json:"layers"`
	// Parts, Batch, Seed and FeatureScale are the CLI's --parts, --batch,
	// --seed and --feature-scale: the batches are NewDataScaled(dataset,
	// partition, Parts, Batch, FeatureScale) with the split of
	// RandomSplit(20, 30, Seed) where the dataset ships none.
	Parts        int    `json:"parts"`
	Batch        int    `json:"batch"`
	Seed         uint64 `json:"seed"`
	FeatureScale string `json:"feature_scale"`
	// PartitionFile holds the partition as little-endian int32 (node →
	// part) when Parts > 1: the batches must not depend on the partitioner
	// staying the same.
	PartitionFile   string `json:"partition_file,omitempty"`
	PartitionSHA256 string `json:"partition_sha256,omitempty"`
	// How the model was trained (for the record; the test never trains).
	Epochs    int  `json:"epochs"`
	QATEpochs int  `json:"qat_epochs"`
	LSQ       bool `json:"lsq"`

	ModelFile   string `json:"model_file"`
	ModelSHA256 string `json:"model_sha256"`
	Nodes       int    `json:"nodes"`
	Edges       int    `json:"edges"` // stored (directed) entries of the CSR
	Features    int    `json:"features"`
	Classes     int    `json:"classes"`
	Batches     int    `json:"batches"`
	// PredSHA256 hashes the predicted class of every node (int32,
	// little-endian, in node order); LogitsSHA256 the float32 logits,
	// nodes × classes in node order, little-endian.
	PredSHA256   string  `json:"pred_sha256"`
	LogitsSHA256 string  `json:"logits_sha256"`
	TestNodes    int     `json:"test_nodes"`
	TestCorrect  int     `json:"test_correct"`
	Accuracy     float64 `json:"accuracy"`
	RecordedWith string  `json:"recorded_with"`
}

// goldenTask is a dataset with the batches of a record.
type goldenTask struct {
	ds   *subgraph.Dataset
	data *layers.Data
}

// goldenDatasets caches loaded datasets across cases (they are only read).
var goldenDatasets sync.Map // name → *subgraph.Dataset

func goldenDataset(t testing.TB, name string, seed uint64) *subgraph.Dataset {
	t.Helper()
	key := fmt.Sprintf("%s/%d", name, seed)
	if ds, ok := goldenDatasets.Load(key); ok {
		return ds.(*subgraph.Dataset)
	}
	// The bundled copy by path, so that $QGTC_DATA cannot swap it.
	ds, err := subgraph.Load(filepath.Join("..", "testdata", name))
	require.NoError(t, err, "dataset %s", name)
	require.NotNil(t, ds.Features, "dataset %s has no features", name)
	if len(ds.Train) == 0 && ds.Labels != nil {
		ds.RandomSplit(20, 30, seed) // as qgtc infer does
	}
	goldenDatasets.Store(key, ds)
	return ds
}

// goldenBatches builds the batches of rec from its dataset and partition.
func goldenBatches(t testing.TB, rec *goldenRecord, parts []int32) *goldenTask {
	t.Helper()
	ds := goldenDataset(t, rec.Dataset, rec.Seed)
	d, err := layers.NewDataScaled(ds, parts, rec.Parts, rec.Batch, rec.FeatureScale)
	require.NoError(t, err)
	return &goldenTask{ds: ds, data: d}
}

func goldenSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func goldenInt32s(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func goldenFloat32s(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// goldenReadParts reads a partition file written by goldenInt32s.
func goldenReadParts(t testing.TB, path string, n int) []int32 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, b, 4*n, "%s: one int32 per node", path)
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return p
}

// goldenMode is one way of running a plan; every way must give the same
// logits bit for bit (the plan's documented contract), so one hash covers
// them all.
type goldenMode struct {
	name   string
	agg    layers.AggMode
	sparse bool // first product from the sparse feature codes
	auto   bool // sparse input chosen as qgtc infer does (SparseCheaper)
}

var goldenModes = []goldenMode{
	{name: "dense", agg: layers.AggDense},
	{name: "dense-sparse-input", agg: layers.AggDense, sparse: true},
	{name: "edge-list", agg: layers.AggSparse},
	{name: "edge-list-sparse-input", agg: layers.AggSparse, sparse: true},
	{name: "auto", agg: layers.AggAuto, auto: true},
}

// goldenOutcome is what one mode gave.
type goldenOutcome struct {
	pred, logits string // hashes
	runPred      string // the hash of Plan.Run's predictions
	correct      int
}

// goldenModel reads a model file and quantizes the task's features for
// it, as `qgtc infer --weights` does.
func goldenModel(t testing.TB, rec *goldenRecord, task *goldenTask, file []byte) (*layers.Model, *layers.Input) {
	t.Helper()
	m, err := layers.ReadModel(bytes.NewReader(file))
	require.NoError(t, err, "reading %s", rec.ModelFile)
	require.Equal(t, rec.Model, m.Kind, "model kind")
	require.Equal(t, []int{rec.ABits, rec.WBits}, []int{m.ABits, m.WBits}, "bit widths")
	require.Equal(t, rec.Classes, m.Classes, "classes")
	in, err := layers.QuantizeInput(task.ds.Features, m.ABits)
	require.NoError(t, err)
	require.Equal(t, m.Input, in.Params, "the features must quantize as they did when the model was calibrated")
	return m, in
}

// goldenInfer runs plan over task in mode: the logits batch by batch
// (Forward or ForwardSparse) and the predictions of Plan.Run.
func goldenInfer(t testing.TB, task *goldenTask, plan *layers.Plan, in *layers.Input, mode goldenMode) goldenOutcome {
	t.Helper()
	plan.Agg = mode.agg
	sparse := mode.sparse || (mode.auto && plan.SparseCheaper(in))
	n, c := task.ds.Graph.N(), plan.Model.Classes
	logits := make([]float32, n*c)
	pred := make([]int32, n)
	for i := range pred {
		pred[i] = -1
	}
	for _, b := range task.data.Eval {
		var (
			out []float32
			err error
		)
		if sparse {
			out, _, err = plan.ForwardSparse(b, in, nil)
		} else {
			var x *bittensor.Tensor
			x, err = in.Pack(b.Nodes)
			require.NoError(t, err)
			out, _, err = plan.Forward(b, x, nil)
		}
		require.NoError(t, err)
		require.Len(t, out, b.N()*c)
		for r, v := range b.Nodes {
			copy(logits[int(v)*c:int(v+1)*c], out[r*c:(r+1)*c])
		}
		layers.Argmax(pred, out, c, b.Nodes)
	}
	run, err := plan.Run(task.data, in, sparse, nil)
	require.NoError(t, err)
	return goldenOutcome{pred: goldenSHA(goldenInt32s(pred)), logits: goldenSHA(goldenFloat32s(logits)),
		runPred: goldenSHA(goldenInt32s(run.Pred)), correct: goldenCorrect(run.Pred, task.ds.Labels, task.ds.Test)}
}

// goldenCheck runs the model file of rec in every mode on backend be and
// returns the mismatches, mode by mode.
func goldenCheck(t testing.TB, rec *goldenRecord, task *goldenTask, file []byte, be bmm.Backend, modes []goldenMode) []string {
	t.Helper()
	m, in := goldenModel(t, rec, task, file)
	plan, err := m.Compile(be)
	require.NoError(t, err)
	defer plan.Close()
	var bad []string
	for _, mode := range modes {
		for _, s := range goldenMismatches(rec, goldenInfer(t, task, plan, in, mode)) {
			bad = append(bad, fmt.Sprintf("backend %s, mode %s: %s", be.Name(), mode.name, s))
		}
	}
	return bad
}

func goldenCorrect(pred, labels, nodes []int32) int {
	ok := 0
	for _, v := range nodes {
		if pred[v] == labels[v] {
			ok++
		}
	}
	return ok
}

// goldenMismatches lists how out differs from rec (nothing: bit for bit).
func goldenMismatches(rec *goldenRecord, out goldenOutcome) []string {
	var bad []string
	if out.logits != rec.LogitsSHA256 {
		bad = append(bad, fmt.Sprintf("logits sha256 %s, recorded %s", out.logits, rec.LogitsSHA256))
	}
	if out.pred != rec.PredSHA256 {
		bad = append(bad, fmt.Sprintf("predictions sha256 %s, recorded %s", out.pred, rec.PredSHA256))
	}
	if out.runPred != rec.PredSHA256 {
		bad = append(bad, fmt.Sprintf("Plan.Run predictions sha256 %s, recorded %s", out.runPred, rec.PredSHA256))
	}
	if out.correct != rec.TestCorrect {
		bad = append(bad, fmt.Sprintf("%d of %d test nodes right, recorded %d", out.correct, rec.TestNodes, rec.TestCorrect))
	}
	return bad
}

// goldenBackends are the CPU backend on its best path, then on every
// other CPU path this machine has (each must give the same bits, so the
// records hold on any CPU), then the generic reference backend.
func goldenBackends(t testing.TB) []bmm.Backend {
	t.Helper()
	bes := []bmm.Backend{cpu.NewBackend(nil)}
	for _, path := range cpu.Impls() {
		k, err := cpu.NewKernel(path)
		require.NoError(t, err)
		if be := cpu.NewBackend(k); be.Name() != bes[0].Name() {
			bes = append(bes, be)
		}
	}
	return append(bes, bmm.NewGenericBackend())
}

// goldenLoad reads every record of goldenDir with its model file, checked
// against the recorded hash.
func goldenLoad(t testing.TB) ([]*goldenRecord, map[string][]byte) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no golden records in %s", goldenDir)
	var recs []*goldenRecord
	models := map[string][]byte{}
	for _, p := range paths {
		js, err := os.ReadFile(p)
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		rec := &goldenRecord{}
		require.NoError(t, dec.Decode(rec), "%s", p)
		require.Equal(t, strings.TrimSuffix(filepath.Base(p), ".json"), rec.Case, "%s: case name", p)
		b, err := os.ReadFile(filepath.Join(goldenDir, rec.ModelFile))
		require.NoError(t, err)
		require.Equal(t, rec.ModelSHA256, goldenSHA(b), "%s changed: golden model files are never rewritten", rec.ModelFile)
		recs = append(recs, rec)
		models[rec.Case] = b
	}
	return recs, models
}

// goldenTaskFor builds rec's batches, checking the dataset still loads as
// it did.
func goldenTaskFor(t testing.TB, rec *goldenRecord) *goldenTask {
	t.Helper()
	ds := goldenDataset(t, rec.Dataset, rec.Seed)
	require.Equal(t, []int{rec.Nodes, rec.Edges, rec.Features, rec.Classes, rec.TestNodes},
		[]int{ds.Graph.N(), ds.Graph.NumEdges(), ds.Features.Cols, ds.NumClasses, len(ds.Test)},
		"%s: nodes, edges, features, classes and test nodes of the dataset", rec.Dataset)
	var parts []int32
	if rec.PartitionFile != "" {
		path := filepath.Join(goldenDir, rec.PartitionFile)
		parts = goldenReadParts(t, path, rec.Nodes)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, rec.PartitionSHA256, goldenSHA(raw), "%s changed", rec.PartitionFile)
	}
	task := goldenBatches(t, rec, parts)
	require.Len(t, task.data.Eval, rec.Batches, "batches")
	return task
}

// TestGolden checks that every recorded model file still loads and gives
// the recorded logits and predictions, bit for bit, on the CPU backend in
// every aggregation mode, with and without the sparse first product; and,
// on the Cora cases, densely on every other CPU kernel path this machine
// has, so that the records hold on any CPU, and on the generic reference
// backend densely and from the edge list with the sparse first product.
func TestGolden(t *testing.T) {
	recs, models := goldenLoad(t)
	backends := goldenBackends(t)
	tasks := map[string]*goldenTask{}
	for _, rec := range recs {
		t.Run(rec.Case, func(t *testing.T) {
			key := fmt.Sprintf("%s/p%d/b%d/s%d/%s/%s", rec.Dataset, rec.Parts, rec.Batch, rec.Seed, rec.FeatureScale, rec.PartitionSHA256)
			task := tasks[key]
			if task == nil {
				task = goldenTaskFor(t, rec)
				tasks[key] = task
			}
			assert.Empty(t, goldenCheck(t, rec, task, models[rec.Case], backends[0], goldenModes))
			if rec.Dataset == "cora" { // enough to catch a path that differs; bmmtest compares them in depth
				for _, be := range backends[1 : len(backends)-1] {
					assert.Empty(t, goldenCheck(t, rec, task, models[rec.Case], be, goldenModes[:1]))
				}
				generic := []goldenMode{goldenModes[0], goldenModes[3]}
				assert.Empty(t, goldenCheck(t, rec, task, models[rec.Case], backends[len(backends)-1], generic))
			}
			assert.InDelta(t, rec.Accuracy, float64(rec.TestCorrect)/float64(rec.TestNodes), 1e-12, "the record's accuracy")
		})
	}
}

// TestGoldenDetectsChange shows that TestGolden can fail: one weight byte
// changed in a copy of a model file (the sign of the largest weight of the
// last layer's first output) must change the logits and predictions.
func TestGoldenDetectsChange(t *testing.T) {
	recs, models := goldenLoad(t)
	i := slices.IndexFunc(recs, func(r *goldenRecord) bool { return r.Case == "cora-gcn-a4w4" })
	require.GreaterOrEqual(t, i, 0, "the cora-gcn-a4w4 record")
	rec := recs[i]
	task := goldenTaskFor(t, rec)
	orig := models[rec.Case]
	require.Empty(t, goldenCheck(t, rec, task, orig, cpu.NewBackend(nil), goldenModes), "the unchanged file")

	bad := bytes.Clone(orig)
	off := goldenWeightByte(t, bad, fmt.Sprintf("layers.%d.lin1.weight", rec.Layers-1))
	bad[off] ^= 0x80 // the float32's sign bit (little-endian: its last byte)
	mis := goldenCheck(t, rec, task, bad, cpu.NewBackend(nil), goldenModes)
	require.NotEmpty(t, mis)
	t.Logf("byte %d of %s flipped: %d mismatches, first: %s", off, rec.ModelFile, len(mis), strings.Join(mis[:min(4, len(mis))], "; "))
	for _, mode := range goldenModes {
		for _, what := range []string{"logits sha256", "predictions sha256"} {
			assert.True(t, slices.ContainsFunc(mis, func(s string) bool { return strings.Contains(s, "mode "+mode.name+": "+what) }),
				"mode %s: %s must differ", mode.name, what)
		}
	}
}

// goldenWeightByte returns the offset in a safetensors file of the byte
// holding the sign of the largest-magnitude weight in row 0 of tensor name.
func goldenWeightByte(t testing.TB, file []byte, name string) int {
	t.Helper()
	require.Greater(t, len(file), 8)
	hlen := int(binary.LittleEndian.Uint64(file))
	require.LessOrEqual(t, 8+hlen, len(file))
	var header map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(file[8:8+hlen], &header))
	var info struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	require.Contains(t, header, name)
	require.NoError(t, json.Unmarshal(header[name], &info))
	require.Equal(t, "F32", info.DType)
	require.Len(t, info.Shape, 2)
	data := file[8+hlen+info.Offsets[0] : 8+hlen+info.Offsets[1]]
	best, bv := 0, float32(-1)
	for j := 0; j < info.Shape[1]; j++ {
		w := math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:]))
		if a := float32(math.Abs(float64(w))); a > bv {
			best, bv = j, a
		}
	}
	return 8 + hlen + info.Offsets[0] + 4*best + 3
}
