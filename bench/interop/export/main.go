package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/layers/fp"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

func main() {
	dataset := pflag.String("dataset", "cora", "bundled dataset name or path")
	seed := pflag.Uint64("seed", 0, "the random split's seed, for data that ships no split (qgtc infer's and train's --seed)")
	out := pflag.StringP("out", "o", "", "output folder (required)")
	lcc := pflag.String("lcc", pipeline.LCCAuto, "keep only the largest connected component as qgtc infer and train do: true, false or auto (data without a split)")
	logits := pflag.StringArray("logits", nil, "NAME=FILE: write logits-NAME.npy, the fp32 logits of the qgtc train --out model FILE")
	pflag.Parse()
	if *out == "" || pflag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "export: usage: export --dataset D --out DIR [--logits NAME=FILE ...]")
		os.Exit(2)
	}
	if err := run(*dataset, *out, *logits, *seed, *lcc); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
}

func run(dataset, out string, logits []string, seed uint64, lcc string) error {
	d, err := subgraph.Load(dataset)
	if err != nil {
		return err
	}
	if !pipeline.ValidLCC(lcc) {
		return fmt.Errorf("--lcc %q: want true, false or auto", lcc)
	}
	d, _ = (&pipeline.Config{LCC: lcc}).Component(d) // the graph qgtc runs on
	split := "shipped"
	if len(d.Train) == 0 {
		// The split qgtc infer and train draw for such data at the same
		// seed, so that PyG trains and tests on their nodes.
		d.RandomSplit(20, 30, seed)
		split = fmt.Sprintf("random (20 training and 30 validation nodes per class, seed %d)", seed)
	}
	data, err := fp.NewData(d, true)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	x := data.Input.X
	var xIndptr, xIndices []int32
	var xValues []float32
	if x.Sparse != nil {
		xIndptr, xIndices, xValues = x.Sparse.Indptr, x.Sparse.Indices, x.Data
	} else { // dense features: their non-zeros
		xIndptr = make([]int32, x.Rows+1)
		for r := range x.Rows {
			for c, v := range x.Data[r*x.Cols : (r+1)*x.Cols] {
				if v != 0 {
					xIndices, xValues = append(xIndices, int32(c)), append(xValues, v)
				}
			}
			xIndptr[r+1] = int32(len(xIndices))
		}
	}
	g := d.Graph
	arrays := []struct {
		name string
		data any
		n    int
	}{
		{"indptr", g.Indptr, len(g.Indptr)}, {"indices", g.Indices, len(g.Indices)},
		{"x_indptr", xIndptr, len(xIndptr)}, {"x_indices", xIndices, len(xIndices)}, {"x_values", xValues, len(xValues)},
		{"labels", d.Labels, len(d.Labels)}, {"train", d.Train, len(d.Train)}, {"val", d.Val, len(d.Val)}, {"test", d.Test, len(d.Test)},
	}
	for _, a := range arrays {
		if err := npy.WriteFile(filepath.Join(out, a.name+".npy"), a.data, a.n); err != nil {
			return err
		}
	}
	for _, spec := range logits {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return fmt.Errorf("--logits %q: want NAME=FILE", spec)
		}
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		m, err := fp.Load(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		y := m.Forward(nn.NewTape(false, nil), data.Input)
		if err := npy.WriteFile(filepath.Join(out, "logits-"+name+".npy"), y.Data, y.Rows, y.Cols); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(map[string]any{"dataset": d.Name, "nodes": g.N(), "features": d.Features.Cols, "classes": d.NumClasses, "split": split})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "meta.json"), meta, 0o644)
}
