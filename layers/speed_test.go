package layers

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/cputime"
	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/layers/fp"
	"github.com/qgtc/qgtc/subgraph"
)

// speedTask is one graph cut into batches, with a GCN whose weights are
// shared by every implementation compared on it.
type speedTask struct {
	name    string
	ds      *subgraph.Dataset
	d       *Data
	fp      *Model // float weights
	classes int
}

var speedTasks = map[string]*speedTask{}

// speedData loads (once) the graphs of the speed comparison: Coauthor
// Physics cut by the multilevel partitioner into parts of ~2,000 nodes, and
// a 1M-node planted-partition graph whose 500 communities are the parts,
// with sparse binary bag-of-words features (512 columns, 16 per node).
func speedData(b *testing.B, name string) *speedTask {
	if t, ok := speedTasks[name]; ok {
		return t
	}
	var ds *subgraph.Dataset
	var parts []int32
	var k int
	src, extra := extraSpeedData()[name]
	switch {
	case extra:
		ds, parts, k = loadSpeedData(b, src)
	case name == "coauthor_physics":
		var err error
		ds, err = subgraph.Load(name)
		require.NoError(b, err)
		k = (ds.Graph.N() + 1999) / 2000
		p, err := subgraph.Partition(ds.Graph, k, subgraph.PartitionOptions{})
		require.NoError(b, err)
		parts = p.Parts
	case name == "planted-1m":
		const n, f = 1_000_000, 512
		k = 500
		g, comm, err := subgraph.PlantedPartition(n, k, 10, 0.1, 1)
		require.NoError(b, err)
		r := rand.New(rand.NewPCG(1, 2))
		feat := &subgraph.Features{Rows: n, Cols: f, Indptr: make([]int32, n+1)}
		labels := make([]int32, n)
		for v := 0; v < n; v++ {
			labels[v] = comm[v] % 10
			cols := map[int32]bool{}
			for len(cols) < 16 {
				c := int32(r.IntN(f))
				if r.IntN(2) == 0 {
					c = (comm[v]*7 + int32(r.IntN(8))) % f
				}
				cols[c] = true
			}
			for c := range cols {
				feat.Indices = append(feat.Indices, c)
			}
			row := feat.Indices[feat.Indptr[v]:]
			slices.Sort(row)
			feat.Indptr[v+1] = int32(len(feat.Indices))
		}
		ds = &subgraph.Dataset{Name: name, Graph: g, Features: feat, Labels: labels, NumClasses: 10}
		parts = comm
	}
	d, err := NewData(ds, parts, k, 1)
	require.NoError(b, err)
	fp, err := NewModel(GCN, ds.Features.Cols, 64, ds.NumClasses, 2, 4, 4, 1)
	require.NoError(b, err)
	t := &speedTask{name: name, ds: ds, d: d, fp: fp, classes: ds.NumClasses}
	speedTasks[name] = t
	return t
}

// speedSource is a graph of QGTC_SPEED_DATA: a dataset as --dataset
// takes it and, when given, a partition file (qgtc partition --out).
type speedSource struct{ dataset, partition string }

// extraSpeedData reads QGTC_SPEED_DATA: entries name=DATASET[,PARTITION]
// separated by ';', e.g. "synth-2m=/tmp/s2m.npz,/tmp/s2m.part" (the
// graphs bench/manycore/run.sh writes with qgtc data synth and cuts with
// qgtc partition, so that the CLI and the benchmark run the same batches).
func extraSpeedData() map[string]speedSource {
	out := map[string]speedSource{}
	for _, e := range strings.Split(os.Getenv("QGTC_SPEED_DATA"), ";") {
		name, src, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || name == "" {
			continue
		}
		ds, part, _ := strings.Cut(src, ",")
		out[name] = speedSource{ds, part}
	}
	return out
}

// loadSpeedData loads src's graph and its partition (or cuts it into
// parts of ~2,000 nodes).
func loadSpeedData(b *testing.B, src speedSource) (*subgraph.Dataset, []int32, int) {
	ds, err := subgraph.Load(src.dataset)
	require.NoError(b, err)
	require.NotNil(b, ds.Features, "%s has no node features", src.dataset)
	require.NotNil(b, ds.Labels, "%s has no labels", src.dataset)
	if src.partition != "" {
		f, err := subgraph.OpenPartition(src.partition, ds.Graph)
		require.NoError(b, err)
		return ds, f.Parts, f.K
	}
	k := (ds.Graph.N() + 1999) / 2000
	p, err := subgraph.Partition(ds.Graph, k, subgraph.PartitionOptions{})
	require.NoError(b, err)
	return ds, p.Parts, k
}

// BenchmarkQGCNSpeed compares, on the same batches and weights, one full
// inference pass of a 2-layer GCN (hidden 64): quantized on bit tensors at
// several widths (pack + compute), our full-precision path (package
// fp's GCN on templates.Sgemm and the sparse templates) and PyTorch fp32 on
// the CPU (sparse features and adjacency; run when /usr/bin/python3 has
// torch). Compare the ms/pass metric; nodes/s is over the same pass.
//
//	go test -run '^$' -bench QGCNSpeed -benchtime 3x ./layers
//
// QGTC_SPEED_DATA (see extraSpeedData) replaces the two graphs with others.
func BenchmarkQGCNSpeed(b *testing.B) {
	names := []string{"coauthor_physics", "planted-1m"}
	if extra := extraSpeedData(); len(extra) > 0 {
		names = names[:0]
		for n := range extra {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	for _, data := range names {
		b.Run("data="+data, func(b *testing.B) {
			t := speedData(b, data)
			// qgtc runs at each width with the aggregation the plan picks
			// (auto: the edge list on the CPU), and at 4 bits also with
			// every aggregation on the packed 1-bit adjacency (dense).
			// qgtc-batchwise never merges the batches into one pass (see
			// Plan.Merge): on a forking backend they then run side by side.
			type variant struct {
				name  string
				bits  int
				agg   AggMode
				merge MergeMode
			}
			var variants []variant
			for _, bits := range []int{1, 2, 4, 8} {
				variants = append(variants, variant{fmt.Sprintf("impl=qgtc/bits=%d", bits), bits, AggAuto, MergeAuto})
			}
			variants = append(variants, variant{"impl=qgtc-dense/bits=4", 4, AggDense, MergeAuto},
				variant{"impl=qgtc-batchwise/bits=4", 4, AggAuto, MergeOff})
			for _, v := range variants {
				b.Run(v.name, func(b *testing.B) {
					plan, in, sparse := speedPlan(b, t, v.bits, v.agg, v.merge)
					runtime.GC() // the setup's garbage (a 2M-node graph's) is not the passes' to collect
					b.ResetTimer()
					cpu0, ok0 := cputime.Process()
					var run *Result
					for i := 0; i < b.N; i++ {
						var err error
						run, err = plan.Run(t.d, in, sparse, nil)
						require.NoError(b, err)
					}
					b.StopTimer()
					reportPass(b, cpu0, ok0)
					pass := (run.Pack + run.Compute).Seconds()
					b.ReportMetric(float64(run.Nodes)/pass, "nodes/s")
					b.ReportMetric(float64(run.Stats.InterBytes), "interlayer-B")
				})
			}
			b.Run("impl=fp32-go", func(b *testing.B) {
				model, inputs := fp32Path(b, t)
				tp := nn.NewTape(false, nil)
				b.ResetTimer()
				cpu0, ok0 := cputime.Process()
				for i := 0; i < b.N; i++ {
					for _, in := range inputs {
						model.Forward(tp, in)
					}
				}
				b.StopTimer()
				reportPass(b, cpu0, ok0)
				b.ReportMetric(float64(t.ds.Graph.N())*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
			})
			b.Run("impl=paired/bits=4", func(b *testing.B) {
				pairedPasses(b, t, 4)
			})
			b.Run("impl=torch-fp32", func(b *testing.B) {
				// QGTC_TORCH_CPUS (e.g. "1,16") picks the thread counts at
				// which torch runs: each run exports and rebuilds the batches.
				if cpus := os.Getenv("QGTC_TORCH_CPUS"); cpus != "" && !slices.Contains(strings.Split(cpus, ","), strconv.Itoa(runtime.GOMAXPROCS(0))) {
					b.Skipf("QGTC_TORCH_CPUS=%s", cpus)
				}
				msPass := torchPass(b, t, b.N)
				b.ReportMetric(msPass, "ms/pass")
				b.ReportMetric(float64(t.ds.Graph.N())/(msPass/1000), "nodes/s")
			})
		})
	}
}

// pairedPasses alternates, b.N times, one quantized pass (bits wide,
// aggregation as --agg auto picks) and one pass of our fp32 path over the
// same batches, and reports the median wall time of each and their ratio
// (x_fp32). On this shared 2-core VM memory-bound passes can run at half
// speed for seconds at a time; passes taken in turn see the same machine,
// so the ratio holds where sequential sub-benchmarks drift.
func pairedPasses(b *testing.B, t *speedTask, bits int) {
	plan, in, sparse := speedPlan(b, t, bits, AggAuto, MergeAuto)
	model, inputs := fp32Path(b, t)
	tp := nn.NewTape(false, nil)
	var q, f []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_, err := plan.Run(t.d, in, sparse, nil)
		require.NoError(b, err)
		t1 := time.Now()
		for _, x := range inputs {
			model.Forward(tp, x)
		}
		t2 := time.Now()
		q = append(q, t1.Sub(t0).Seconds()*1000)
		f = append(f, t2.Sub(t1).Seconds()*1000)
	}
	b.StopTimer()
	mq, mf := qMedian(q), qMedian(f)
	b.ReportMetric(mq, "qgtc-ms/pass")
	b.ReportMetric(mf, "fp32-ms/pass")
	b.ReportMetric(mf/mq, "x_fp32")
}

// speedPlan quantizes t's features and weights to bits (post-training
// calibration), compiles the plan with aggregation mode agg on the
// CPU backend, and runs it once to fill the per-batch caches and the
// plan's output pool. It returns the
// plan, the features and whether the first product reads sparse codes.
func speedPlan(b *testing.B, t *speedTask, bits int, agg AggMode, merge MergeMode) (*Plan, *Input, bool) {
	in, err := QuantizeInput(t.ds.Features, bits)
	require.NoError(b, err)
	m := t.fp.Clone()
	m.ABits, m.WBits = bits, bits
	require.NoError(b, m.Calibrate(t.d, in, 2))
	plan, err := m.Compile(cpu.NewBackend(nil))
	require.NoError(b, err)
	plan.Agg, plan.Merge = agg, merge
	sparse := plan.SparseCheaper(in)
	_, err = plan.Run(t.d, in, sparse, nil) // warm: per-batch caches
	require.NoError(b, err)
	return plan, in, sparse
}

// qMedian is the median of x (x is reordered).
func qMedian(x []float64) float64 {
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}

// reportPass reports the wall time and the process CPU time (all
// threads, since cpu0) of one pass.
func reportPass(b *testing.B, cpu0 time.Duration, ok0 bool) {
	b.ReportMetric(1000*b.Elapsed().Seconds()/float64(b.N), "ms/pass")
	if cpu1, ok1 := cputime.Process(); ok0 && ok1 {
		b.ReportMetric(1000*(cpu1-cpu0).Seconds()/float64(b.N), "cpu-ms/pass")
	}
}

// fp32Path builds package fp's full-precision GCN with t's weights and
// one Input per batch (the batch's induced subgraph and feature rows), and
// checks on the first batch that it computes the simulation's fp32 logits.
func fp32Path(b *testing.B, t *speedTask) (fp.Model, []*fp.Input) {
	m, err := fp.New(fp.Config{Model: "gcn", In: t.ds.Features.Cols, Hidden: 64, Out: t.classes, Layers: 2}, 1)
	require.NoError(b, err)
	for _, p := range m.Params() {
		var i int
		var what string
		_, err := fmt.Sscanf(strings.ReplaceAll(p.Name, ".", " "), "convs %d %s", &i, &what)
		require.NoError(b, err, p.Name)
		l := &t.fp.Layers[i].Lin1
		switch p.Name {
		case fmt.Sprintf("convs.%d.lin.weight", i):
			copy(p.Data, l.W)
		case fmt.Sprintf("convs.%d.bias", i):
			copy(p.Data, l.B)
		default:
			b.Fatalf("unexpected GCN parameter %s", p.Name)
		}
	}
	var inputs []*fp.Input
	for _, bt := range t.d.Eval {
		g, err := t.ds.Graph.InducedSubgraph(bt.Nodes)
		require.NoError(b, err)
		f := t.ds.Features.SelectRows(bt.Nodes)
		if t.fp.NormRows {
			f = scaleFeatureRows(f, bt.FeatScale) // the input scale the other paths fold into the epilogue
		}
		in, err := fp.NewInput(g, f)
		require.NoError(b, err)
		inputs = append(inputs, in)
	}
	qin, err := QuantizeInput(t.ds.Features, 8)
	require.NoError(b, err)
	_, want, err := t.fp.simForward(t.d.Eval[0], qin, false, -1, 0, nil)
	require.NoError(b, err)
	got := m.Forward(nn.NewTape(false, nil), inputs[0]).Data
	require.Equal(b, len(want), len(got))
	for i := range want {
		require.InDelta(b, want[i], got[i], 1e-3*(1+math.Abs(float64(want[i]))), "fp32 paths disagree at %d", i)
	}
	return m, inputs
}

// scaleFeatureRows returns f with row r multiplied by scale[r].
func scaleFeatureRows(f *subgraph.Features, scale []float32) *subgraph.Features {
	out := *f
	if f.Dense != nil {
		out.Dense = make([]float32, len(f.Dense))
		for r := 0; r < f.Rows; r++ {
			for c := 0; c < f.Cols; c++ {
				out.Dense[r*f.Cols+c] = f.Dense[r*f.Cols+c] * scale[r]
			}
		}
		return &out
	}
	out.Values = make([]float32, len(f.Indices))
	for r := 0; r < f.Rows; r++ {
		for p := f.Indptr[r]; p < f.Indptr[r+1]; p++ {
			v := float32(1)
			if f.Values != nil {
				v = f.Values[p]
			}
			out.Values[p] = v * scale[r]
		}
	}
	return &out
}

// torchScript runs the GCN forward over exported batches in PyTorch and
// prints the mean milliseconds of a full pass, with the features sparse
// and (when a batch's n×F fits 2^26 values) dense, the faster counting.
const torchScript = `
import json, sys, time, torch
torch.set_num_threads(int(sys.argv[3]))
d = sys.argv[1]; reps = int(sys.argv[2])
meta = json.load(open(d + "/meta.json"))
def arr(name, dt):
    b = bytearray(open(d + "/" + name, "rb").read())
    return torch.frombuffer(b, dtype=dt) if len(b) else torch.zeros(0, dtype=dt)
api, aix, dinv = arr("adj_indptr", torch.int32), arr("adj_indices", torch.int32), arr("dinv", torch.float32)
xpt, xix, xv = arr("x_indptr", torch.int32), arr("x_indices", torch.int32), arr("x_vals", torch.float32)
F, H, C = meta["in"], meta["hidden"], meta["out"]
w1 = arr("w1", torch.float32).reshape(H, F).t().contiguous(); b1 = arr("b1", torch.float32)
w2 = arr("w2", torch.float32).reshape(C, H).t().contiguous(); b2 = arr("b2", torch.float32)
batches = []
ao = xo = 0
for bt in meta["batches"]:
    n, na, nx = bt["n"], bt["nnz_adj"], bt["nnz_x"]
    ip = api[bt["i"]: bt["i"] + n + 1].long()
    ix = aix[ao: ao + na].long()
    dv = dinv[bt["d"]: bt["d"] + n]
    rows = torch.repeat_interleave(torch.arange(n), ip[1:] - ip[:-1])
    vals = dv[rows] * dv[ix]
    A = torch.sparse_coo_tensor(torch.stack([rows, ix]), vals, (n, n)).coalesce()
    xp = xpt[bt["x"]: bt["x"] + n + 1].long()
    xi = xix[xo: xo + nx].long()
    xr = torch.repeat_interleave(torch.arange(n), xp[1:] - xp[:-1])
    X = torch.sparse_coo_tensor(torch.stack([xr, xi]), xv[xo: xo + nx], (n, F)).coalesce()
    batches.append((A, X, X.to_dense() if n * F <= (1 << 26) else None))
    ao += na; xo += nx
def run(dense):
    with torch.no_grad():
        for A, X, Xd in batches:
            xw = Xd @ w1 if dense else torch.sparse.mm(X, w1)
            h = torch.relu(torch.sparse.mm(A, xw) + b1)
            torch.sparse.mm(A, h @ w2) + b2
res = {"torch": torch.__version__, "threads": torch.get_num_threads()}
for dense in ([False, True] if all(b[2] is not None for b in batches) else [False]):
    t0 = time.perf_counter()
    run(dense)  # warm-up; when it is very slow it is the measurement
    first = time.perf_counter() - t0
    if first > 10:
        res["dense" if dense else "sparse"] = 1000 * first
        continue
    t0 = time.perf_counter()
    for _ in range(reps):
        run(dense)
    res["dense" if dense else "sparse"] = 1000 * (time.perf_counter() - t0) / reps
res["ms_per_pass"] = min(v for k, v in res.items() if k in ("dense", "sparse"))
print(json.dumps(res))
`

// torchPython is the first of $QGTC_PYTHON, /usr/bin/python3 and python3
// on the PATH that imports torch, or "".
func torchPython() string {
	cands := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("QGTC_PYTHON"); p != "" {
		cands = []string{p}
	}
	for _, py := range cands {
		if exec.Command(py, "-c", "import torch").Run() == nil {
			return py
		}
	}
	return ""
}

// torchPass exports t's batches and weights and times reps passes in
// PyTorch, returning the milliseconds of one pass. It skips when no
// python3 with torch is installed.
func torchPass(b *testing.B, t *speedTask, reps int) float64 {
	py := torchPython()
	if py == "" {
		b.Skipf("no PyTorch (neither $QGTC_PYTHON, /usr/bin/python3 nor python3 on the PATH imports torch); apt-get install -y python3-torch")
	}
	dir := b.TempDir()
	put := func(name string, v any) {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(b, err)
		require.NoError(b, binary.Write(f, binary.LittleEndian, v))
		require.NoError(b, f.Close())
	}
	var metas []map[string]int
	var api, aix, xpt, xix []int32
	var dinv, xv []float32
	in, err := QuantizeInput(t.ds.Features, 8)
	require.NoError(b, err)
	for _, bt := range t.d.Eval {
		m := map[string]int{"n": bt.N(), "nnz_adj": len(bt.Indices), "i": len(api), "d": len(dinv), "x": len(xpt)}
		api = append(api, bt.Indptr...)
		aix = append(aix, bt.Indices...)
		dinv = append(dinv, bt.DInv...)
		s := gatherInput(in, bt.Nodes, false)
		xpt = append(xpt, s.indptr...)
		xix = append(xix, s.indices...)
		for r := range bt.Nodes {
			scale := 1.0
			if t.fp.NormRows {
				scale = float64(bt.FeatScale[r]) // row normalization, as the other paths
			}
			for _, v := range s.vals[s.indptr[r]:s.indptr[r+1]] {
				xv = append(xv, float32(v*scale))
			}
		}
		m["nnz_x"] = len(s.indices)
		metas = append(metas, m)
	}
	put("adj_indptr", api)
	put("adj_indices", aix)
	put("dinv", dinv)
	put("x_indptr", xpt)
	put("x_indices", xix)
	put("x_vals", xv)
	l1, l2 := t.fp.Layers[0].Lin1, t.fp.Layers[1].Lin1
	put("w1", l1.W)
	put("b1", l1.B)
	put("w2", l2.W)
	put("b2", l2.B)
	meta, err := json.Marshal(map[string]any{"batches": metas, "in": l1.In, "hidden": l1.Out, "out": l2.Out})
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o644))
	script := filepath.Join(dir, "gcn.py")
	require.NoError(b, os.WriteFile(script, []byte(torchScript), 0o644))
	start := time.Now()
	out, err := exec.Command(py, script, dir, strconv.Itoa(reps), strconv.Itoa(runtime.GOMAXPROCS(0))).CombinedOutput()
	require.NoError(b, err, "%s", out)
	var res struct {
		MS      float64 `json:"ms_per_pass"`
		Sparse  float64 `json:"sparse"`
		Dense   float64 `json:"dense"`
		Torch   string  `json:"torch"`
		Threads int     `json:"threads"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NoError(b, json.Unmarshal([]byte(lines[len(lines)-1]), &res), "%s", out)
	b.Logf("torch %s, %d threads, %d passes (%v with loading): sparse features %.1f ms/pass, dense features %.1f ms/pass (0: too big); the faster is reported",
		res.Torch, res.Threads, reps, time.Since(start).Round(time.Millisecond), res.Sparse, res.Dense)
	return res.MS
}

// BenchmarkQFusion shows what inter-layer fusion saves on Cora's GCN and
// GIN at 4 bits: fused, each epilogue re-quantizes straight into the next
// product's packed operand; unfused, each product is materialised as int32,
// then as float32 after the epilogue, then quantized and packed. Both give
// the same logits; interlayer-B is what each stores between products.
func BenchmarkQFusion(b *testing.B) {
	ds, err := subgraph.Load("cora")
	require.NoError(b, err)
	d, err := NewData(ds, nil, 1, 1)
	require.NoError(b, err)
	in, err := QuantizeInput(ds.Features, 4)
	require.NoError(b, err)
	for _, kind := range []string{GCN, GIN} {
		m, err := NewModel(kind, ds.Features.Cols, 64, ds.NumClasses, 2, 4, 4, 1)
		require.NoError(b, err)
		require.NoError(b, m.Calibrate(d, in, 1))
		plan, err := m.Compile(cpu.NewBackend(nil))
		require.NoError(b, err)
		bt := d.Eval[0]
		x, err := in.Pack(bt.Nodes)
		require.NoError(b, err)
		want, _, err := plan.Forward(bt, x, nil)
		require.NoError(b, err)
		b.Run("model="+kind+"/impl=fused", func(b *testing.B) {
			var st Stats
			for i := 0; i < b.N; i++ {
				_, st, err = plan.Forward(bt, x, nil)
				require.NoError(b, err)
			}
			b.ReportMetric(float64(st.InterBytes), "interlayer-B")
		})
		b.Run("model="+kind+"/impl=unfused", func(b *testing.B) {
			var bytes int
			var got []float32
			for i := 0; i < b.N; i++ {
				got, bytes = unfusedForward(b, plan, bt, x)
			}
			b.ReportMetric(float64(bytes), "interlayer-B")
			require.Equal(b, want, got)
		})
	}
}

// unfusedForward is Forward without fusion: MulInt into an int32 matrix,
// the epilogue into a float32 matrix, then quantize and pack.
func unfusedForward(b *testing.B, p *Plan, bt *Batch, x *bittensor.Tensor) ([]float32, int) {
	cur, ph := x, p.Model.Input
	bytes := 0
	for i := range p.ops {
		op := &p.ops[i]
		var a, w *bittensor.Tensor
		var ep *bmm.Epilogue
		if op.kind == qLin {
			a, w = cur, packedWeights(b, p, i)
			ep = linEpilogue(op, ph, p.weights[i], op.lin.In, hostRowSums(cur), bt, true)
		} else {
			a, w = packedAdj(b, bt), cur
			ep = aggEpilogue(op, ph, cur.Cols(), bt, true)
		}
		c, err := bmm.MM2IntWith(bmm.Default(), a, w)
		require.NoError(b, err)
		m, n := a.Rows(), w.Cols()
		y := make([]float32, m*n)
		for r := 0; r < m; r++ {
			for j := 0; j < n; j++ {
				y[r*n+j] = ep.Apply(c[r*n+j], r, j)
			}
		}
		bytes += 4*len(c) + 4*len(y)
		if op.out == nil {
			return y, bytes
		}
		rq := requantOf(*op.out)
		codes := make([]int32, len(y))
		for k, v := range y {
			codes[k] = int32(rq.Quantize(v, op.out.Bits))
		}
		packing := bittensor.ByRows
		if i+1 < len(p.ops) && p.ops[i+1].kind == qAgg {
			packing = bittensor.ByCols
		}
		cur, err = bittensor.Pack(codes, m, n, op.out.Bits, packing, bittensor.DefaultPadding)
		require.NoError(b, err)
		bytes += 8 * len(cur.Words())
		ph = *op.out
	}
	return nil, bytes
}

// packedWeights is op i's weight codes packed by columns on the host, as
// Compile uploads them.
func packedWeights(b *testing.B, p *Plan, i int) *bittensor.Tensor {
	w, l := p.weights[i], p.ops[i].lin
	codes := make([]int32, len(w.codes))
	for j, c := range w.codes {
		codes[j] = int32(uint32(c))
	}
	t, err := bittensor.Pack(codes, l.In, l.Out, p.Model.WBits, bittensor.ByCols, bittensor.DefaultPadding)
	require.NoError(b, err)
	return t
}

// hostRowSums is the row sums of t's codes (the RowTerm a backend's
// RowSums computes).
func hostRowSums(t *bittensor.Tensor) []float32 {
	v := t.Ints()
	out := make([]float32, t.Rows())
	for r := range out {
		var s int64
		for _, c := range v[r*t.Cols() : (r+1)*t.Cols()] {
			s += int64(uint32(c))
		}
		out[r] = float32(s)
	}
	return out
}
