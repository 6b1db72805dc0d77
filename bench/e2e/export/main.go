package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

func main() {
	dataset := pflag.String("dataset", "cora", "bundled dataset name or path")
	partition := pflag.String("partition", "", "a qgtc partition --out file of this graph (parts.npy; optional)")
	seeds := pflag.Int("split-seeds", 0, "also write the random 20/30-per-class split of seeds 0..N-1 (train_S.npy, val_S.npy, test_S.npy), as qgtc makes it for data that ships none")
	out := pflag.StringP("out", "o", "", "output folder (required)")
	lcc := pflag.String("lcc", pipeline.LCCAuto, "keep only the largest connected component as qgtc infer and train do: true, false or auto (data without a split)")
	pflag.Parse()
	if *out == "" || pflag.NArg() > 0 || *seeds < 0 {
		fmt.Fprintln(os.Stderr, "export: usage: export --dataset D [--partition FILE] [--split-seeds N] --out DIR")
		os.Exit(2)
	}
	if err := run(*dataset, *partition, *out, *seeds, *lcc); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
}

func run(dataset, partition, out string, seeds int, lcc string) error {
	d, err := subgraph.Load(dataset)
	if err != nil {
		return err
	}
	if !pipeline.ValidLCC(lcc) {
		return fmt.Errorf("--lcc %q: want true, false or auto", lcc)
	}
	d, _ = (&pipeline.Config{LCC: lcc}).Component(d) // the graph qgtc runs on
	if d.Features == nil || d.Labels == nil {
		return fmt.Errorf("%s: no features or no node labels", dataset)
	}
	var pf *subgraph.PartitionFile
	if partition != "" {
		if pf, err = subgraph.OpenPartition(partition, d.Graph); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	g, f := d.Graph, d.Features
	vals := f.Values
	if vals == nil { // binary features
		vals = make([]float32, len(f.Indices))
		for i := range vals {
			vals[i] = 1
		}
	}
	arrays := []struct {
		name string
		data any
		n    int
	}{
		{"indptr", g.Indptr, len(g.Indptr)}, {"indices", g.Indices, len(g.Indices)},
		{"x_indptr", f.Indptr, len(f.Indptr)}, {"x_indices", f.Indices, len(f.Indices)},
		{"x_values", vals, len(vals)}, {"labels", d.Labels, len(d.Labels)},
	}
	k := 0
	if pf != nil {
		arrays = append(arrays, struct {
			name string
			data any
			n    int
		}{"parts", pf.Partitioning().Parts, g.N()})
		k = pf.K
	}
	for s := 0; s < seeds; s++ {
		d.RandomSplit(20, 30, uint64(s))
		for _, a := range []struct {
			name string
			v    []int32
		}{{"train", d.Train}, {"val", d.Val}, {"test", d.Test}} {
			if err := npy.WriteFile(filepath.Join(out, fmt.Sprintf("%s_%d.npy", a.name, s)), a.v, len(a.v)); err != nil {
				return err
			}
		}
	}
	for _, a := range arrays {
		if err := npy.WriteFile(filepath.Join(out, a.name+".npy"), a.data, a.n); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(map[string]any{"dataset": d.Name, "nodes": g.N(), "features": f.Cols,
		"classes": d.NumClasses, "parts": k, "split_seeds": seeds})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "meta.json"), meta, 0o644)
}
