// Command fpbench times qgtc's full-precision GPU templates (tcu.PrepareSpMM,
// tcu.PrepareSDDMM) on the bundled graphs and a synthetic one, and writes
// each graph's CSR as .npy files so that baselines.py times cuSPARSE and
// PyG on exactly the same edges. See bench/templates/run.sh.
//
// Each op's time is the median over samples of CUDA-event intervals around
// per back-to-back runs, divided by per; per and samples are picked from a
// first timing so that a sample spans about a millisecond and a
// measurement about 0.3·BUDGET seconds (baselines.py picks them the same
// way). Before timing, each graph's results at f = 16 are checked against
// the CPU templates (relative 1e-5).
//
// Output (stdout): one TSV line per measurement, graph op f impl us.
package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"
	"unsafe"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/subgraph"
	"github.com/qgtc/qgtc/tcu"
	"github.com/qgtc/qgtc/templates"
)

type options struct {
	graphs      []string
	widths      []int
	ops         []string
	out         string
	budget      float64
	synthNodes  int
	synthDegree float64
	exportOnly  bool
	check       bool
	esLimit     int
	partRows    int
}

func main() {
	var o options
	pflag.StringSliceVar(&o.graphs, "graphs", []string{"cora", "citeseer", "pubmed_partial", "amazon_photo", "amazon_computers",
		"coauthor_cs", "coauthor_physics", "synth"}, "bundled dataset names or paths; synth is the planted-partition graph")
	pflag.IntSliceVar(&o.widths, "widths", []int{16, 64, 128, 256}, "feature widths")
	pflag.StringSliceVar(&o.ops, "ops", []string{"copy_u_sum", "u_mul_e_sum", "copy_u_sum_hp", "u_mul_e_sum_hp", "u_dot_v", "copy_u_sum_es"},
		"ops to time (also copy_u_mean, copy_u_max, u_add_v_sum); _es: on ES-SpMM's sample (tcu.UploadSampledCSR)")
	pflag.StringVar(&o.out, "out", "fpdata", "folder for the graphs' CSR (.npy) read by baselines.py")
	pflag.Float64Var(&o.budget, "budget", 1, "scales the time spent per measurement (about 0.3·budget seconds)")
	pflag.IntVar(&o.synthNodes, "synth-nodes", 2_000_000, "synth: nodes (qgtc data synth --model planted --nodes)")
	pflag.Float64Var(&o.synthDegree, "synth-degree", 10, "synth: average degree (--avg-degree)")
	pflag.BoolVar(&o.exportOnly, "export-only", false, "write the graphs' .npy files and stop (no GPU needed)")
	pflag.BoolVar(&o.check, "check", true, "check the results at f=16 against the CPU templates before timing")
	pflag.IntVar(&o.esLimit, "es-limit", 32, "_es ops: edges kept per row")
	pflag.IntVar(&o.partRows, "part-rows", 256, "_hp ops: nodes per part of the graph's partition (subgraph.Partition, seed 1)")
	pflag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "fpbench:", err)
		os.Exit(1)
	}
}

// loadGraph returns a graph's pull CSR (the loaders' graphs are undirected,
// so the in-edges of v are its neighbours).
func loadGraph(name string, o options) (templates.CSR, error) {
	if name == "synth" {
		// The generator `qgtc data synth --model planted` runs, with its
		// default communities (10), mixing (0.1) and seed (1).
		g, _, err := subgraph.PlantedPartition(o.synthNodes, 10, o.synthDegree, 0.1, 1)
		if err != nil {
			return templates.CSR{}, err
		}
		return templates.CSR{Indptr: g.Indptr, Indices: g.Indices}, nil
	}
	d, err := subgraph.Load(name)
	if err != nil {
		return templates.CSR{}, err
	}
	return templates.CSR{Indptr: d.Graph.Indptr, Indices: d.Graph.Indices}, nil
}

func writeNPY(path string, data []int32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := npy.Write(f, data, len(data)); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// checkFailed records a check that failed; run fails after the timings.
var checkFailed bool

func run(o options) (err error) {
	var d *tcu.Device
	if !o.exportOnly {
		if d, err = tcu.Open(0); err != nil {
			return err
		}
		defer d.Close()
		fmt.Fprintf(os.Stderr, "# %v, NVRTC %s, L2 %d bytes\n", d.Info(), d.NVRTCVersion(), d.Info().L2Bytes)
	}
	defer func() {
		if err == nil && checkFailed {
			err = errors.New("results differ from the CPU templates (see CHECK FAILED above)")
		}
	}()
	for _, name := range o.graphs {
		t0 := time.Now()
		g, err := loadGraph(name, o)
		if err != nil {
			return err
		}
		maxDeg := 0
		for v := 0; v < g.Rows(); v++ {
			maxDeg = max(maxDeg, int(g.Indptr[v+1]-g.Indptr[v]))
		}
		fmt.Fprintf(os.Stderr, "# %s: %d rows, %d edges, max degree %d (%v)\n", name, g.Rows(), g.NNZ(), maxDeg, time.Since(t0).Round(time.Millisecond))
		dir := filepath.Join(o.out, filepath.Base(name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := writeNPY(filepath.Join(dir, "indptr.npy"), g.Indptr); err != nil {
			return err
		}
		if err := writeNPY(filepath.Join(dir, "indices.npy"), g.Indices); err != nil {
			return err
		}
		var order []int32 // the nodes part by part, for the _hp ops
		if slices.ContainsFunc(o.ops, func(s string) bool { return ops[s].parts }) {
			if order, err = partOrder(name, g, o.partRows); err != nil {
				return err
			}
			if err := writePartOrder(dir+"_porder", g, order); err != nil {
				return err
			}
		}
		if d != nil {
			if err := benchGraph(d, filepath.Base(name), g, order, o); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// op is one timed template call.
type op struct {
	name    string
	sddmm   bool
	sampled bool
	parts   bool // on the graph uploaded in its partition's order (tcu.UploadCSROrder)
	msg     templates.Msg
	red     templates.Reduce
}

var ops = map[string]op{
	"copy_u_sum":  {name: "copy_u_sum", msg: templates.CopyU, red: templates.Sum},
	"u_mul_e_sum": {name: "u_mul_e_sum", msg: templates.UMulE, red: templates.Sum},
	"copy_u_mean": {name: "copy_u_mean", msg: templates.CopyU, red: templates.Mean},
	"copy_u_max":  {name: "copy_u_max", msg: templates.CopyU, red: templates.Max},
	"u_add_v_sum": {name: "u_add_v_sum", msg: templates.UAddV, red: templates.Sum},
	"u_dot_v":     {name: "u_dot_v", sddmm: true},
	// ES-SpMM's inference mode: copy_u sum on the cache-first sample, scaled.
	"copy_u_sum_es": {name: "copy_u_sum_es", msg: templates.CopyU, red: templates.Sum, sampled: true},
	// The same sums on the graph uploaded in its partition's order.
	"copy_u_sum_hp":  {name: "copy_u_sum_hp", msg: templates.CopyU, red: templates.Sum, parts: true},
	"u_mul_e_sum_hp": {name: "u_mul_e_sum_hp", msg: templates.UMulE, red: templates.Sum, parts: true},
}

func benchGraph(d *tcu.Device, name string, g templates.CSR, order []int32, o options) error {
	dg, err := d.UploadCSR(g, g.Rows())
	if err != nil {
		return err
	}
	defer dg.Close()
	hr, hc := dg.HeavyRows()
	fmt.Fprintf(os.Stderr, "# %s: %d heavy rows in %d chunks\n", name, hr, hc)
	var pg *tcu.FPGraph
	if order != nil {
		if pg, err = d.UploadCSROrder(g, order); err != nil {
			return err
		}
		defer pg.Close()
	}
	n, nnz := g.Rows(), g.NNZ()
	r := rand.New(rand.NewPCG(1, 2))
	w := randFloats(r, nnz)
	wbuf, err := upload(d, w)
	if err != nil {
		return err
	}
	defer wbuf.Free()
	// One random matrix for the widest f; narrower ones take its prefix.
	xs := randFloats(r, n*slices.Max(o.widths))
	for _, f := range o.widths {
		x := xs[:n*f]
		xbuf, err := upload(d, x)
		if err != nil {
			return err
		}
		out, err := d.Alloc(4 * max(n*f, nnz))
		if err != nil {
			xbuf.Free()
			return err
		}
		for _, opName := range o.ops {
			p, ok := ops[opName]
			if !ok {
				return fmt.Errorf("unknown op %q", opName)
			}
			if p.sampled {
				if err := benchSampled(d, name, g, dg, p, xbuf, out, f, o); err != nil {
					return err
				}
				continue
			}
			var c *tcu.FPCall
			switch {
			case p.sddmm:
				c, err = d.PrepareSDDMM(out, dg, tcu.SDDMMArgs{Op: templates.UDotV, X: xbuf, Y: xbuf, F: f})
			case p.parts:
				c, err = d.PrepareSpMM(out, pg, tcu.SpMMArgs{Msg: p.msg, Reduce: p.red, X: xbuf, E: wbuf, Y: xbuf, F: f, FE: 1})
			default:
				c, err = d.PrepareSpMM(out, dg, tcu.SpMMArgs{Msg: p.msg, Reduce: p.red, X: xbuf, E: wbuf, Y: xbuf, F: f, FE: 1})
			}
			if err != nil {
				return err
			}
			if p.parts {
				// At every width: the partitioned sums against the row-order kernel's.
				if err := sameAsRowOrder(d, c, dg, out, p, xbuf, wbuf, n*f); err != nil {
					fmt.Fprintf(os.Stderr, "# CHECK FAILED %s f=%d: %v\n", name, f, err)
					checkFailed = true
				}
			}
			if o.check && f == 16 {
				// A wrong result is reported and the timings go on; run fails at the end.
				if err := check(c, out, p, g, x, w, f); err != nil {
					fmt.Fprintf(os.Stderr, "# CHECK FAILED %s: %v\n", name, err)
					checkFailed = true
				}
			}
			med, per, samples, err := measure(c, o.budget)
			c.Close()
			if err != nil {
				return err
			}
			fmt.Printf("%s\t%s\t%d\tqgtc\t%.3f\n", name, p.name, f, float64(med)/1e3)
			fmt.Fprintf(os.Stderr, "# %s %s: %.1f us (median of %d × %d)\n", name, c, float64(med)/1e3, samples, per)
		}
		xbuf.Free()
		out.Free()
	}
	return nil
}

// benchSampled times p on ES-SpMM's sample of g at width f and logs how
// far its result is from the exact one (relative L2 error).
func benchSampled(d *tcu.Device, name string, g templates.CSR, dg *tcu.FPGraph, p op, xbuf, out *tcu.Buffer, f int, o options) error {
	sg, err := d.UploadSampledCSR(g, g.Rows(), o.esLimit, f)
	if err != nil {
		return err
	}
	defer sg.Close()
	exact, err := d.PrepareSpMM(out, dg, tcu.SpMMArgs{Msg: p.msg, Reduce: p.red, X: xbuf, F: f})
	if err != nil {
		return err
	}
	defer exact.Close()
	c, err := d.PrepareSpMM(out, sg, tcu.SpMMArgs{Msg: p.msg, Reduce: p.red, X: xbuf, F: f})
	if err != nil {
		return err
	}
	defer c.Close()
	n := g.Rows() * f
	want, got, err := runBoth(exact, c, out, n)
	if err != nil {
		return err
	}
	var num, den float64
	for i := range want {
		num += float64(got[i]-want[i]) * float64(got[i]-want[i])
		den += float64(want[i]) * float64(want[i])
	}
	med, per, samples, err := measure(c, o.budget)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\t%d\tqgtc\t%.3f\n", name, p.name, f, float64(med)/1e3)
	fmt.Fprintf(os.Stderr, "# %s %s: %.1f us (median of %d × %d); sample keeps %d of %d edges (limit %d), relative L2 error %.3g\n",
		name, c, float64(med)/1e3, samples, per, sg.NNZ(), g.NNZ(), o.esLimit, math.Sqrt(num/max(den, 1e-30)))
	return nil
}

// runInto fills out's first n floats with NaN (so a value the call leaves
// unwritten shows), runs c and returns them.
func runInto(c *tcu.FPCall, out *tcu.Buffer, n int) ([]float32, error) {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	if err := out.Write(asBytes(v)); err != nil {
		return nil, err
	}
	if err := c.Run(); err != nil {
		return nil, err
	}
	return v, out.Read(asBytes(v))
}

// runBoth runs the reference call ref, then c, each into out (runInto).
func runBoth(ref, c *tcu.FPCall, out *tcu.Buffer, n int) (want, got []float32, err error) {
	if want, err = runInto(ref, out, n); err != nil {
		return nil, nil, err
	}
	got, err = runInto(c, out, n)
	return want, got, err
}

// sameAsRowOrder runs c and the same op on the row-order graph dg (runInto)
// and compares the results: equal bit for bit, or within 1e-5 relative.
func sameAsRowOrder(d *tcu.Device, c *tcu.FPCall, dg *tcu.FPGraph, out *tcu.Buffer, p op, xbuf, wbuf *tcu.Buffer, n int) error {
	ref, err := d.PrepareSpMM(out, dg, tcu.SpMMArgs{Msg: p.msg, Reduce: p.red, X: xbuf, E: wbuf, Y: xbuf, F: n / dg.Rows(), FE: 1})
	if err != nil {
		return err
	}
	defer ref.Close()
	want, got, err := runBoth(ref, c, out, n)
	if err != nil {
		return err
	}
	differ, worst := 0, 0.0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			differ++
			worst = max(worst, math.Abs(float64(got[i]-want[i]))/max(math.Abs(float64(want[i])), 1e-30))
			if math.IsNaN(float64(got[i])) || math.IsNaN(float64(want[i])) {
				worst = math.Inf(1)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "# %v: %d of %d values differ in bits from the row-order kernel's (worst relative %.3g)\n", c, differ, n, worst)
	if worst > 1e-5 {
		return fmt.Errorf("%v: results differ from the row-order kernel's by up to %.3g relative", c, worst)
	}
	return nil
}

// partOrder partitions g into parts of about rows nodes (subgraph.Partition,
// seed 1; the graph is undirected) and returns its nodes part by part.
func partOrder(name string, g templates.CSR, rows int) ([]int32, error) {
	t0 := time.Now()
	sg := &subgraph.Graph{Indptr: g.Indptr, Indices: g.Indices}
	p, err := subgraph.Partition(sg, max(1, (g.Rows()+rows-1)/max(rows, 1)), subgraph.PartitionOptions{Seed: 1})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := p.Stats(sg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(os.Stderr, "# %s: %d parts of about %d nodes, %.1f%% of the edges inside a part (%v)\n", name, p.K, rows,
		100*st.KeptFraction, time.Since(t0).Round(time.Millisecond))
	_, order := p.Members()
	return order, nil
}

// writePartOrder writes g renumbered in order (order[i] becomes node i) as
// dir's indptr.npy and indices.npy, for the baselines on the order the
// ordered kernel sees.
func writePartOrder(dir string, g templates.CSR, order []int32) error {
	id := make([]int32, len(order))
	for i, v := range order {
		id[v] = int32(i)
	}
	indptr, indices := make([]int32, 1, len(order)+1), make([]int32, 0, g.NNZ())
	for _, v := range order {
		for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
			indices = append(indices, id[u])
		}
		indptr = append(indptr, int32(len(indices)))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeNPY(filepath.Join(dir, "indptr.npy"), indptr); err != nil {
		return err
	}
	return writeNPY(filepath.Join(dir, "indices.npy"), indices)
}

// measure picks per (runs between two events, about 1 ms) and samples
// (about 0.3·budget s in all, 5..50) from a first timing, and returns the
// median per-run time.
func measure(c *tcu.FPCall, budget float64) (time.Duration, int, int, error) {
	first, err := c.Time(3, 1)
	if err != nil {
		return 0, 0, 0, err
	}
	t1 := max(median(first), time.Microsecond)
	per := min(max(int(time.Millisecond/t1), 1), 100)
	samples := min(max(int(budget*0.3*float64(time.Second)/float64(t1*time.Duration(per))), 5), 50)
	ts, err := c.Time(samples, per)
	if err != nil {
		return 0, 0, 0, err
	}
	return median(ts), per, samples, nil
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

// check runs c once and compares out with the CPU template.
func check(c *tcu.FPCall, out *tcu.Buffer, p op, g templates.CSR, x, w []float32, f int) error {
	n, nnz := g.Rows(), g.NNZ()
	var want, scale []float32
	if p.sddmm {
		want, scale = make([]float32, nnz), make([]float32, nnz)
		if err := templates.SDDMM(want, g, templates.UDotV, x, x, f, 1, nil); err != nil {
			return err
		}
		if err := templates.SDDMM(scale, g, templates.UDotV, abs(x), abs(x), f, 1, nil); err != nil {
			return err
		}
	} else {
		want, scale = make([]float32, n*f), make([]float32, n*f)
		if err := templates.SpMM(want, g, p.msg, p.red, x, w, x, f, nil, nil); err != nil {
			return err
		}
		if err := templates.SpMM(scale, g, p.msg, p.red, abs(x), abs(w), abs(x), f, nil, nil); err != nil {
			return err
		}
	}
	if err := c.Run(); err != nil {
		return err
	}
	got := make([]float32, len(want))
	if err := out.Read(asBytes(got)); err != nil {
		return err
	}
	bad, first := 0, ""
	for i := range want {
		s := math.Max(math.Abs(float64(want[i])), math.Abs(float64(scale[i])))
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= 1e-5*s+1e-30) {
			if bad == 0 {
				first = fmt.Sprintf("[%d] = %g, want %g", i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%v: %d of %d values differ from the CPU templates beyond 1e-5, first %s", c, bad, len(want), first)
	}
	fmt.Fprintf(os.Stderr, "# check %s f=%d: %d values within 1e-5 of the CPU templates\n", p.name, f, len(want))
	return nil
}

func abs(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(math.Abs(float64(v)))
	}
	return y
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func upload(d *tcu.Device, x []float32) (*tcu.Buffer, error) {
	b, err := d.Alloc(4 * max(len(x), 1))
	if err != nil {
		return nil, err
	}
	if err := b.Write(asBytes(x)); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// asBytes views float32s as their bytes (the device's byte order is the host's).
func asBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}
