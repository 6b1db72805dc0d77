package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/subgraph"
)

func main() {
	dataset := pflag.String("dataset", "cora", "bundled dataset name or path")
	partition := pflag.String("partition", "", "a qgtc partition --out file of this graph (required)")
	out := pflag.StringP("out", "o", "", "output folder (required)")
	pflag.Parse()
	if *partition == "" || *out == "" || pflag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "export: usage: export --dataset D --partition FILE --out DIR")
		os.Exit(2)
	}
	if err := run(*dataset, *partition, *out); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
}

func run(dataset, partition, out string) error {
	d, err := subgraph.Load(dataset)
	if err != nil {
		return err
	}
	if d.Features == nil || d.Labels == nil {
		return fmt.Errorf("%s: no features or no node labels", dataset)
	}
	pf, err := subgraph.OpenPartition(partition, d.Graph)
	if err != nil {
		return err
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
		{"parts", pf.Partitioning().Parts, g.N()},
	}
	for _, a := range arrays {
		if err := npy.WriteFile(filepath.Join(out, a.name+".npy"), a.data, a.n); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(map[string]any{"dataset": d.Name, "nodes": g.N(), "features": f.Cols,
		"classes": d.NumClasses, "parts": pf.K})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "meta.json"), meta, 0o644)
}
