package tcu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/templates"
)

// Every message, reduction and SDDMM op of the templates' spec has its
// CUDA form: a value added to the spec fails here until the GPU has it.
func TestFPSpecCoversTemplates(t *testing.T) {
	for m := templates.Msg(0); !strings.HasPrefix(m.String(), "Msg("); m++ {
		assert.Contains(t, fpMessages, m, "message %v", m)
	}
	for r := templates.Reduce(0); !strings.HasPrefix(r.String(), "Reduce("); r++ {
		assert.Contains(t, fpReductions, r, "reduction %v", r)
	}
	for o := templates.SDDMMOp(0); !strings.HasPrefix(o.String(), "SDDMMOp("); o++ {
		assert.Contains(t, fpSDDMMOps, o, "SDDMM op %v", o)
	}
}

func TestFPGeom(t *testing.T) {
	for _, f := range []int{1, 2, 3, 5, 16, 30, 64, 100, 128, 130, 256, 258, 512, 1000, 4096} {
		g := geomFor(f, f, fpMaxSlots)
		assert.Zero(t, f%g.vw, "f=%d: vw %d", f, g.vw)
		assert.True(t, g.g >= 1 && g.g <= 32 && g.g&(g.g-1) == 0, "f=%d: group %d", f, g.g)
		assert.True(t, g.r >= 1 && g.r <= fpMaxSlots, "f=%d: slots %d", f, g.r)
		assert.GreaterOrEqual(t, g.g*g.vw*g.r*g.tiles, f, "f=%d: %+v covers too few columns", f, g)
		assert.Less(t, g.g*g.vw*g.r*(g.tiles-1), f, "f=%d: %+v has an empty tile", f, g)
	}
	assert.Equal(t, fpGeom{vw: 4, g: 4, r: 1, u: 4, tiles: 1}, geomFor(16, 16, fpMaxSlots), "f=16 puts 8 rows in a warp")
	assert.Equal(t, fpGeom{vw: 4, g: 32, r: 2, u: 4, tiles: 1}, geomFor(256, 256, fpMaxSlots))
	// A head's columns start at a multiple of the head width: vw divides it and f.
	assert.Equal(t, 2, geomFor(6, 12, 16).vw)
}

// A message without edge values compiles to one variant for graphs with
// and without edge ids; one with edge values needs the ids.
func TestFPSourceEdgeIDs(t *testing.T) {
	gm := geomFor(16, 16, fpMaxSlots)
	src := func(m templates.Msg, ew int, eid bool) string {
		s, err := spmmSource(m, templates.Max, ew, eid, false, gm)
		require.NoError(t, err)
		return s
	}
	assert.Equal(t, src(templates.UAddV, ewNone, false), src(templates.UAddV, ewNone, true))
	assert.NotEqual(t, src(templates.UMulE, ewScalar, false), src(templates.UMulE, ewScalar, true))
}

// TestFPKernelSyntax compiles generated variants of the fp kernels with
// clang++ in CUDA syntax-only mode (see TestKernelSyntax): every message ×
// reduction × edge mode with and without edge ids, at narrow and wide
// geometries, every SDDMM op, and the dense kernels (fp_dense.cu).
func TestFPKernelSyntax(t *testing.T) {
	clang, err := exec.LookPath("clang++")
	if err != nil {
		t.Skip("no clang++ on PATH: the CUDA syntax check needs it (apt install clang)")
	}
	var preludes []string
	for _, h := range []string{"testdata/cuda_syntax.h", "testdata/cuda_syntax_fp.h"} {
		p, err := filepath.Abs(h)
		require.NoError(t, err)
		preludes = append(preludes, "-include", p)
	}
	flags := append([]string{"-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib",
		"-fsyntax-only", "-std=c++17"}, preludes...)
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.cu")
	require.NoError(t, os.WriteFile(probe, []byte("__global__ void probe(int* p) { p[threadIdx.x] = 0; }\n"), 0o644))
	if out, err := exec.Command(clang, append(flags, probe)...).CombinedOutput(); err != nil {
		t.Skipf("%s cannot check CUDA for sm_80 with these flags: %v\n%s", clang, err, out)
	}
	// One file per variant, checked in batches (one clang per batch).
	var files []string
	write := func(name, src string) {
		p := filepath.Join(dir, name+".cu")
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		files = append(files, p)
	}
	for _, f := range []int{3, 256} {
		gm := geomFor(f, f, fpMaxSlots)
		for m, mm := range fpMessages {
			ews := []int{ewNone}
			if mm.e {
				ews = []int{ewScalar, ewVector, ewHeads}
			}
			for r := range fpReductions {
				for _, ew := range ews {
					for _, eid := range []bool{false, true} {
						src, err := spmmSource(m, r, ew, eid, eid && r == templates.Sum, gm)
						require.NoError(t, err)
						write(fmt.Sprintf("spmm_%v_%v_f%d_ew%d_eid%v", m, r, f, ew, eid), src)
					}
				}
			}
		}
		for op := range fpSDDMMOps {
			for _, eid := range []bool{false, true} {
				src, err := sddmmSource(op, eid, gm)
				require.NoError(t, err)
				write(fmt.Sprintf("sddmm_%v_f%d_eid%v", op, f, eid), src)
			}
		}
	}
	write("fp_dense", denseSource())
	slices.Sort(files)
	const batch = 16
	for i := 0; i < len(files); i += batch {
		part := files[i:min(i+batch, len(files))]
		t.Run(filepath.Base(part[0]), func(t *testing.T) {
			t.Parallel()
			for _, p := range part {
				out, err := exec.Command(clang, append(slices.Clone(flags), p)...).CombinedOutput()
				require.NoError(t, err, "%s\n%s", filepath.Base(p), out)
			}
		})
	}
}

// skewedCSR is a random pull CSR on rows destination rows over nsrc
// sources with skewed degrees: empty rows, rows of a few edges, and hubs
// of thousands (heavy rows, split into chunks); with edge ids shuffled
// when ids is set.
func skewedCSR(r *rand.Rand, rows, nsrc int, ids bool) templates.CSR {
	return randCSR(r, rows, nsrc, ids, func(r *rand.Rand) int {
		switch x := r.IntN(100); {
		case x < 15:
			return 0
		case x < 85:
			return 1 + r.IntN(12)
		case x < 97:
			return 30 + r.IntN(200)
		default:
			return 1000 + r.IntN(3000)
		}
	})
}

// randCSR draws a CSR of rows rows over nsrc sources, each row's degree
// from deg, with a random permutation as edge ids when ids is set.
func randCSR(r *rand.Rand, rows, nsrc int, ids bool, deg func(*rand.Rand) int) templates.CSR {
	indptr := make([]int32, rows+1)
	var idx []int32
	for v := 0; v < rows; v++ {
		for range deg(r) {
			idx = append(idx, int32(r.IntN(nsrc)))
		}
		indptr[v+1] = int32(len(idx))
	}
	g := templates.CSR{Indptr: indptr, Indices: idx}
	if ids {
		g.EdgeIDs = make([]int32, len(idx))
		for i, p := range r.Perm(len(idx)) {
			g.EdgeIDs[i] = int32(p)
		}
	}
	return g
}

// The conformance tests' graphs: each from its own random stream, so that
// TestFPTestGraphsSkewed checks the very graphs without a GPU.
const (
	fpSpMMRows, fpSpMMSources     = 400, 900
	fpSDDMMRows, fpSDDMMSources   = 400, 800
	fpSampledRows, fpSampledLimit = 400, 32
)

func fpSpMMGraph(ids bool) templates.CSR {
	return skewedCSR(rand.New(rand.NewPCG(21, uint64(b2i(ids)))), fpSpMMRows, fpSpMMSources, ids)
}

func fpSDDMMGraph(ids bool) templates.CSR {
	return skewedCSR(rand.New(rand.NewPCG(22, uint64(b2i(ids)))), fpSDDMMRows, fpSDDMMSources, ids)
}

func fpSampledGraph() templates.CSR {
	return skewedCSR(rand.New(rand.NewPCG(23, 1)), fpSampledRows, fpSpMMSources, true)
}

func TestFPTestGraphsSkewed(t *testing.T) {
	for _, ids := range []bool{false, true} {
		requireSkew(t, fpSpMMGraph(ids))
		requireSkew(t, fpSDDMMGraph(ids))
	}
	g := fpSampledGraph()
	requireSkew(t, g)
	// The sampled test needs rows past its limit.
	s, _, _ := templates.SampleCSR(g, fpSampledLimit, 1000, true)
	require.Less(t, s.NNZ(), g.NNZ())
}

// requireSkew checks that g has what the conformance tests are about:
// an empty row and a row of thousands of edges.
func requireSkew(t *testing.T, g templates.CSR) {
	t.Helper()
	minDeg, maxDeg := math.MaxInt, 0
	for v := 0; v < g.Rows(); v++ {
		deg := int(g.Indptr[v+1] - g.Indptr[v])
		minDeg, maxDeg = min(minDeg, deg), max(maxDeg, deg)
	}
	require.Zero(t, minDeg, "the graph has an empty row")
	require.GreaterOrEqual(t, maxDeg, 1000, "the graph has a row of thousands of edges")
	t.Logf("graph: %d rows, %d edges, max degree %d", g.Rows(), g.NNZ(), maxDeg)
}

func randFloats(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// closeTo checks got against want elementwise: |got−want| ≤ 1e-5·scale,
// where scale[i] is the same reduction over the absolute values of the
// terms (a sum's rounding error is relative to it, not to a result that
// cancels to near zero), or |want| where scale is nil.
func closeTo(t *testing.T, what string, got, want, scale []float32) {
	t.Helper()
	require.Len(t, got, len(want))
	bad := 0
	for i := range want {
		s := math.Abs(float64(want[i]))
		if scale != nil {
			s = math.Max(s, math.Abs(float64(scale[i])))
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= 1e-5*s+1e-30) {
			if bad < 5 {
				t.Errorf("%s: [%d] = %g, want %g (scale %g)", what, i, got[i], want[i], s)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off", what, bad, len(want))
	}
}

func absAll(x []float32) []float32 {
	if x == nil {
		return nil
	}
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(math.Abs(float64(v)))
	}
	return y
}

// fpWidths are the conformance suite's feature widths: scalar, odd,
// float4-aligned narrow and wide, float2-only (130), and two slots.
var fpWidths = []int{1, 3, 16, 64, 130, 256}

var (
	fpOnce sync.Once
	fpDev  *Device // closed by TestMain
	fpErr  error
)

// fpDevice opens device 0 once for the fp tests, or skips. It is not
// gpuKernel's: the fp kernels need no bit kernel, whose wgmma self-check
// would compile the bit kernels first.
func fpDevice(t testing.TB) *Device {
	if testing.Short() {
		t.Skip("GPU conformance is not short")
	}
	fpOnce.Do(func() {
		fpDev, fpErr = Open(0)
		if fpErr == nil {
			fmt.Fprintf(os.Stderr, "tcu fp: %v; NVRTC %s\n", fpDev.Info(), fpDev.NVRTCVersion())
		}
	})
	if errors.Is(fpErr, ErrUnavailable) {
		t.Skipf("no GPU: %v", fpErr)
	}
	require.NoError(t, fpErr)
	return fpDev
}

// TestFPSpMMConformance runs every message × reduction on skewed random
// graphs against templates.SpMM (relative 1e-5): with and without edge
// ids, edge values per edge, per column and per head, and a graph with a
// small heavy limit so most rows go through chunks and the combine.
func TestFPSpMMConformance(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(20, 1))
	// A few hundred rows keep the CPU references and the per-column edge
	// operands (nnz·f floats) small; skewedCSR still gives hubs.
	const rows, nsrc = fpSpMMRows, fpSpMMSources
	for _, ids := range []bool{false, true} {
		g := fpSpMMGraph(ids)
		requireSkew(t, g)
		dg, err := d.UploadCSR(g, nsrc)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		hr, _ := dg.HeavyRows()
		require.Positive(t, hr, "the graph has rows past the heavy limit")
		small, err := d.uploadCSR(g, nsrc, 8, 3)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, small.Close()) })
		for _, f := range fpWidths {
			spmmWidth(t, d, r, fmt.Sprintf("ids=%v/f=%d", ids, f), g, nsrc, f, dg, small)
		}
	}
}

// spmmWidth draws x, y and the edge values (per edge, 2 per edge, f per
// edge) for g at width f, then in a parallel subtest runs every message ×
// reduction on each uploaded copy of g against templates.SpMM (relative
// 1e-5). Each variant is logged as it finishes (CPU reference and device
// time; the first device call of a variant includes its compile), so that
// a run cut off by a timeout shows where it was.
func spmmWidth(t *testing.T, d *Device, r *rand.Rand, name string, g templates.CSR, nsrc, f int, graphs ...*FPGraph) {
	rows := g.Rows()
	x, y := randFloats(r, nsrc*f), randFloats(r, rows*f)
	es := map[int][]float32{}
	for _, fe := range []int{1, 2, f} {
		if f%fe == 0 {
			es[fe] = randFloats(r, g.NNZ()*fe)
		}
	}
	// Each width in parallel: the variants compile concurrently.
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		for m, mm := range fpMessages {
			fes := []int{1}
			if mm.e {
				fes = slices.Sorted(maps.Keys(es))
			}
			for red := range fpReductions {
				for _, fe := range fes {
					xs, ys, e := x, y, es[fe]
					if !mm.x {
						xs = nil
					}
					if !mm.y {
						ys = nil
					}
					if !mm.e {
						e = nil
					}
					what := fmt.Sprintf("%v %v fe=%d", m, red, fe)
					t0 := time.Now()
					want := make([]float32, rows*f)
					require.NoError(t, templates.SpMM(want, g, m, red, xs, e, ys, f, nil, nil), what)
					var scale []float32
					if red == templates.Sum || red == templates.Mean {
						scale = make([]float32, rows*f)
						require.NoError(t, templates.SpMM(scale, g, m, red, absAll(xs), absAll(e), absAll(ys), f, nil, nil))
					}
					t1 := time.Now()
					for _, gg := range graphs {
						got := make([]float32, rows*f)
						require.NoError(t, runSpMM(d, got, gg, m, red, xs, e, ys, f, fe), what)
						closeTo(t, fmt.Sprintf("%s heavy=%d ordered=%v", what, gg.heavy, gg.Ordered()), got, want, scale)
					}
					t.Logf("%s: cpu %v, device %v", what, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
				}
			}
		}
	})
}

// TestFPSampledSpMM checks ES-SpMM's mode (UploadSampledCSR) against the
// CPU templates on the same sample (templates.SampleCSR with the device's
// window), sums scaled by deg(v)/kept(v), edge values read by g's ids.
func TestFPSampledSpMM(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(20, 4))
	const rows, nsrc, limit = fpSampledRows, fpSpMMSources, fpSampledLimit
	g := fpSampledGraph()
	requireSkew(t, g)
	for _, f := range []int{16, 130} {
		dg, err := d.UploadSampledCSR(g, nsrc, limit, f)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		require.True(t, dg.Sampled())
		s, orig, scale := templates.SampleCSR(g, limit, d.sampleWindow(f), true)
		require.Equal(t, s.NNZ(), dg.NNZ())
		require.Less(t, s.NNZ(), g.NNZ(), "the sample drops edges")
		x := randFloats(r, nsrc*f)
		for _, c := range []struct {
			m   templates.Msg
			red templates.Reduce
			fe  int
		}{{templates.CopyU, templates.Sum, 1}, {templates.UMulE, templates.Sum, 1}, {templates.UMulE, templates.Sum, f},
			{templates.CopyU, templates.Mean, 1}, {templates.CopyU, templates.Max, 1}} {
			t.Run(fmt.Sprintf("f=%d/%v_%v/fe=%d", f, c.m, c.red, c.fe), func(t *testing.T) {
				var e, es []float32
				if c.m == templates.UMulE {
					e = randFloats(r, g.NNZ()*c.fe)
					es = make([]float32, len(orig)*c.fe)
					for p, id := range orig {
						copy(es[p*c.fe:(p+1)*c.fe], e[int(id)*c.fe:(int(id)+1)*c.fe])
					}
				}
				want, mag := make([]float32, rows*f), make([]float32, rows*f)
				require.NoError(t, templates.SpMM(want, s, c.m, c.red, x, es, nil, f, nil, nil))
				require.NoError(t, templates.SpMM(mag, s, c.m, c.red, absAll(x), absAll(es), nil, f, nil, nil))
				if c.red == templates.Sum {
					for i := range want {
						want[i] *= scale[i/f]
						mag[i] *= scale[i/f]
					}
				}
				got := make([]float32, rows*f)
				require.NoError(t, runSpMM(d, got, dg, c.m, c.red, x, e, nil, f, c.fe))
				closeTo(t, "sampled", got, want, mag)
			})
		}
	}
}

// runSpMM is SpMMHost on an uploaded graph.
func runSpMM(d *Device, out []float32, g *FPGraph, m templates.Msg, red templates.Reduce, x, e, y []float32, f, fe int) error {
	return d.hostCall(out, [][]float32{x, e, y}, func(o *Buffer, in []*Buffer) (*FPCall, error) {
		return d.PrepareSpMM(o, g, SpMMArgs{Msg: m, Reduce: red, X: in[0], E: in[1], Y: in[2], F: f, FE: fe})
	})
}

// TestFPSDDMMConformance checks every SDDMM op (u_dot_v with one head
// and with several) against templates.SDDMM on skewed graphs, with the
// default heavy limit and with one that chunks most rows.
func TestFPSDDMMConformance(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(20, 2))
	const rows, nsrc = fpSDDMMRows, fpSDDMMSources
	for _, ids := range []bool{false, true} {
		g := fpSDDMMGraph(ids)
		requireSkew(t, g)
		dg, err := d.UploadCSR(g, nsrc)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		small, err := d.uploadCSR(g, nsrc, 8, 3)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, small.Close()) })
		for _, f := range fpWidths {
			x, y := randFloats(r, nsrc*f), randFloats(r, rows*f)
			t.Run(fmt.Sprintf("ids=%v/f=%d", ids, f), func(t *testing.T) {
				t.Parallel()
				for op := range fpSDDMMOps {
					for _, heads := range []int{1, 2, 4} {
						if (op != templates.UDotV && heads > 1) || f%heads != 0 {
							continue
						}
						what := fmt.Sprintf("%v heads=%d", op, heads)
						t0 := time.Now()
						width := f
						if op == templates.UDotV {
							width = heads
						}
						want := make([]float32, g.NNZ()*width)
						require.NoError(t, templates.SDDMM(want, g, op, x, y, f, heads, nil), what)
						var scale []float32
						if op == templates.UDotV {
							scale = make([]float32, len(want))
							require.NoError(t, templates.SDDMM(scale, g, op, absAll(x), absAll(y), f, heads, nil))
						}
						t1 := time.Now()
						for _, gg := range []*FPGraph{dg, small} {
							got := make([]float32, len(want))
							require.NoError(t, d.hostCall(got, [][]float32{x, y}, func(o *Buffer, in []*Buffer) (*FPCall, error) {
								return d.PrepareSDDMM(o, gg, SDDMMArgs{Op: op, X: in[0], Y: in[1], F: f, Heads: heads})
							}), what)
							closeTo(t, fmt.Sprintf("%s heavy=%d", what, gg.heavy), got, want, scale)
						}
						t.Logf("%s: cpu %v, device %v", what, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
					}
				}
			})
		}
	}
}

// The host helpers on edge cases: a graph without edges, a graph without
// rows, and shapes that do not fit.
func TestFPEdgeCases(t *testing.T) {
	d := fpDevice(t)
	empty := templates.CSR{Indptr: []int32{0, 0, 0}}
	out := []float32{7, 7, 7, 7}
	require.NoError(t, d.SpMMHost(out, empty, templates.CopyU, templates.Max, []float32{1, 2}, nil, nil, 2))
	assert.Equal(t, []float32{0, 0, 0, 0}, out)
	none := templates.CSR{Indptr: []int32{0}}
	require.NoError(t, d.SpMMHost(nil, none, templates.CopyU, templates.Sum, []float32{1}, nil, nil, 1))
	require.NoError(t, d.SDDMMHost(nil, empty, templates.UDotV, []float32{1, 2}, []float32{1, 2, 3, 4}, 2, 1))
	g := templates.CSR{Indptr: []int32{0, 1}, Indices: []int32{5}}
	assert.Error(t, d.SpMMHost(make([]float32, 2), g, templates.CopyU, templates.Sum, []float32{1, 2}, nil, nil, 2), "index past x")
	dg, err := d.UploadCSR(templates.CSR{Indptr: []int32{0, 1}, Indices: []int32{0}}, 1)
	require.NoError(t, err)
	defer dg.Close()
	small, err := d.Alloc(4)
	require.NoError(t, err)
	defer small.Free()
	_, err = d.PrepareSpMM(small, dg, SpMMArgs{Msg: templates.CopyU, Reduce: templates.Sum, X: small, F: 2})
	assert.ErrorIs(t, err, ErrShape, "out of 1 float for 2")
	_, err = d.PrepareSDDMM(small, dg, SDDMMArgs{Op: templates.UDotV, X: small, Y: small, F: 3, Heads: 2})
	assert.ErrorIs(t, err, ErrShape, "heads that do not divide f")
}

// fpEmuCase is one emulated launch of TestFPKernelEmulated.
type fpEmuCase struct {
	sddmm    bool
	msg      templates.Msg
	red      templates.Reduce
	op       templates.SDDMMOp
	f, fe    int // fe: edge values per edge (SpMM) or heads (u_dot_v)
	ids      bool
	heavy, c int  // split limits (templates' defaults when 0)
	sampled  bool // ES-SpMM: the graph is SampleCSR's (limit 20), sums scaled
	ordered  bool // a square graph, its light rows visited in a random order (UploadCSROrder)
}

func (c fpEmuCase) String() string {
	if c.sddmm {
		return fmt.Sprintf("sddmm_%v_f%d_h%d_ids%v_heavy%d", c.op, c.f, c.fe, c.ids, c.heavy)
	}
	return fmt.Sprintf("spmm_%v_%v_f%d_fe%d_ids%v_heavy%d_sampled%v_ordered%v", c.msg, c.red, c.f, c.fe, c.ids, c.heavy, c.sampled, c.ordered)
}

// TestFPKernelEmulated runs generated fp kernels on the CPU, compiled as
// C++ by clang++ with testdata/fp_emu.h (lanes as coroutines meeting at
// every shuffle), on a small skewed graph, against the CPU templates: the
// kernels' indexing, group masks, shuffles and the heavy-row split are
// checked here, before a GPU sees them. The GPU conformance tests remain
// the word on NVRTC, the memory model and speed.
func TestFPKernelEmulated(t *testing.T) {
	clang := emuTool(t)
	mainSrc, err := os.ReadFile("testdata/fp_emu_main.inc")
	require.NoError(t, err)
	var cases []fpEmuCase
	for m, mm := range fpMessages {
		fes := []int{1}
		if mm.e {
			fes = []int{1, 2, 16}
		}
		for _, fe := range fes {
			cases = append(cases, fpEmuCase{msg: m, red: templates.Sum, f: 16, fe: fe, ids: fe == 2})
		}
	}
	for _, red := range []templates.Reduce{templates.Mean, templates.Max, templates.Min} {
		cases = append(cases, fpEmuCase{msg: templates.CopyU, red: red, f: 130, fe: 1, ids: true, heavy: 8, c: 3},
			fpEmuCase{msg: templates.UAddV, red: red, f: 3, fe: 1})
	}
	cases = append(cases,
		fpEmuCase{msg: templates.CopyU, red: templates.Sum, f: 1, fe: 1, heavy: 8, c: 3},
		fpEmuCase{msg: templates.UMulE, red: templates.Max, f: 256, fe: 1, ids: true},
		fpEmuCase{msg: templates.UMulE, red: templates.Sum, f: 16, fe: 1, sampled: true, heavy: 8, c: 3},
		fpEmuCase{msg: templates.CopyU, red: templates.Mean, f: 64, fe: 1, sampled: true},
		fpEmuCase{sddmm: true, op: templates.UDotV, f: 16, fe: 1},
		fpEmuCase{sddmm: true, op: templates.UDotV, f: 16, fe: 2, ids: true, heavy: 8, c: 3},
		fpEmuCase{sddmm: true, op: templates.UDotV, f: 130, fe: 1, ids: true},
		fpEmuCase{sddmm: true, op: templates.UDotV, f: 1, fe: 1},
		fpEmuCase{sddmm: true, op: templates.UMulVOp, f: 3, fe: 1, heavy: 8, c: 3},
		fpEmuCase{sddmm: true, op: templates.USubVOp, f: 256, fe: 1, ids: true},
		fpEmuCase{msg: templates.CopyU, red: templates.Sum, f: 16, fe: 1, heavy: 8, c: 3, ordered: true},
		fpEmuCase{msg: templates.UMulE, red: templates.Max, f: 130, fe: 1, ids: true, ordered: true},
		fpEmuCase{msg: templates.UAddV, red: templates.Mean, f: 256, fe: 1, ids: true, heavy: 8, c: 3, ordered: true})
	r := rand.New(rand.NewPCG(20, 3))
	const rows, nsrc = 90, 110
	graphs := map[bool]templates.CSR{false: emuCSR(r, rows, nsrc, false), true: emuCSR(r, rows, nsrc, true)}
	square := map[bool]templates.CSR{false: emuCSR(r, rows, rows, false), true: emuCSR(r, rows, rows, true)}
	dir := t.TempDir()
	for _, c := range cases {
		g, ns := graphs[c.ids], nsrc
		if c.ordered {
			g, ns = square[c.ids], rows
		}
		f := c.f
		x, y := randFloats(r, ns*f), randFloats(r, rows*f)
		var order []int32
		if c.ordered {
			order = randOrder(r, rows)
		}
		var e []float32
		if !c.sddmm && fpMessages[c.msg].e {
			e = randFloats(r, g.NNZ()*c.fe)
		}
		// The CPU reference of a sampled case runs on the sample with its
		// edge values gathered by position, scaled afterwards.
		gRef, eRef := g, e
		var scale []float32
		if c.sampled {
			var orig []int32
			gRef, orig, scale = templates.SampleCSR(g, 20, 30, true)
			require.Less(t, gRef.NNZ(), g.NNZ(), "the sample drops edges")
			g = gRef
			g.EdgeIDs = orig
			if e != nil {
				eRef = make([]float32, len(orig)*c.fe)
				for p, id := range orig {
					copy(eRef[p*c.fe:(p+1)*c.fe], e[int(id)*c.fe:(int(id)+1)*c.fe])
				}
			}
		}
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			heavy, chunk := fpHeavy, fpChunk
			if c.heavy > 0 {
				heavy, chunk = c.heavy, c.c
			}
			chunks, hrows := splitRows(g.Indptr, heavy, chunk)
			var src string
			var gm fpGeom
			var want, mag []float32
			var outLen int
			if c.sddmm {
				width, gmm, err := sddmmGeom(c.op == templates.UDotV, f, c.fe)
				require.NoError(t, err)
				gm = gmm
				src, err = sddmmSource(c.op, c.ids, gm)
				require.NoError(t, err)
				src += "#define EMU_SDDMM 1\n"
				outLen = g.NNZ() * width
				want = make([]float32, outLen)
				require.NoError(t, templates.SDDMM(want, g, c.op, x, y, f, c.fe, nil))
				if c.op == templates.UDotV {
					mag = make([]float32, outLen)
					require.NoError(t, templates.SDDMM(mag, g, c.op, absAll(x), absAll(y), f, c.fe, nil))
				}
			} else {
				mm := fpMessages[c.msg]
				ew, err := edgeMode(mm, f, c.fe)
				require.NoError(t, err)
				gm = geomFor(f, f, fpMaxSlots)
				src, err = spmmSource(c.msg, c.red, ew, g.EdgeIDs != nil, c.sampled && c.red == templates.Sum, gm)
				require.NoError(t, err)
				outLen = rows * f
				xs, ys := x, y
				if !mm.x {
					xs = nil
				}
				if !mm.y {
					ys = nil
				}
				x, y = xs, ys
				want = make([]float32, outLen)
				require.NoError(t, templates.SpMM(want, gRef, c.msg, c.red, xs, eRef, ys, f, nil, nil))
				if c.red == templates.Sum || c.red == templates.Mean {
					mag = make([]float32, outLen)
					require.NoError(t, templates.SpMM(mag, gRef, c.msg, c.red, absAll(xs), absAll(eRef), absAll(ys), f, nil, nil))
				}
				if c.sampled && c.red == templates.Sum {
					for i := range want {
						want[i] *= scale[i/f]
						mag[i] *= scale[i/f]
					}
				}
			}
			prog := emuBuild(t, clang, dir, c.String(), src+string(mainSrc), "testdata/fp_emu.h")
			kind := int64(0)
			if c.sddmm {
				kind = 1
			}
			main, comb := gm.grid(len(chunks)/4+rows), gm.grid(len(hrows)/3)
			raw := runEmu(t, prog, c.String(), []int64{kind, rows, int64(f), int64(c.fe), int64(heavy), int64(len(chunks) / 4),
				int64(len(hrows) / 3), int64(main[0]), int64(main[1]), int64(comb[0]), int64(gm.g), int64(outLen)},
				asBytes(g.Indptr), asBytes(g.Indices), asBytes(g.EdgeIDs), asBytes(chunks), asBytes(hrows),
				asBytes(x), asBytes(e), asBytes(y), asBytes(scale), asBytes(order))
			require.Len(t, raw, 4*outLen)
			got := make([]float32, outLen)
			for i := range got {
				got[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			closeTo(t, c.String(), got, want, mag)
		})
	}
}

// emuCSR is skewedCSR at the emulator's scale: empty rows, short rows and
// a few hubs of a few hundred edges.
func emuCSR(r *rand.Rand, rows, nsrc int, ids bool) templates.CSR {
	return randCSR(r, rows, nsrc, ids, func(r *rand.Rand) int {
		switch x := r.IntN(100); {
		case x < 15:
			return 0
		case x < 90:
			return 1 + r.IntN(12)
		default:
			return 130 + r.IntN(200)
		}
	})
}

// BenchmarkFPSpMM times the device templates on a skewed random graph of
// 100k rows (CUDA events around back-to-back runs, FPCall.Time) and
// reports edges per second; bench/templates compares them with cuSPARSE
// and PyG on real graphs.
func BenchmarkFPSpMM(b *testing.B) {
	d := fpDevice(b)
	r := rand.New(rand.NewPCG(20, 5))
	const rows = 100_000
	g := skewedCSR(r, rows, rows, false)
	dg, err := d.UploadCSR(g, rows)
	require.NoError(b, err)
	defer dg.Close()
	w, err := d.Alloc(4 * g.NNZ())
	require.NoError(b, err)
	defer w.Free()
	require.NoError(b, w.Write(asBytes(randFloats(r, g.NNZ()))))
	for _, f := range []int{16, 64, 256} {
		x, err := d.Alloc(4 * rows * f)
		require.NoError(b, err)
		require.NoError(b, x.Write(asBytes(randFloats(r, rows*f))))
		out, err := d.Alloc(4 * max(rows*f, g.NNZ()))
		require.NoError(b, err)
		for _, op := range []string{"copy_u_sum", "u_mul_e_sum", "copy_u_max", "u_dot_v"} {
			b.Run(fmt.Sprintf("op=%s/f=%d", op, f), func(b *testing.B) {
				var c *FPCall
				var err error
				switch op {
				case "copy_u_sum":
					c, err = d.PrepareSpMM(out, dg, SpMMArgs{Msg: templates.CopyU, Reduce: templates.Sum, X: x, F: f})
				case "u_mul_e_sum":
					c, err = d.PrepareSpMM(out, dg, SpMMArgs{Msg: templates.UMulE, Reduce: templates.Sum, X: x, E: w, F: f})
				case "copy_u_max":
					c, err = d.PrepareSpMM(out, dg, SpMMArgs{Msg: templates.CopyU, Reduce: templates.Max, X: x, F: f})
				case "u_dot_v":
					c, err = d.PrepareSDDMM(out, dg, SDDMMArgs{Op: templates.UDotV, X: x, Y: x, F: f})
				}
				require.NoError(b, err)
				defer c.Close()
				b.ResetTimer()
				ts, err := c.Time(1, b.N)
				require.NoError(b, err)
				b.ReportMetric(float64(ts[0].Nanoseconds()), "gpu-ns/op")
				b.ReportMetric(float64(g.NNZ())/ts[0].Seconds(), "edges/s")
			})
		}
		require.NoError(b, x.Free())
		require.NoError(b, out.Free())
	}
}
