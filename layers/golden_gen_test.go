package layers_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// The golden files are recorded once, from the code before the redesign of
// issue #15; recording them again from later code would make TestGolden
// compare that code with itself. So -golden.update only writes the cases
// whose files are missing: to re-record one, delete its files on purpose.
//
//	go test ./layers -run TestGoldenGenerate -golden.update -golden.commit=$(git rev-parse --short HEAD)
var (
	goldenUpdate = flag.Bool("golden.update", false, "write the golden cases missing from layers/testdata/golden (trains them)")
	goldenCommit = flag.String("golden.commit", "", "the qgtc commit the golden files are recorded from (for the records)")
)

// goldenCase is a model to train and record. Widths 1, 2, 4 and 8 on both
// models, one mixed case, GIN with and without its batch norm, three
// feature scales, LSQ once, a 3-layer model, and one dataset in several
// batches (parts grouped 1 and 2 to a batch).
type goldenCase struct {
	name, dataset, kind, norm string
	abits, wbits              int
	hidden, layers            int
	parts, batch              int
	seed                      uint64
	scale                     string
	epochs, qat               int
	lsq                       bool
}

var goldenCases = []goldenCase{
	{name: "cora-gcn-a1w1", dataset: "cora", kind: layers.GCN, abits: 1, wbits: 1},
	{name: "cora-gcn-a2w2-lsq", dataset: "cora", kind: layers.GCN, abits: 2, wbits: 2, lsq: true},
	{name: "cora-gcn-a4w4", dataset: "cora", kind: layers.GCN, abits: 4, wbits: 4},
	{name: "cora-gcn-a4w8", dataset: "cora", kind: layers.GCN, abits: 4, wbits: 8},
	{name: "cora-gcn-a8w8-l3", dataset: "cora", kind: layers.GCN, abits: 8, wbits: 8, layers: 3},
	{name: "cora-gin-a4w4", dataset: "cora", kind: layers.GIN, abits: 4, wbits: 4},
	{name: "cora-gin-a8w8-bn", dataset: "cora", kind: layers.GIN, norm: layers.NormBatch, abits: 8, wbits: 8},
	{name: "citeseer-gcn-a4w4-rows", dataset: "citeseer", kind: layers.GCN, abits: 4, wbits: 4, scale: layers.ScaleRows},
	{name: "citeseer-gin-a1w1", dataset: "citeseer", kind: layers.GIN, abits: 1, wbits: 1},
	{name: "citeseer-gin-a2w2-mean", dataset: "citeseer", kind: layers.GIN, abits: 2, wbits: 2, scale: layers.ScaleMean},
	{name: "amazon_photo-gcn-a4w4-p4", dataset: "amazon_photo", kind: layers.GCN, abits: 4, wbits: 4, hidden: 32, parts: 4},
	{name: "amazon_photo-gin-a8w4-bn-p6x2", dataset: "amazon_photo", kind: layers.GIN, norm: layers.NormBatch, abits: 8, wbits: 4, hidden: 32, parts: 6, batch: 2, seed: 7},
}

// TestGoldenGenerate trains and records the missing golden cases (only
// with -golden.update), with the settings and calls of `qgtc infer`.
func TestGoldenGenerate(t *testing.T) {
	if !*goldenUpdate {
		t.Skip("records golden files only with -golden.update")
	}
	require.NotEmpty(t, *goldenCommit, "-golden.commit names the code the files come from")
	require.NoError(t, atomicfile.CheckDir(goldenDir))
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(goldenDir, c.name+".json")); err == nil {
				t.Skipf("%s is recorded; delete its files to record it again", c.name)
			}
			goldenRecordCase(t, goldenDefaults(c))
		})
	}
}

func goldenDefaults(c goldenCase) goldenCase {
	if c.norm == "" {
		c.norm = layers.NormNone
	}
	if c.hidden == 0 {
		c.hidden = 16
	}
	if c.layers == 0 {
		c.layers = 2
	}
	if c.parts == 0 {
		c.parts = 1
	}
	if c.batch == 0 {
		c.batch = 1
	}
	if c.scale == "" {
		c.scale = layers.ScaleSqrt
	}
	if c.epochs == 0 {
		c.epochs = 60
	}
	if c.qat == 0 {
		c.qat = 10
	}
	return c
}

func goldenRecordCase(t *testing.T, c goldenCase) {
	rec := &goldenRecord{Case: c.name, Dataset: c.dataset, Model: c.kind, Norm: c.norm, ABits: c.abits, WBits: c.wbits,
		Hidden: c.hidden, Layers: c.layers, Parts: c.parts, Batch: c.batch, Seed: c.seed, FeatureScale: c.scale,
		Epochs: c.epochs, QATEpochs: c.qat, LSQ: c.lsq, ModelFile: c.name + ".safetensors",
		RecordedWith: fmt.Sprintf("qgtc %s, %s, kernel %s", *goldenCommit, runtime.Version(), bmm.Default().Name())}
	ds := goldenDataset(t, c.dataset, c.seed)
	var parts []int32
	if c.parts > 1 {
		rec.PartitionFile = fmt.Sprintf("%s-k%d-s%d.parts", c.dataset, c.parts, c.seed)
		path := filepath.Join(goldenDir, rec.PartitionFile)
		if _, err := os.Stat(path); err == nil {
			parts = goldenReadParts(t, path, ds.Graph.N())
		} else {
			p, err := subgraph.Partition(ds.Graph, c.parts, subgraph.PartitionOptions{Seed: c.seed})
			require.NoError(t, err)
			parts = p.Parts
			require.NoError(t, atomicfile.WriteFile(path, goldenInt32s(parts), 0o644))
		}
		rec.PartitionSHA256 = goldenSHA(goldenInt32s(parts))
	}
	task := goldenBatches(t, rec, parts)

	// As fp32Model, calibrate and quantModel of cmd/qgtc/infer.go do.
	in, err := layers.QuantizeInput(ds.Features, c.abits)
	require.NoError(t, err)
	fp, err := layers.NewModel(c.kind, ds.Features.Cols, c.hidden, ds.NumClasses, c.layers, 8, 8, c.seed)
	require.NoError(t, err)
	require.NoError(t, fp.SetNorm(c.norm))
	_, err = fp.TrainFP32(task.data, in, layers.TrainConfig{Epochs: c.epochs, LR: 0.01, WeightDecay: 5e-4, Dropout: 0.5, Patience: 50, Seed: c.seed})
	require.NoError(t, err)
	m := fp.Clone()
	m.ABits, m.WBits = c.abits, c.wbits
	require.NoError(t, m.Calibrate(task.data, in, 8))
	_, err = m.QAT(task.data, in, layers.TrainConfig{Epochs: c.qat, LR: 0.003, WeightDecay: 5e-4, Patience: 15, Seed: c.seed, LearnScales: c.lsq})
	require.NoError(t, err)
	var file bytes.Buffer
	_, err = m.WriteTo(&file)
	require.NoError(t, err)

	rec.ModelSHA256 = goldenSHA(file.Bytes())
	rec.Nodes, rec.Edges, rec.Features, rec.Classes = ds.Graph.N(), ds.Graph.NumEdges(), ds.Features.Cols, ds.NumClasses
	rec.Batches, rec.TestNodes = len(task.data.Eval), len(ds.Test)
	// Recorded from the file's bytes, as TestGolden reads them.
	gm, gin := goldenModel(t, rec, task, file.Bytes())
	plan, err := gm.Compile(cpu.NewBackend(nil))
	require.NoError(t, err)
	out := goldenInfer(t, task, plan, gin, goldenModes[0])
	require.Equal(t, out.pred, out.runPred)
	rec.PredSHA256, rec.LogitsSHA256, rec.TestCorrect = out.pred, out.logits, out.correct
	rec.Accuracy = float64(out.correct) / float64(rec.TestNodes)
	require.Empty(t, goldenCheck(t, rec, task, file.Bytes(), cpu.NewBackend(nil), goldenModes), "every mode gives the same bits")
	js, err := json.MarshalIndent(rec, "", "  ")
	require.NoError(t, err)
	require.NoError(t, atomicfile.WriteFile(filepath.Join(goldenDir, rec.ModelFile), file.Bytes(), 0o644))
	require.NoError(t, atomicfile.WriteFile(filepath.Join(goldenDir, c.name+".json"), append(js, '\n'), 0o644))
	t.Logf("%s: %d bytes, %d batches, accuracy %.2f%%", c.name, file.Len(), rec.Batches, 100*rec.Accuracy)
}
