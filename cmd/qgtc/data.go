package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/pipeline"
	"github.com/qgtc/qgtc/subgraph"
)

// `qgtc data`: list the bundled datasets, describe one, or write a
// synthetic graph.

func init() {
	register(&command{name: "data", summary: "list, inspect and generate graph datasets", run: runData})
}

// dataSubcommands maps `qgtc data <sub>` to its handler.
var dataSubcommands = map[string]func(args []string, w io.Writer) error{
	"list":  dataList,
	"info":  dataInfo,
	"synth": dataSynth,
}

func runData(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(w, "Usage: qgtc data <list|info|synth> [flags]")
		fmt.Fprintln(w, "  list                      bundled datasets with a one-line description")
		fmt.Fprintln(w, "  info <name|path> [--json] nodes, edges, features, classes, split, density, degrees")
		fmt.Fprintln(w, "  synth [flags] -o FILE     write a synthetic graph (R-MAT or planted partition) as .npz or edge list")
		fmt.Fprintln(w, "\nA name is looked up in $QGTC_DATA/<name>, ./testdata/<name>, <binary>/../testdata/<name>, then built-in (cora);")
		fmt.Fprintln(w, "a path may be a dataset folder (Planetoid, OGB, GraphSAGE, TU) or a .npz/.zip/.mat/edge-list file.")
		if len(args) == 0 {
			return fmt.Errorf("%w: missing data subcommand", errUsage)
		}
		return nil
	}
	sub, ok := dataSubcommands[args[0]]
	if !ok {
		return fmt.Errorf("%w: unknown data subcommand %q (want list, info or synth)", errUsage, args[0])
	}
	return sub(args[1:], w)
}

func dataList(args []string, w io.Writer) error {
	fs := newFlags("data list", w)
	fs.Bool("quiet", false, "accepted for consistency: data list prints no progress")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, b := range subgraph.BundledDatasets {
		where := "not found"
		if p, err := subgraph.Locate(b.Name); err == nil {
			where = p
		}
		fmt.Fprintf(tw, "%s\t%s\t(%s)\n", b.Name, b.Description, where)
	}
	return tw.Flush()
}

// dataSummary is what `qgtc data info --json` prints.
type dataSummary struct {
	Name             string  `json:"name"`
	Nodes            int     `json:"nodes"`
	UndirectedEdges  int     `json:"undirected_edges"`
	Features         int     `json:"features"`
	FeatureNonzeros  int     `json:"feature_nonzeros"`
	FeatureKind      string  `json:"feature_kind"`
	FeatureEmptyRows int     `json:"feature_empty_rows"`
	Classes          int     `json:"classes"`
	MultiLabel       bool    `json:"multi_label"`
	Unlabelled       int     `json:"unlabelled_nodes"`
	Train            int     `json:"train"`
	Val              int     `json:"val"`
	Test             int     `json:"test"`
	SplitShipped     bool    `json:"split_shipped"`
	Density          float64 `json:"density"`
	DegreeMin        int     `json:"degree_min"`
	DegreeMean       float64 `json:"degree_mean"`
	DegreeMedian     float64 `json:"degree_median"`
	DegreeMax        int     `json:"degree_max"`
	Components       int     `json:"components"`
	LargestComponent int     `json:"largest_component"`
	IsolatedNodes    int     `json:"isolated_nodes"`
	LoadSeconds      float64 `json:"load_seconds"`
}

func dataInfo(args []string, w io.Writer) error {
	fs := newFlags("data info", w)
	asJSON := fs.Bool("json", false, "print one JSON object")
	lcc := fs.Bool("lcc", false, "keep only the largest connected component (Shchur et al.'s standardization)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	seed := fs.Uint64("seed", 0, "seed of the random split (20 training and 30 validation nodes per class) shown for datasets that ship no split")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: data info wants one dataset name or path, got %d arguments", errUsage, fs.NArg())
	}
	t0 := time.Now()
	var d *subgraph.Dataset
	var err error
	during(progress.New(dataStderr, *quiet), "data info: loading "+fs.Arg(0), func() { d, err = subgraph.Load(fs.Arg(0)) })
	if err != nil {
		return err
	}
	printWarnings(dataStderr, d)
	took := time.Since(t0)
	if *lcc {
		d, _ = d.LargestComponent()
	}
	g := d.Graph
	s := dataSummary{
		Name: d.Name, Nodes: g.N(), UndirectedEdges: g.NumUndirectedEdges(), Classes: d.NumClasses,
		MultiLabel: d.Multi != nil, LoadSeconds: took.Seconds(),
	}
	if d.Features != nil {
		s.Features, s.FeatureNonzeros = d.Features.Cols, d.Features.NNZ()
		s.FeatureKind = "dense"
		if d.Features.Dense == nil {
			s.FeatureKind = "sparse"
		}
		if d.Features.Dense == nil {
			for v := 0; v < d.Features.Rows; v++ {
				if d.Features.Indptr[v] == d.Features.Indptr[v+1] {
					s.FeatureEmptyRows++
				}
			}
		}
		if d.Features.Binary() {
			s.FeatureKind += " binary"
		} else {
			s.FeatureKind += " real"
		}
	}
	for _, c := range d.Labels {
		if c < 0 {
			s.Unlabelled++
		}
	}
	s.SplitShipped = len(d.Train)+len(d.Val)+len(d.Test) > 0
	if !s.SplitShipped && (d.Labels != nil || d.Multi != nil) {
		c := *d
		c.RandomSplit(20, 30, *seed)
		d = &c
	}
	s.Train, s.Val, s.Test = len(d.Train), len(d.Val), len(d.Test)
	if n := float64(g.N()); n > 1 {
		s.Density = 2 * float64(s.UndirectedEdges) / (n * (n - 1))
	}
	st := g.DegreeStats()
	s.DegreeMin, s.DegreeMean, s.DegreeMedian, s.DegreeMax = st.Min, st.Mean, st.Median, st.Max
	comp, k := g.Components()
	size := make([]int, k)
	for _, c := range comp {
		size[c]++
	}
	for _, z := range size {
		s.LargestComponent = max(s.LargestComponent, z)
	}
	s.Components = k
	for _, dg := range g.Degrees() {
		if dg == 0 {
			s.IsolatedNodes++
		}
	}
	if *asJSON {
		return printJSON(w, s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", s.Name)
	fmt.Fprintf(tw, "nodes\t%d\n", s.Nodes)
	fmt.Fprintf(tw, "edges\t%d undirected (%d stored directed; duplicates and self-loops removed)\n", s.UndirectedEdges, g.NumEdges())
	if d.Features != nil {
		fmt.Fprintf(tw, "features\t%d (%s, %d nonzeros, %s%% dense, %d all-zero rows)\n", s.Features, s.FeatureKind, s.FeatureNonzeros,
			plainPercent(float64(s.FeatureNonzeros)/float64(max(1, s.Nodes*s.Features))), s.FeatureEmptyRows)
	} else {
		fmt.Fprintf(tw, "features\tnone\n")
	}
	switch {
	case s.MultiLabel:
		fmt.Fprintf(tw, "classes\t%d (multi-label, %d assignments)\n", s.Classes, d.Multi.NNZ())
	case d.Labels == nil && s.Classes > 0:
		fmt.Fprintf(tw, "classes\t%d (one label per graph, none per node: a graph-classification set)\n", s.Classes)
	case d.Labels == nil:
		fmt.Fprintf(tw, "classes\tnone\n")
	default:
		fmt.Fprintf(tw, "classes\t%d (%d unlabelled nodes)\n", s.Classes, s.Unlabelled)
	}
	switch {
	case s.SplitShipped:
		fmt.Fprintf(tw, "split\t%d train / %d val / %d test (shipped)\n", s.Train, s.Val, s.Test)
	case s.Train+s.Val+s.Test > 0:
		fmt.Fprintf(tw, "split\tnone shipped; a random split (20 train and 30 val per class, seed %d) gives %d train / %d val / %d test\n", *seed, s.Train, s.Val, s.Test)
	default:
		fmt.Fprintf(tw, "split\tnone\n")
	}
	fmt.Fprintf(tw, "density\t%s%% (2E / N(N-1))\n", plainPercent(s.Density))
	fmt.Fprintf(tw, "degree\tmin %d, mean %.2f, median %g, max %d (%d isolated nodes)\n", s.DegreeMin, s.DegreeMean, s.DegreeMedian, s.DegreeMax, s.IsolatedNodes)
	fmt.Fprintf(tw, "components\t%d (largest %d nodes)\n", s.Components, s.LargestComponent)
	fmt.Fprintf(tw, "load time\t%s\n", took.Round(time.Millisecond))
	return tw.Flush()
}

// plainPercent writes the fraction x as a percentage with three significant
// digits and never an exponent: 100.0, 12.3, 0.144, 0.0000123.
func plainPercent(x float64) string {
	p := 100 * x
	if p == 0 || math.IsNaN(p) || math.IsInf(p, 0) {
		return strconv.FormatFloat(p, 'f', 1, 64)
	}
	digits := min(15, max(1, 2-int(math.Floor(math.Log10(math.Abs(p))))))
	return strconv.FormatFloat(p, 'f', digits, 64)
}

// Hooks for the tests: dataStderr takes data's progress lines, and
// synthOut wraps the output file while it is written (to inject a failure
// or slow the write down).
var (
	dataStderr io.Writer = os.Stderr
	synthOut             = func(w io.Writer) io.Writer { return w }
	// machineMemory is the memory a new allocation may take, and where
	// that figure comes from; 0 when it cannot be read.
	machineMemory = availableMemory
)

// defaultSynthCap caps data synth where the machine's memory cannot be read.
const defaultSynthCap = 4 << 30

func dataSynth(args []string, w io.Writer) error {
	fs := newFlags("data synth", w)
	model := fs.String("model", "rmat", "generator: rmat (Chakrabarti et al.) or planted (planted partition / SBM)")
	out := fs.StringP("out", "o", "", "output file: .npz (src_li, dst_li, num_nodes, labels) or an edge list (.txt, .edges, .el)")
	seed := fs.Uint64("seed", 1, "random seed")
	scale := fs.Int("scale", 14, "rmat: 2^scale nodes (1..30)")
	edgeFactor := fs.Int("edge-factor", 16, "rmat: edges drawn per node (at most 2^30 edges in all)")
	a := fs.Float64("a", 0.57, "rmat: quadrant probability a (Graph500: 0.57)")
	b := fs.Float64("b", 0.19, "rmat: quadrant probability b")
	c := fs.Float64("c", 0.19, "rmat: quadrant probability c (d = 1-a-b-c)")
	nodes := fs.Int("nodes", 10000, "planted: number of nodes (2..2^30)")
	k := fs.Int("communities", 10, "planted: number of communities (written as labels to .npz)")
	avgDeg := fs.Float64("avg-degree", 10, "planted: average degree")
	mixing := fs.Float64("mixing", 0.1, "planted: expected fraction of edges between communities, in [0, 1]")
	features := fs.Int("features", 0, "planted, .npz: node features of this many columns, correlated with the classes (written in the gnn-benchmark layout qgtc infer reads)")
	featNNZ := fs.Int("feature-nnz", 16, "planted, with --features: non-zero features per node")
	classes := fs.Int("classes", 0, "planted, with --features: classes, each node's community modulo this (0: the communities)")
	maxMem := fs.String("max-memory", "", "refuse a graph whose generation and output would need more memory than this, e.g. 8GiB (default: the memory available on this machine, less under a container limit or ulimit -v; 4GiB where that cannot be read)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	packOut := fs.String("pack-out", "", "planted, with --features: write the graph straight into this packed batch file for qgtc infer --packed instead of -o, partitioned by community (part = community mod --parts); -o FILE.npz with the same flags writes the same data")
	parts := fs.Int("parts", 0, "with --pack-out: parts, each whole communities")
	batch := fs.Int("batch", 1, "with --pack-out: parts per batch")
	featBits := fs.Int("feature-bits", 4, "with --pack-out: bits of the feature codes (the model's activation bits)")
	featScale := fs.String("feature-scale", pipeline.DefaultConfig("").FeatureScale, "with --pack-out: the feature scale the model is trained with")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *packOut != "" {
		if *out != "" || fs.NArg() != 0 || *model != "planted" {
			return fmt.Errorf("%w: data synth --pack-out wants --model planted, no -o and no other arguments", errUsage)
		}
		return synthPackOut(w, synthPack{out: *packOut, parts: *parts, batch: *batch, bits: *featBits, scale: *featScale,
			nodes: *nodes, k: *k, avgDeg: *avgDeg, mixing: *mixing, features: *features, nnz: *featNNZ, classes: *classes,
			seed: *seed, maxMem: *maxMem, quiet: *quiet})
	}
	for _, f := range []string{"parts", "batch", "feature-bits", "feature-scale"} {
		if fs.Changed(f) {
			return fmt.Errorf("%w: --%s applies with --pack-out only", errUsage, f)
		}
	}
	if *out == "" || fs.NArg() != 0 {
		return fmt.Errorf("%w: data synth wants -o FILE and no other arguments", errUsage)
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".npz" && ext != ".txt" && ext != ".edges" && ext != ".el" {
		return fmt.Errorf("%w: output %q: want a .npz, .txt, .edges or .el file", errUsage, *out)
	}
	mem, what, err := synthPlan(fs, *model, *scale, *edgeFactor, *a, *b, *c, *nodes, *k, *avgDeg, *mixing)
	if err != nil {
		return err
	}
	limit, from, err := memoryCap(*maxMem)
	if err != nil {
		return err
	}
	labels := *model == "planted" && ext == ".npz"
	if fs.Changed("feature-nnz") || fs.Changed("classes") || *features != 0 {
		switch {
		case *model != "planted" || ext != ".npz":
			return fmt.Errorf("%w: --features, --feature-nnz and --classes want --model planted and a .npz output", errUsage)
		case *features == 0:
			return fmt.Errorf("%w: --feature-nnz and --classes want --features", errUsage)
		case *features < 1 || *features > 1<<20:
			return fmt.Errorf("%w: --features %d: want 1..%d columns", errUsage, *features, 1<<20)
		case *featNNZ < 1 || *featNNZ > *features || int64(*nodes)*int64(*featNNZ) > subgraph.MaxFeatureEntries:
			return fmt.Errorf("%w: --feature-nnz %d: want 1..%d (--features), at most %d in all", errUsage, *featNNZ, *features, subgraph.MaxFeatureEntries)
		case *classes < 0 || *classes > min(*k, subgraph.MaxClasses):
			return fmt.Errorf("%w: --classes %d: want 0..%d (--communities)", errUsage, *classes, min(*k, subgraph.MaxClasses))
		}
		if *classes == 0 {
			*classes = *k
		}
	}
	peak := synthNeed(mem, ext, labels)
	if *features > 0 {
		// The features, kept while the file is written, and the upper
		// triangle's indptr; arrays stream out in small pieces.
		peak = max(peak, synthNeed(synthSize{subgraph.SynthMemory{Graph: mem.Graph + subgraph.PlantedFeaturesBytes(*nodes, *featNNZ) + 8*int64(*nodes)}, mem.Nodes, mem.Edges}, ".el", false))
	}
	if peak > limit {
		return fmt.Errorf("%w: %s needs about %s of memory at its peak (generation, CSR build and %s output), more than %s",
			errUsage, what, fmtBytes(peak), ext, from)
	}
	if err := atomicfile.Check(*out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// The estimate is of live memory; by default the collector lets garbage
	// grow the heap to twice that (measured at scale 20: 1.6x). The big
	// slices hold no pointers, so collecting at 10% growth costs little and
	// keeps the peak within the headroom above (1.1x); the limit backs it.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))

	r := progress.New(dataStderr, *quiet)
	var g *subgraph.Graph
	var comm []int32
	during(r, "data synth: generating "+what, func() {
		if *model == "rmat" {
			g, err = subgraph.RMAT(*scale, *edgeFactor, *a, *b, *c, *seed)
		} else {
			g, comm, err = subgraph.PlantedPartition(*nodes, *k, *avgDeg, *mixing, *seed)
		}
	})
	if err != nil {
		return err
	}
	if !labels {
		comm = nil
	}
	f, err := atomicfile.Create(*out, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	defer f.Abort()
	cw := &countingWriter{w: synthOut(f), report: func(n int64) { r.Printf("data synth: writing %s: %s", *out, fmtBytes(n)) }}
	switch {
	case *features > 0:
		for v := range comm {
			comm[v] %= int32(*classes)
		}
		var feat *subgraph.Features
		if feat, err = subgraph.PlantedFeatures(comm, *classes, *features, *featNNZ, *seed); err == nil {
			err = subgraph.WriteBenchmarkNPZ(cw, g, feat, comm)
		}
	case ext == ".npz":
		err = subgraph.WriteEdgeNPZ(cw, g, comm)
	default:
		err = subgraph.WriteEdgeList(cw, g)
	}
	if err == nil {
		err = f.Commit()
	}
	r.Done()
	if err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	fmt.Fprintf(w, "wrote %s: %s graph, %d nodes, %d undirected edges", *out, *model, g.N(), g.NumUndirectedEdges())
	switch {
	case *features > 0:
		fmt.Fprintf(w, ", %d class labels, %d features (%d per node)", *classes, *features, *featNNZ)
	case comm != nil:
		fmt.Fprintf(w, ", %d community labels", *k)
	}
	fmt.Fprintln(w)
	return nil
}

// synthSize is a generator's memory need and the size of what it draws.
type synthSize struct {
	subgraph.SynthMemory
	Nodes, Edges int64 // Edges: drawn, an upper bound on the undirected edges kept
}

// synthPlan checks the generator's flags and returns its memory need and a
// phrase naming the flags that set its size, e.g. "--scale 26 --edge-factor 16".
func synthPlan(fs *pflag.FlagSet, model string, scale, edgeFactor int, a, b, c float64, nodes, k int, avgDeg, mixing float64) (synthSize, string, error) {
	rmatFlags, plantedFlags := []string{"scale", "edge-factor", "a", "b", "c"}, []string{"nodes", "communities", "avg-degree", "mixing"}
	var other []string
	switch model {
	case "rmat":
		other = plantedFlags
	case "planted":
		other = rmatFlags
	default:
		return synthSize{}, "", fmt.Errorf("%w: --model %q: want rmat or planted", errUsage, model)
	}
	for _, name := range other {
		if fs.Changed(name) {
			return synthSize{}, "", fmt.Errorf("%w: --%s does not apply to --model %s", errUsage, name, model)
		}
	}
	if model == "rmat" {
		if scale < 1 || scale > 30 {
			return synthSize{}, "", fmt.Errorf("%w: --scale %d: want 1..30", errUsage, scale)
		}
		if edgeFactor < 1 {
			return synthSize{}, "", fmt.Errorf("%w: --edge-factor %d: want at least 1", errUsage, edgeFactor)
		}
		if int64(edgeFactor)<<scale > 1<<30 {
			return synthSize{}, "", fmt.Errorf("%w: --scale %d --edge-factor %d draws %d edges, more than the 2^30 a graph with 32-bit indices holds", errUsage, scale, edgeFactor, int64(edgeFactor)<<scale)
		}
		for _, p := range []struct {
			name string
			v    float64
		}{{"a", a}, {"b", b}, {"c", c}} {
			if !(p.v >= 0 && p.v <= 1) {
				return synthSize{}, "", fmt.Errorf("%w: --%s %g: want a probability in [0, 1]", errUsage, p.name, p.v)
			}
		}
		if a+b+c > 1+1e-9 {
			return synthSize{}, "", fmt.Errorf("%w: --a %g --b %g --c %g sum to %g, more than 1", errUsage, a, b, c, a+b+c)
		}
		mem, _ := subgraph.RMATMemory(scale, edgeFactor)
		n := int64(1) << scale
		return synthSize{mem, n, int64(edgeFactor) * n}, fmt.Sprintf("--scale %d --edge-factor %d", scale, edgeFactor), nil
	}
	if nodes < 2 || nodes > 1<<30 {
		return synthSize{}, "", fmt.Errorf("%w: --nodes %d: want 2..2^30", errUsage, nodes)
	}
	if k < 1 || k > nodes {
		return synthSize{}, "", fmt.Errorf("%w: --communities %d: want 1..%d (--nodes)", errUsage, k, nodes)
	}
	if !(avgDeg > 0) || math.IsInf(avgDeg, 0) || avgDeg*float64(nodes)/2 > 1<<30 {
		return synthSize{}, "", fmt.Errorf("%w: --avg-degree %g: want more than 0 and at most 2^30 edges in all (--nodes %d)", errUsage, avgDeg, nodes)
	}
	if !(mixing >= 0 && mixing <= 1) {
		return synthSize{}, "", fmt.Errorf("%w: --mixing %g: want a fraction in [0, 1]", errUsage, mixing)
	}
	if k == 1 && mixing > 0 {
		return synthSize{}, "", fmt.Errorf("%w: --mixing %g with one community: there is no other community to link to (use --mixing 0)", errUsage, mixing)
	}
	mem, _ := subgraph.PlantedMemory(nodes, avgDeg)
	return synthSize{mem, int64(nodes), int64(math.Round(avgDeg * float64(nodes) / 2))},
		fmt.Sprintf("--nodes %d --avg-degree %g", nodes, avgDeg), nil
}

// synthNeed is the memory, in bytes, that generating and writing a graph
// takes at its peak: the generator's own peak, or the graph and the output
// buffers, whichever is more; the runtime's own memory, the collector's
// slack and page rounding come on top of those live slices.
func synthNeed(size synthSize, ext string, labels bool) int64 {
	live := max(size.Peak, size.Graph+synthOutputBytes(ext, size.Edges, size.Nodes, labels))
	return live + live/8 + 64<<20
}

// synthOutputBytes is the memory writing takes beyond the graph. An edge
// list streams through a small buffer. WriteEdgeNPZ first collects each
// undirected edge's ends in two int64 slices grown by append (up to 1.25x
// spare), then encodes each array into one more growing byte slice (up to
// 2.25x its size while it is copied); labels go the same way.
func synthOutputBytes(ext string, edges, nodes int64, labels bool) int64 {
	if ext != ".npz" {
		return 1 << 16
	}
	b := 2*10*edges + 18*edges
	if labels {
		b = max(b, 2*10*edges+8*nodes+18*nodes)
	}
	return b
}

// memoryCap is the --max-memory value in bytes, or the machine's memory,
// and a phrase saying where it comes from.
func memoryCap(flag string) (int64, string, error) {
	if flag != "" {
		n, err := parseBytes(flag)
		if err != nil {
			return 0, "", fmt.Errorf("%w: --max-memory %q: %v", errUsage, flag, err)
		}
		return n, fmt.Sprintf("the cap of %s set by --max-memory", fmtBytes(n)), nil
	}
	if n, from := machineMemory(); n > 0 {
		return n, fmt.Sprintf("the %s %s (--max-memory sets another cap)", fmtBytes(n), from), nil
	}
	return defaultSynthCap, fmt.Sprintf("the default cap of %s (this machine's memory could not be read; --max-memory sets another)", fmtBytes(defaultSynthCap)), nil
}

// availableMemory reads MemAvailable from /proc/meminfo, lowered to the
// headroom under a cgroup v2 memory limit or under the process's
// address-space limit (ulimit -v) when there is one.
func availableMemory() (int64, string) {
	var avail int64
	from := "available on this machine"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					avail = kb << 10
				}
			}
		}
	}
	lim, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	cur, err2 := os.ReadFile("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil {
		l, errl := strconv.ParseInt(strings.TrimSpace(string(lim)), 10, 64)
		c, errc := strconv.ParseInt(strings.TrimSpace(string(cur)), 10, 64)
		if errl == nil && errc == nil && (avail == 0 || l-c < avail) {
			avail, from = max(0, l-c), "left under this container's memory limit"
		}
	}
	// Under an address-space limit, MemAvailable is not the headroom: what
	// the process has mapped already is not, and the heap's address space
	// outgrows its live bytes (freed blocks stay mapped; the measured ratio
	// is in bench/trust/RESULTS.md, item 7), so half of the rest is.
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur < math.MaxInt64 {
		if h := max(0, int64(rl.Cur)-mappedBytes()) / 2; avail == 0 || h < avail {
			avail, from = h, "usable under this process's address-space limit (ulimit -v; half the space left, as freed memory stays mapped)"
		}
	}
	return avail, from
}

// mappedBytes is the process's virtual size (VmSize in /proc/self/status),
// 0 where that cannot be read.
func mappedBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmSize:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// parseBytes reads a size such as 512M, 8GiB, 1.5G or 1000000 (binary
// units: K, M, G and T are powers of 1024; a trailing B or iB is optional).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "B"), "i")
	mult := 1.0
	if t != "" {
		if i := strings.IndexByte("KMGT", strings.ToUpper(t[len(t)-1:])[0]); i >= 0 {
			mult = math.Pow(1024, float64(i+1))
			t = t[:len(t)-1]
		}
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(x > 0) || x*mult > math.MaxInt64/2 {
		return 0, errors.New("want a positive size such as 512M, 8GiB or 1.5G")
	}
	return int64(x * mult), nil
}

// fmtBytes writes n bytes in binary units with one decimal, e.g. 37.5 GiB.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x, i := float64(n), -1
	for x >= unit && i < 3 {
		x /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", x, "KMGT"[i])
}

// countingWriter passes writes through and reports the running byte count.
type countingWriter struct {
	w      io.Writer
	n      int64
	report func(n int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.report(c.n)
	return n, err
}

// during runs work, reporting msg at once and then, with the seconds
// taken, every second (r throttles that off a terminal): work that reports
// no progress of its own still shows it is alive.
func during(r *progress.Reporter, msg string, work func()) {
	r.Printf("%s", msg)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t0 := time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				r.Printf("%s (%s)", msg, time.Since(t0).Round(time.Second))
			}
		}
	}()
	work()
	close(done)
	wg.Wait()
	r.Done()
}

// printWarnings writes what the loader let through but a user should see
// (extreme feature values, a partial dataset), one line each.
func printWarnings(w io.Writer, d *subgraph.Dataset) {
	for _, msg := range d.Warnings {
		fmt.Fprintf(w, "qgtc: warning: %s\n", msg)
	}
}
