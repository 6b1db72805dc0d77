package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

// synthPack is what data synth --pack-out takes beyond the generator's flags.
type synthPack struct {
	out                string
	parts, batch, bits int
	scale              string
	nodes, k           int
	avgDeg, mixing     float64
	features, nnz      int
	classes            int
	seed               uint64
	maxMem             string
	quiet              bool
}

// synthPackOut is data synth --pack-out: a planted graph with features,
// written straight into a packed batch file for qgtc infer --packed, never
// as a dataset. Its partition is the planted one, free to compute and
// deterministic: node v is in part community(v) mod --parts (communities
// are dealt to ids by a seeded shuffle, so a part is a few whole
// communities, whose edges stay inside it but for --mixing). The data
// (graph, features, labels, and the split qgtc infer --seed 0 draws) is
// what data synth -o FILE.npz writes with the same flags, so a model
// trained on that file has the packed file's data fingerprint.
func synthPackOut(w io.Writer, s synthPack) error {
	switch {
	case s.features < 1 || s.features > 1<<20:
		return fmt.Errorf("%w: --pack-out wants --model planted --features N (1..%d): inference reads features", errUsage, 1<<20)
	case s.nnz < 1 || s.nnz > s.features || int64(s.nodes)*int64(s.nnz) > subgraph.MaxSynthFeatureEntries:
		return fmt.Errorf("%w: --feature-nnz %d: want 1..%d (--features), at most %d in all", errUsage, s.nnz, s.features, subgraph.MaxSynthFeatureEntries)
	case s.classes < 0 || s.classes > min(s.k, subgraph.MaxClasses):
		return fmt.Errorf("%w: --classes %d: want 0..%d (--communities)", errUsage, s.classes, min(s.k, subgraph.MaxClasses))
	case s.parts < 1 || s.parts > s.k:
		return fmt.Errorf("%w: --parts %d: want 1..%d (--communities), each part whole communities", errUsage, s.parts, s.k)
	case s.batch < 1 || s.batch > s.parts:
		return fmt.Errorf("%w: --batch %d: want 1..%d (--parts)", errUsage, s.batch, s.parts)
	case s.bits < 1 || s.bits > 32:
		return fmt.Errorf("%w: --feature-bits %d: want 1..32 (the model's activation bits)", errUsage, s.bits)
	}
	// A batch is at most ceil(N/parts)+1 nodes a part: the packed format's
	// row limit bounds it.
	if per := (int64(s.nodes)/int64(s.parts) + 2) * int64(s.batch); per > subgraph.MaxPackNodes {
		return fmt.Errorf("%w: --parts %d --batch %d makes batches of about %d nodes, more than the %d a packed batch holds", errUsage, s.parts, s.batch, per, subgraph.MaxPackNodes)
	}
	if s.classes == 0 {
		s.classes = s.k
	}
	mem, ok := subgraph.PlantedMemory(s.nodes, s.avgDeg)
	if !ok {
		return fmt.Errorf("%w: --nodes %d --avg-degree %g: want 2..2^30 nodes and at most 2^30 edges", errUsage, s.nodes, s.avgDeg)
	}
	n, nnz := int64(s.nodes), int64(s.nodes)*int64(s.nnz)
	// Kept through the packing: the graph and labels, the features, their
	// codes (index, value and code per entry, sums per row), the parts and
	// scales; one batch at a time beyond them.
	live := mem.Graph + subgraph.PlantedFeaturesBytes(s.nodes, s.nnz) + 12*nnz + 8*n + 8*n
	peak := max(mem.Peak, live) + max(mem.Peak, live)/8 + 64<<20
	limit, from, err := memoryCap(s.maxMem)
	if err != nil {
		return err
	}
	if peak > limit {
		return fmt.Errorf("%w: --pack-out of %d nodes needs about %s of memory at its peak, more than %s", errUsage, s.nodes, fmtBytes(peak), from)
	}
	if err := atomicfile.Check(s.out); err != nil {
		return fmt.Errorf("--pack-out: %w", err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // as data synth: big pointer-free slices
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	r := progress.New(dataStderr, s.quiet)
	var g *subgraph.Graph
	var comm []int32
	during(r, fmt.Sprintf("data synth: generating %d nodes", s.nodes), func() {
		g, comm, err = subgraph.PlantedPartition(s.nodes, s.k, s.avgDeg, s.mixing, s.seed)
	})
	if err != nil {
		return err
	}
	parts := make([]int32, len(comm))
	for v, c := range comm {
		parts[v] = c % int32(s.parts)
		comm[v] = c % int32(s.classes)
	}
	var feat *subgraph.Features
	during(r, "data synth: drawing features", func() {
		feat, err = subgraph.PlantedFeatures(comm, s.classes, s.features, s.nnz, s.seed)
	})
	if err != nil {
		return err
	}
	ds := &subgraph.Dataset{Name: "planted", Graph: g, Features: feat, Labels: comm, NumClasses: s.classes}
	j := &pipeline.Job{Config: pipeline.Config{FeatureScale: s.scale, Seed: 0}, Progress: r}
	// The file holds what infer loads from the same graph written with -o:
	// its largest component when it has more than one (Config.LCC's auto).
	kept := ""
	if c, nodes := j.Component(ds); nodes != nil {
		kept = fmt.Sprintf(" (packed: its largest component, %d nodes, as infer loads it)", len(nodes))
		ds, parts = c, pickParts(parts, nodes)
	}
	nb, err := j.PackPartition(s.out, ds, parts, s.parts, s.batch, s.bits)
	r.Done()
	if err != nil {
		return qUsage(err)
	}
	fmt.Fprintf(w, "wrote %s: planted graph, %d nodes%s, %d undirected edges, %d classes, %d features (%d per node); %d packed batches of %d parts\n",
		s.out, g.N(), kept, g.NumUndirectedEdges(), s.classes, s.features, s.nnz, nb, s.batch)
	return nil
}

// pickParts is the part of each of nodes.
func pickParts(parts, nodes []int32) []int32 {
	out := make([]int32, len(nodes))
	for i, v := range nodes {
		out[i] = parts[v]
	}
	return out
}
