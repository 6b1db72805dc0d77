package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

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
	seed := fs.Uint64("seed", 0, "seed of the RandomSplit(20, 30) shown for datasets that ship no split")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: data info wants one dataset name or path, got %d arguments", errUsage, fs.NArg())
	}
	t0 := time.Now()
	d, err := subgraph.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	took := time.Since(t0)
	if *lcc {
		d = d.LargestComponent()
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
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", s.Name)
	fmt.Fprintf(tw, "nodes\t%d\n", s.Nodes)
	fmt.Fprintf(tw, "edges\t%d undirected (%d stored directed; duplicates and self-loops removed)\n", s.UndirectedEdges, g.NumEdges())
	if d.Features != nil {
		fmt.Fprintf(tw, "features\t%d (%s, %d nonzeros, %.2f%% dense, %d all-zero rows)\n", s.Features, s.FeatureKind, s.FeatureNonzeros,
			100*float64(s.FeatureNonzeros)/float64(max(1, s.Nodes*s.Features)), s.FeatureEmptyRows)
	} else {
		fmt.Fprintf(tw, "features\tnone\n")
	}
	switch {
	case s.MultiLabel:
		fmt.Fprintf(tw, "classes\t%d (multi-label, %d assignments)\n", s.Classes, d.Multi.NNZ())
	case d.Labels == nil && s.Classes > 0:
		fmt.Fprintf(tw, "classes\t%d (graph-level labels: see the GraphSet view)\n", s.Classes)
	case d.Labels == nil:
		fmt.Fprintf(tw, "classes\tnone\n")
	default:
		fmt.Fprintf(tw, "classes\t%d (%d unlabelled nodes)\n", s.Classes, s.Unlabelled)
	}
	switch {
	case s.SplitShipped:
		fmt.Fprintf(tw, "split\t%d train / %d val / %d test (shipped)\n", s.Train, s.Val, s.Test)
	case s.Train+s.Val+s.Test > 0:
		fmt.Fprintf(tw, "split\tnone shipped; RandomSplit(20, 30, seed %d) gives %d train / %d val / %d test\n", *seed, s.Train, s.Val, s.Test)
	default:
		fmt.Fprintf(tw, "split\tnone\n")
	}
	fmt.Fprintf(tw, "density\t%.3g (2E / N(N-1))\n", s.Density)
	fmt.Fprintf(tw, "degree\tmin %d, mean %.2f, median %g, max %d (%d isolated nodes)\n", s.DegreeMin, s.DegreeMean, s.DegreeMedian, s.DegreeMax, s.IsolatedNodes)
	fmt.Fprintf(tw, "components\t%d (largest %d nodes)\n", s.Components, s.LargestComponent)
	fmt.Fprintf(tw, "load time\t%s\n", took.Round(time.Millisecond))
	return tw.Flush()
}

func dataSynth(args []string, w io.Writer) error {
	fs := newFlags("data synth", w)
	model := fs.String("model", "rmat", "generator: rmat (Chakrabarti et al.) or planted (planted partition / SBM)")
	out := fs.StringP("out", "o", "", "output file: .npz (src_li, dst_li, num_nodes, labels) or an edge list (.txt, .edges, .el)")
	seed := fs.Uint64("seed", 1, "random seed")
	scale := fs.Int("scale", 14, "rmat: 2^scale nodes")
	edgeFactor := fs.Int("edge-factor", 16, "rmat: edges drawn per node")
	a := fs.Float64("a", 0.57, "rmat: quadrant probability a (Graph500: 0.57)")
	b := fs.Float64("b", 0.19, "rmat: quadrant probability b")
	c := fs.Float64("c", 0.19, "rmat: quadrant probability c (d = 1-a-b-c)")
	nodes := fs.Int("nodes", 10000, "planted: number of nodes")
	k := fs.Int("communities", 10, "planted: number of communities (written as labels to .npz)")
	avgDeg := fs.Float64("avg-degree", 10, "planted: average degree")
	mixing := fs.Float64("mixing", 0.1, "planted: expected fraction of edges between communities")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 0 {
		return fmt.Errorf("%w: data synth wants -o FILE and no other arguments", errUsage)
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".npz" && ext != ".txt" && ext != ".edges" && ext != ".el" {
		return fmt.Errorf("%w: output %q: want a .npz, .txt, .edges or .el file", errUsage, *out)
	}
	var g *subgraph.Graph
	var labels []int32
	var err error
	switch *model {
	case "rmat":
		g, err = subgraph.RMAT(*scale, *edgeFactor, *a, *b, *c, *seed)
	case "planted":
		g, labels, err = subgraph.PlantedPartition(*nodes, *k, *avgDeg, *mixing, *seed)
	default:
		return fmt.Errorf("%w: --model %q: want rmat or planted", errUsage, *model)
	}
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if ext == ".npz" {
		err = subgraph.WriteEdgeNPZ(f, g, labels)
	} else {
		err = subgraph.WriteEdgeList(f, g)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	fmt.Fprintf(w, "wrote %s: %s graph, %d nodes, %d undirected edges", *out, *model, g.N(), g.NumUndirectedEdges())
	if labels != nil && ext == ".npz" {
		fmt.Fprintf(w, ", %d community labels", *k)
	}
	fmt.Fprintln(w)
	return nil
}
