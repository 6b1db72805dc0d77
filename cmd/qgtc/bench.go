package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/cputime"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/templates"
)

// errNoGPU is returned by `bench --device gpu` when no GPU code is compiled in.
var errNoGPU = errors.New("no GPU benchmark compiled in")

func init() {
	register(&command{name: "bench", summary: "benchmark bit products: 'bench bmm' runs the aggregation grid", run: runBench})
}

// benchRow is one line of `qgtc bench bmm` (and one object of --json).
type benchRow struct {
	Name       string  `json:"name"`
	M          int     `json:"m"`
	K          int     `json:"k"`
	N          int     `json:"n"`
	ABits      int     `json:"a_bits"`
	BBits      int     `json:"b_bits"`
	Kernel     string  `json:"kernel"`
	Seconds    float64 `json:"seconds"`
	GOPS       float64 `json:"gops"`                        // logical 2·M·K·N / t
	BitGOPS    float64 `json:"bit_gops"`                    // GOPS · a_bits · b_bits
	MACsPerCyc float64 `json:"bit_macs_per_cycle_per_core"` // from CPU time when known, else wall time
	// MACsPerCycWall is from the fastest wall time over all the cores
	// GOMAXPROCS lets run: the CPU-time figure also counts the worker
	// team's polling between and at the end of parallel loops
	// (internal/par), which weighs most on products of a few µs.
	MACsPerCycWall float64 `json:"bit_macs_per_wall_cycle_per_core"`
	CPUSeconds     float64 `json:"cpu_seconds,omitempty"` // mean process CPU time per run
	FP32Seconds    float64 `json:"fp32_seconds,omitempty"`
	FP32CPU        float64 `json:"fp32_cpu_seconds,omitempty"`
	FP32GFLOPS     float64 `json:"fp32_gflops,omitempty"`
	Ratio          float64 `json:"speedup_vs_fp32,omitempty"`     // wall time ratio
	RatioCPU       float64 `json:"speedup_vs_fp32_cpu,omitempty"` // CPU time ratio
}

// benchReport is the --json output.
type benchReport struct {
	CPU        string     `json:"cpu"`
	Path       string     `json:"path"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	ClockGHz   float64    `json:"clock_ghz"`
	Rows       []benchRow `json:"rows"`
}

// parseInts reads a list of integers and lo-hi ranges, each value in
// [least, most]; the bounds are checked before a range is expanded, so
// "1-1000000000" is refused at once instead of filling memory.
func parseInts(flag, s string, least, most int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("%w: --%s %q: %q is not an integer", errUsage, flag, s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%w: --%s %q: bad range %q", errUsage, flag, s, f)
			}
		}
		for _, v := range []int{a, b} {
			if v < least || v > most {
				return nil, fmt.Errorf("%w: --%s %d is not in %d..%d", errUsage, flag, v, least, most)
			}
		}
		for v := a; v <= b; v++ {
			out = append(out, v)
		}
	}
	return out, nil
}

// maxBenchProducts bounds the grid (and the list of shapes built before
// the first product runs); the default grid has 72.
const maxBenchProducts = 10000

func runBench(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "bmm" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(w, "usage: qgtc bench bmm [--device cpu|gpu] [--n 1024,2048,4096] [--d 16,32,64] [--bits 1-8] [--a dense|blockdiag] [--impl PATH] [--time 300ms] [--no-fp32] [--json] [--quiet]")
			return nil
		}
		return fmt.Errorf("%w: want 'qgtc bench bmm [flags]', got %q", errUsage, args)
	}
	fs := newFlags("bench bmm", w)
	device := fs.String("device", "cpu", "cpu or gpu")
	ns := fs.String("n", "1024,2048,4096", "graph sizes N (A is N×N, 1 bit; each in 16..32768)")
	ds := fs.String("d", "16,32,64", "feature widths D (X is N×D; each in 1..4096)")
	bs := fs.String("bits", "1-8", "feature bit widths s (list or range, each in 1..16)")
	shape := fs.String("a", "dense", "adjacency: dense (random, half ones) or blockdiag (batched 1/16-size subgraphs, 2% ones)")
	impl := fs.String("impl", "", "CPU bit-kernel path (default the best; see 'qgtc info')")
	minTime := fs.Duration("time", 300*time.Millisecond, "least time spent on each product and on its fp32 GEMM (0: two runs each; CPU only)")
	noFP32 := fs.Bool("no-fp32", false, "skip the float32 GEMM baseline")
	asJSON := fs.Bool("json", false, "print JSON instead of a table (CPU only)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	// N up to 2^15 and s up to 16 keep every sum under 2^31 (bmm.MaxSum).
	nList, err := parseInts("n", *ns, 16, 1<<15)
	if err != nil {
		return err
	}
	dList, err := parseInts("d", *ds, 1, 4096)
	if err != nil {
		return err
	}
	bList, err := parseInts("bits", *bs, 1, 16)
	if err != nil {
		return err
	}
	if *shape != "dense" && *shape != "blockdiag" {
		return fmt.Errorf("%w: --a %q is neither dense nor blockdiag", errUsage, *shape)
	}
	if g := len(nList) * len(dList) * len(bList); g > maxBenchProducts {
		return fmt.Errorf("%w: --n, --d and --bits make a grid of %d products; at most %d", errUsage, g, maxBenchProducts)
	}
	if *minTime < 0 {
		return fmt.Errorf("%w: --time %v is negative", errUsage, *minTime)
	}
	var shapes []benchShape
	for _, n := range nList {
		for _, d := range dList {
			for _, s := range bList {
				sh := benchShape{Name: fmt.Sprintf("n=%d/d=%d/s=%d", n, d, s), M: n, K: n, N: d, ABits: 1, BBits: s, Density: 0.5}
				if *shape == "blockdiag" {
					sh.BlockDiag = max(1, n/16)
					sh.Density = 0.32 // inside the blocks: 2% of the whole
					sh.Name += "/a=blockdiag"
				}
				shapes = append(shapes, sh)
			}
		}
	}
	switch *device {
	case "gpu":
		// The GPU table times its own kernels and prints no JSON: refuse
		// the CPU-only flags rather than ignore them.
		for _, f := range []string{"impl", "json", "time"} {
			if fs.Changed(f) {
				return fmt.Errorf("%w: --%s applies to --device cpu only", errUsage, f)
			}
		}
		if gpuBenchBMM == nil {
			return fmt.Errorf("%w: this qgtc has no GPU backend (gpuBenchBMM is not set)", errNoGPU)
		}
		return gpuBenchBMM(shapes, w)
	case "cpu":
	default:
		return fmt.Errorf("%w: --device %q is neither cpu nor gpu", errUsage, *device)
	}
	k, err := cpu.NewKernel(*impl)
	if err != nil {
		return fmt.Errorf("%w: --impl: %v", errUsage, err)
	}
	rep := benchReport{CPU: cpu.CPUFeatures().Model, Path: k.Path(), GOMAXPROCS: runtime.GOMAXPROCS(0), ClockGHz: cpu.ClockHz() / 1e9}
	const rowFmt = "%6v %5v %3v %-9v %9v %18v %19v %12v %8v %10v\n"
	if !*asJSON {
		fmt.Fprintf(w, "kernel %s, GOMAXPROCS %d, clock %.2f GHz (calibrated), fp32 GEMM %s\n", k.Name(), rep.GOMAXPROCS, rep.ClockGHz, templates.SgemmImpl())
		fmt.Fprintln(w, "GOPS, best/cyc/core and 'x fp32': fastest wall time (over GOMAXPROCS cores); bit-MACs/cyc/core and 'x fp32 cpu': mean process CPU time per run (it includes the worker team's polling)")
		fmt.Fprintf(w, rowFmt, "N", "D", "s", "A", "GOPS", "bit-MACs/cyc/core", "best/cyc/core", "fp32 GFLOPS", "x fp32", "x fp32 cpu")
	}
	fp32A := map[int][]float32{}
	prog := progress.Stderr(*quiet)
	defer prog.Done()
	for i, sh := range shapes {
		prog.Printf("bench: product %d/%d (%s)", i+1, len(shapes), sh.Name)
		row, err := benchCPU(k, sh, *minTime, !*noFP32, fp32A)
		if err != nil {
			return fmt.Errorf("%s: %w", sh.Name, err)
		}
		rep.Rows = append(rep.Rows, row)
		if !*asJSON {
			a := "dense"
			if sh.BlockDiag > 0 {
				a = "blockdiag"
			}
			fmt.Fprintf(w, rowFmt, sh.M, sh.N, sh.BBits, a, fmt.Sprintf("%.1f", row.GOPS), fmt.Sprintf("%.1f", row.MACsPerCyc), fmt.Sprintf("%.1f", row.MACsPerCycWall),
				optF(row.FP32GFLOPS, "%.1f"), optF(row.Ratio, "%.2f"), optF(row.RatioCPU, "%.2f"))
		}
	}
	if *asJSON {
		return printJSON(w, rep)
	}
	return nil
}

func optF(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// benchA returns the values of the shape's A.
func benchA(sh benchShape, r *rand.Rand) []int32 {
	v := make([]int32, sh.M*sh.K)
	amax := uint64(1)<<sh.ABits - 1
	for i := 0; i < sh.M; i++ {
		j0, j1 := 0, sh.K
		if sh.BlockDiag > 0 {
			j0 = i / sh.BlockDiag * sh.BlockDiag
			j1 = min(sh.K, j0+sh.BlockDiag)
		}
		row := v[i*sh.K : (i+1)*sh.K]
		for j := j0; j < j1; j++ {
			if r.Float64() < sh.Density {
				row[j] = int32(1 + r.Uint64()%amax)
			}
		}
	}
	return v
}

// timeBest runs f at least twice and until minTime has passed. It returns
// the fastest run's wall time, the figure least disturbed by other work on
// the machine, and the mean process CPU time per run (0 where the OS gives
// none): the kernel's own cost, which other programs holding the cores do
// not inflate. The CPU time is a mean over the whole window because the
// OS brings other threads' CPU time up to date only every scheduler tick.
func timeBest(minTime time.Duration, f func() error) (wall, cpu time.Duration, err error) {
	wall = time.Duration(1 << 62)
	c0, ok := cputime.Process()
	start := time.Now()
	reps := 0
	for ; reps < 2 || time.Since(start) < minTime; reps++ {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, 0, err
		}
		wall = min(wall, time.Since(t0))
	}
	if c1, ok1 := cputime.Process(); ok && ok1 && c1 > c0 {
		cpu = (c1 - c0) / time.Duration(reps)
	}
	return wall, cpu, nil
}

func benchCPU(k bmm.Kernel, sh benchShape, minTime time.Duration, fp32 bool, fp32A map[int][]float32) (benchRow, error) {
	r := rand.New(rand.NewPCG(uint64(sh.M), uint64(sh.N*100+sh.BBits)))
	av := benchA(sh, r)
	bv := make([]int32, sh.K*sh.N)
	for i := range bv {
		bv[i] = int32(r.Uint64() & (1<<sh.BBits - 1))
	}
	a, err := bittensor.PackRows(av, sh.M, sh.K, sh.ABits)
	if err != nil {
		return benchRow{}, err
	}
	b, err := bittensor.PackCols(bv, sh.K, sh.N, sh.BBits)
	if err != nil {
		return benchRow{}, err
	}
	dst := make([]int32, sh.M*sh.N)
	best, bestCPU, err := timeBest(minTime, func() error { return k.MulInt(dst, a, b) })
	if err != nil {
		return benchRow{}, err
	}
	sec := best.Seconds()
	logical := 2 * float64(sh.M) * float64(sh.K) * float64(sh.N)
	bitMACs := logical / 2 * float64(sh.ABits*sh.BBits)
	row := benchRow{Name: sh.Name, M: sh.M, K: sh.K, N: sh.N, ABits: sh.ABits, BBits: sh.BBits, Kernel: k.Name(), Seconds: sec,
		GOPS: logical / sec / 1e9, BitGOPS: logical * float64(sh.ABits*sh.BBits) / sec / 1e9, CPUSeconds: bestCPU.Seconds()}
	row.MACsPerCycWall = bitMACs / sec / cpu.ClockHz() / float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
	row.MACsPerCyc = row.MACsPerCycWall
	if bestCPU > 0 {
		// Cycles the process ran on any core: per-core efficiency even
		// when other programs share the machine.
		row.MACsPerCyc = bitMACs / bestCPU.Seconds() / cpu.ClockHz()
	}
	if !fp32 {
		return row, nil
	}
	// The float32 GEMM of the same logical shape, on the same values.
	key := sh.M*1_000_003 + sh.K + 7*sh.BlockDiag
	af, ok := fp32A[key]
	if !ok {
		af = make([]float32, len(av))
		for i, x := range av {
			af[i] = float32(x)
		}
		clear(fp32A) // keep one N's matrix at a time
		fp32A[key] = af
	}
	bf := make([]float32, len(bv))
	for i, x := range bv {
		bf[i] = float32(x)
	}
	c := make([]float32, sh.M*sh.N)
	fbest, fcpu, err := timeBest(minTime, func() error {
		templates.Sgemm(false, false, sh.M, sh.N, sh.K, 1, af, sh.K, bf, sh.N, 0, c, sh.N)
		return nil
	})
	if err != nil {
		return benchRow{}, err
	}
	row.FP32Seconds = fbest.Seconds()
	row.FP32CPU = fcpu.Seconds()
	row.FP32GFLOPS = logical / fbest.Seconds() / 1e9
	row.Ratio = fbest.Seconds() / sec
	if fcpu > 0 && bestCPU > 0 {
		row.RatioCPU = fcpu.Seconds() / bestCPU.Seconds()
	}
	return row, nil
}
