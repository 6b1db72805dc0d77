package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/cputime"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

// `qgtc partition`: multilevel k-way partitioning of a dataset's graph,
// its cache file, METIS-format export for gpmetis comparisons, and the
// Cluster-GCN batching + packing pipeline timed end to end.

func init() {
	register(&command{name: "partition", summary: "partition a graph into K parts (METIS-style), cache it, batch and pack it", run: runPartition})
}

// partitionReport is what `qgtc partition --json` prints.
type partitionReport struct {
	Dataset      string       `json:"dataset"`
	Nodes        int          `json:"nodes"`
	ComponentOf  int          `json:"component_of,omitempty"` // the dataset's nodes, when Nodes is its largest component (--lcc)
	Edges        int64        `json:"edges"`
	Parts        int          `json:"parts"`
	Seed         uint64       `json:"seed"`
	Source       string       `json:"source"` // computed, cache, or the partition file evaluated
	EdgeCut      int64        `json:"edge_cut"`
	KeptFraction float64      `json:"kept_fraction"`
	InvK         float64      `json:"inv_k"`
	Imbalance    float64      `json:"imbalance"`
	MinPart      int          `json:"min_part"`
	MaxPart      int          `json:"max_part"`
	EmptyParts   int          `json:"empty_parts"`
	Seconds      float64      `json:"seconds"`     // wall-clock partitioning time
	CPUSeconds   float64      `json:"cpu_seconds"` // process CPU time while partitioning (all threads)
	LoadSeconds  float64      `json:"load_seconds"`
	Out          string       `json:"out,omitempty"`
	Batching     *batchReport `json:"batching,omitempty"`
	PackOut      string       `json:"pack_out,omitempty"`
	Packed       int          `json:"packed_batches,omitempty"`
}

// batchReport sums the batching and packing of every batch.
type batchReport struct {
	PartsPerBatch   int     `json:"parts_per_batch"`
	Batches         int     `json:"batches"`
	MeanNodes       float64 `json:"mean_nodes"`
	MaxNodes        int     `json:"max_nodes"`
	FeatureCols     int     `json:"feature_cols"`
	FeatureBits     int     `json:"feature_bits"`
	PackedBytes     int64   `json:"packed_bytes"`
	DenseAdjBytes   int64   `json:"dense_adjacency_bytes"`
	EdgeListBytes   int64   `json:"edge_list_bytes"`
	FeatureSeconds  float64 `json:"feature_pack_seconds"`
	BatchSeconds    float64 `json:"batch_seconds"`
	PackSeconds     float64 `json:"pack_seconds"`
	UnpackSeconds   float64 `json:"unpack_seconds"`
	NonZeroTiles    int64   `json:"nonzero_tiles"`
	TotalTiles      int64   `json:"total_tiles"`
	AdjacencyChecks int     `json:"adjacency_checks"`
}

func runPartition(args []string, w io.Writer) error { return partitionCmd(args, w, os.Stderr) }

// partitionCmd is `qgtc partition` with its progress going to errw.
func partitionCmd(args []string, w, errw io.Writer) error {
	fs := newFlags("partition", w)
	dataset := fs.String("dataset", "", "dataset name or path (see 'qgtc data list'), or a METIS graph file with --metis-graph")
	metisGraph := fs.Bool("metis-graph", false, "--dataset is a METIS graph file")
	k := fs.Int("parts", 0, "number of parts K")
	seed := fs.Uint64("seed", 0, "random seed (same seed, same partition)")
	ub := fs.Float64("imbalance", subgraph.DefaultImbalance, "largest part size over N/K, in [1, 100]")
	threads := fs.Int("threads", 0, "goroutines for the parallel phases (0 = all CPUs)")
	out := fs.String("out", "", "write the partition cache file here (reused by inference)")
	cache := fs.String("cache", "", "load the partition from this cache file, or compute and write it")
	eval := fs.String("eval", "", "evaluate a METIS partition file (gpmetis output) instead of partitioning")
	writeMetis := fs.String("write-metis", "", "write the graph in METIS format (for gpmetis) to this file")
	batchParts := fs.Int("batch", 0, "also build Cluster-GCN batches of this many parts and pack them (at most --parts)")
	featBits := fs.Int("feature-bits", 1, "bits per packed feature (codes min(round(x), 2^b-1); 1 bit = x != 0)")
	selfLoops := fs.Bool("self-loops", true, "batch adjacencies include the diagonal")
	packOut := fs.String("pack-out", "", "with --batch: write the inference batches (as qgtc infer --parts K --batch Q batches them), feature codes at --feature-bits as infer quantizes them, into this packed batch file for qgtc infer --packed")
	featScale := fs.String("feature-scale", pipeline.DefaultConfig("").FeatureScale, "with --pack-out: the feature scale the model was trained with; default: the dataset's recipe (infer's), the figure shown where none is specific")
	lcc := fs.String("lcc", pipeline.LCCAuto, "keep only the graph's largest connected component: true, false or auto (on for data that ships no split, as infer and train)")
	fs.Lookup("lcc").NoOptDefVal = pipeline.LCCOn
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dataset == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: want --dataset D and no other arguments", errUsage)
	}
	switch {
	case *k < 0:
		return fmt.Errorf("%w: --parts %d must be positive", errUsage, *k)
	case *k == 0 && *writeMetis == "":
		return fmt.Errorf("%w: want --parts K (or --write-metis FILE)", errUsage)
	case *threads < 0:
		return fmt.Errorf("%w: --threads %d must be 0 (all CPUs) or more", errUsage, *threads)
	case !(*ub >= 1 && *ub <= 100):
		return fmt.Errorf("%w: --imbalance %g not in [1, 100]", errUsage, *ub)
	case *batchParts < 0:
		return fmt.Errorf("%w: --batch %d must be 0 (no batches) or more", errUsage, *batchParts)
	case *batchParts > 0 && *k == 0:
		return fmt.Errorf("%w: --batch needs --parts", errUsage)
	case *packOut != "" && *batchParts == 0:
		return fmt.Errorf("%w: --pack-out needs --batch", errUsage)
	case *batchParts > *k:
		return fmt.Errorf("%w: --batch %d is more than --parts %d", errUsage, *batchParts, *k)
	case *featBits < 1 || *featBits > bittensor.MaxBits:
		return fmt.Errorf("%w: --feature-bits %d not in 1..%d", errUsage, *featBits, bittensor.MaxBits)
	case !pipeline.ValidLCC(*lcc):
		return fmt.Errorf("%w: --lcc %q: want true, false or auto", errUsage, *lcc)
	case *metisGraph && fs.Changed("lcc"):
		return fmt.Errorf("%w: --lcc applies to datasets, not to a METIS graph file", errUsage)
	case *eval != "" && *cache != "":
		return fmt.Errorf("%w: --eval and --cache do not go together (--out saves an evaluated partition)", errUsage)
	}
	// Every output is checked before the work, which can take minutes.
	for _, path := range []string{*out, *writeMetis} {
		if path != "" {
			if err := atomicfile.Check(path); err != nil {
				return err
			}
		}
	}
	if *cache != "" {
		if _, err := os.Stat(*cache); errors.Is(err, os.ErrNotExist) {
			if err := atomicfile.Check(*cache); err != nil {
				return err
			}
		}
	}
	prog := progress.New(errw, *quiet)
	t0 := time.Now()
	prog.Printf("partition: loading %s", *dataset)
	var d *subgraph.Dataset
	componentOf := 0 // the dataset's nodes when --lcc kept its largest component
	if *metisGraph {
		f, err := os.Open(*dataset)
		if err != nil {
			return err
		}
		g, err := subgraph.ReadMETIS(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *dataset, err)
		}
		d = &subgraph.Dataset{Name: *dataset, Graph: g}
	} else {
		var err error
		if d, err = subgraph.Load(*dataset); err != nil {
			return err
		}
		all := d.Graph.N()
		var kept []int32
		if d, kept = (&pipeline.Config{LCC: *lcc}).Component(d); kept != nil {
			componentOf = all
		}
	}
	prog.Done()
	loadSec := time.Since(t0).Seconds()
	g := d.Graph
	if *writeMetis != "" {
		if err := writeOutput(prog, *writeMetis, func(f io.Writer) error { return subgraph.WriteMETIS(f, g) }); err != nil {
			return err
		}
		if *k == 0 {
			fmt.Fprintf(w, "wrote %s (%d nodes)\n", *writeMetis, g.N())
			return nil
		}
	}
	opt := subgraph.PartitionOptions{Imbalance: *ub, Seed: *seed, Threads: *threads}
	opt.Progress = func(phase string, done, total int) {
		prog.Printf("partition: %s, %d%% (%d of %d)", phase, int(100*int64(done)/max(1, int64(total))), done, total)
	}
	rep := partitionReport{Dataset: d.Name, Nodes: g.N(), ComponentOf: componentOf, Parts: *k, Seed: *seed, LoadSeconds: loadSec, InvK: 1 / float64(*k)}
	var p *subgraph.Partitioning
	cpu0, _ := cputime.Process()
	t1 := time.Now()
	switch {
	case *eval != "":
		f, err := os.Open(*eval)
		if err != nil {
			return err
		}
		p, err = subgraph.ReadMETISPartition(f, g.N(), *k)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *eval, err)
		}
		rep.Source = *eval
	case *cache != "":
		var err error
		p, err = subgraph.LoadPartition(*cache, g, *k, opt)
		switch {
		case err == nil:
			rep.Source = "cache"
		case errors.Is(err, os.ErrNotExist):
			if p, err = subgraph.Partition(g, *k, opt); err != nil {
				return err
			}
			rep.Source = "computed"
			prog.Done()
			if err := savePartitionFile(prog, *cache, g, p, opt); err != nil {
				return err
			}
		default:
			return err
		}
	default:
		var err error
		if p, err = subgraph.Partition(g, *k, opt); err != nil {
			return err
		}
		rep.Source = "computed"
	}
	prog.Done()
	rep.Seconds = time.Since(t1).Seconds()
	if cpu1, ok := cputime.Process(); ok {
		rep.CPUSeconds = (cpu1 - cpu0).Seconds()
	}
	st, err := p.Stats(g)
	if err != nil {
		return err
	}
	rep.Edges, rep.EdgeCut, rep.KeptFraction = st.Edges, st.EdgeCut, st.KeptFraction
	rep.Imbalance, rep.MinPart, rep.MaxPart, rep.EmptyParts = st.Imbalance, st.MinPart, st.MaxPart, st.EmptyParts
	if *out != "" {
		if err := savePartitionFile(prog, *out, g, p, opt); err != nil {
			return err
		}
		rep.Out = *out
	}
	if *batchParts > 0 {
		br, err := batchAndPack(prog, d, p, *batchParts, *featBits, *selfLoops, *seed)
		if err != nil {
			return err
		}
		rep.Batching = br
	}
	if *packOut != "" {
		if !fs.Changed("feature-scale") { // the scale infer trains this dataset's models with
			*featScale = pipeline.DefaultConfig(*dataset).FeatureScale
		}
		j := &pipeline.Job{Config: pipeline.Config{FeatureScale: *featScale, Seed: *seed}, Progress: prog}
		if rep.Packed, err = j.PackPartition(*packOut, d, p.Parts, *k, *batchParts, *featBits); err != nil {
			return qUsage(err)
		}
		rep.PackOut = *packOut
	}
	if *asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "%s: %s, %d edges, K=%d (%s)\n", rep.Dataset, qNodes(rep.Nodes, rep.ComponentOf), rep.Edges, rep.Parts, rep.Source)
	fmt.Fprintf(w, "edge cut %d, kept fraction %.4f (1/K = %.4f), imbalance %.4f (parts %d..%d)\n",
		rep.EdgeCut, rep.KeptFraction, rep.InvK, rep.Imbalance, rep.MinPart, rep.MaxPart)
	fmt.Fprintf(w, "load %.3fs, partition %.3fs (CPU %.3fs)\n", rep.LoadSeconds, rep.Seconds, rep.CPUSeconds)
	if b := rep.Batching; b != nil {
		fmt.Fprintf(w, "batches: %d of %d parts, %.0f nodes on average (max %d); features %d cols × %d bits\n",
			b.Batches, b.PartsPerBatch, b.MeanNodes, b.MaxNodes, b.FeatureCols, b.FeatureBits)
		fmt.Fprintf(w, "packed %d bytes (edge lists %d) vs dense adjacencies %d bytes (%.1fx); tiles non-zero %d of %d\n",
			b.PackedBytes, b.EdgeListBytes, b.DenseAdjBytes, float64(b.DenseAdjBytes)/float64(max(1, b.EdgeListBytes)), b.NonZeroTiles, b.TotalTiles)
		fmt.Fprintf(w, "features %.3fs, batch %.3fs, pack %.3fs, unpack %.3fs\n", b.FeatureSeconds, b.BatchSeconds, b.PackSeconds, b.UnpackSeconds)
	}
	if rep.Out != "" {
		fmt.Fprintf(w, "wrote %s\n", rep.Out)
	}
	if rep.PackOut != "" {
		fmt.Fprintf(w, "wrote %s (%d packed batches)\n", rep.PackOut, rep.Packed)
	}
	return nil
}

// writeOutput writes path through a temporary file in its folder, renamed
// over path only once write succeeds; on an error or a signal the
// temporary file is removed and path is untouched.
func writeOutput(prog *progress.Reporter, path string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	prog.Printf("partition: writing %s", path)
	defer prog.Done()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// savePartitionFile writes p as a partition cache file (see writeOutput).
func savePartitionFile(prog *progress.Reporter, path string, g *subgraph.Graph, p *subgraph.Partitioning, opt subgraph.PartitionOptions) error {
	return writeOutput(prog, path, func(w io.Writer) error { return subgraph.WritePartitionFile(w, g, p, opt) })
}

// featureTensor quantizes a dataset's features to nbits-bit codes packed
// ByRows: min(round(x), 2^nbits-1), or x != 0 at one bit. Sparse features
// are written straight into the planes without a dense copy.
func featureTensor(f *subgraph.Features, nbits int) (*bittensor.Tensor, error) {
	t, err := bittensor.New(f.Rows, f.Cols, nbits, bittensor.ByRows, bittensor.DefaultPadding)
	if err != nil {
		return nil, err
	}
	words, pw, lw := t.Words(), t.PlaneWords(), t.LineWords()
	limit := float64(uint64(1)<<nbits - 1)
	set := func(r, c int, x float32) {
		code := uint64(0)
		if nbits == 1 {
			if x != 0 {
				code = 1
			}
		} else if x > 0 {
			code = uint64(math.Min(math.Round(float64(x)), limit))
		}
		for p := 0; code != 0; p, code = p+1, code>>1 {
			if code&1 != 0 {
				words[p*pw+r*lw+c/64] |= 1 << (c % 64)
			}
		}
	}
	if f.Dense != nil {
		for r := 0; r < f.Rows; r++ {
			for c, x := range f.Dense[r*f.Cols : (r+1)*f.Cols] {
				set(r, c, x)
			}
		}
		return t, nil
	}
	for r := 0; r < f.Rows; r++ {
		for i := f.Indptr[r]; i < f.Indptr[r+1]; i++ {
			x := float32(1)
			if f.Values != nil {
				x = f.Values[i]
			}
			set(r, int(f.Indices[i]), x)
		}
	}
	return t, nil
}

// batchAndPack builds every batch, packs it with its feature rows, unpacks
// the adjacency again and checks it bit for bit, timing each step.
func batchAndPack(prog *progress.Reporter, d *subgraph.Dataset, p *subgraph.Partitioning, q, featBits int, selfLoops bool, seed uint64) (*batchReport, error) {
	r := &batchReport{PartsPerBatch: q}
	var feat *bittensor.Tensor
	if d.Features != nil {
		t := time.Now()
		var err error
		if feat, err = featureTensor(d.Features, featBits); err != nil {
			return nil, err
		}
		r.FeatureSeconds = time.Since(t).Seconds()
		r.FeatureCols, r.FeatureBits = feat.Cols(), feat.Bits()
	}
	plan, err := subgraph.Batches(d.Graph, p, subgraph.BatchOptions{PartsPerBatch: q, Order: subgraph.Shuffled, Seed: seed, SelfLoops: selfLoops})
	if err != nil {
		return nil, err
	}
	r.Batches = plan.Len()
	nodes := 0
	defer prog.Done()
	for i := 0; i < plan.Len(); i++ {
		prog.Printf("partition: batching and packing, batch %d of %d", i+1, plan.Len())
		t := time.Now()
		b, err := plan.Batch(i)
		if err != nil {
			return nil, err
		}
		t2 := time.Now()
		buf, err := b.Pack(feat)
		if err != nil {
			return nil, err
		}
		t3 := time.Now()
		pk, err := subgraph.ReadPacked(buf)
		if err != nil {
			return nil, err
		}
		adj, err := pk.Adjacency()
		if err != nil {
			return nil, err
		}
		t4 := time.Now()
		if !adj.Equal(b.Adj) {
			return nil, fmt.Errorf("batch %d: unpacked adjacency differs from the batch's", i)
		}
		r.AdjacencyChecks++
		r.BatchSeconds += t2.Sub(t).Seconds()
		r.PackSeconds += t3.Sub(t2).Seconds()
		r.UnpackSeconds += t4.Sub(t3).Seconds()
		r.PackedBytes += int64(len(buf))
		r.DenseAdjBytes += int64(8 * len(b.Adj.Words()))
		r.EdgeListBytes += int64(4*(len(b.Nodes)+1) + map[bool]int{false: 2, true: 4}[pk.Index32]*len(b.Indices))
		r.NonZeroTiles += int64(b.Mask.Count())
		r.TotalTiles += int64(b.Mask.RowTiles * b.Mask.ColTiles)
		nodes += len(b.Nodes)
		r.MaxNodes = max(r.MaxNodes, len(b.Nodes))
	}
	r.MeanNodes = float64(nodes) / float64(max(1, r.Batches))
	return r, nil
}
