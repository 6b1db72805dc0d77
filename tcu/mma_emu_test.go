package tcu

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// The CPU emulation of bmm_mma.cu (testdata/mma_emu.h): a whole block's
// threads as coroutines meeting at __syncthreads and at the warp
// collectives (ldmatrix, mma.sync, __ballot_sync), with the PTX fragment
// layouts, so that a change to the kernel can be checked bit for bit
// against bmm.Generic without a GPU.

// mmaEmu compiles src (bmm_mma.cu, as embedded or modified) with the -D
// options among defines (config.opts; the others are NVRTC's and ignored)
// and the emulation, and returns the program, or skips without clang++.
// A test of one launch: newMMALaunch, mmaEmu(t, src, l.cfg.opts()...),
// mmaEmuCheck; of a modified kernel over every case: testMMAEmulated.
func mmaEmu(t *testing.T, src string, defines ...string) string {
	t.Helper()
	clang := emuTool(t)
	prog, err := mmaEmuCompile(clang, t.TempDir(), src, defines)
	require.NoError(t, err)
	return prog
}

// mmaEmuCompile is mmaEmu's build, in dir, with the embedded headers.
func mmaEmuCompile(clang, dir, src string, defines []string) (string, error) {
	var pre strings.Builder
	for _, d := range defines {
		if kv, ok := strings.CutPrefix(d, "-D"); ok {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&pre, "#define %s %s\n", k, v)
		}
	}
	_, hdrs := kernelSource("bmm_mma.cu")
	for _, h := range hdrs {
		if err := os.WriteFile(filepath.Join(dir, h.name), []byte(h.src), 0o644); err != nil {
			return "", err
		}
	}
	mainSrc, err := os.ReadFile("testdata/mma_emu_main.inc")
	if err != nil {
		return "", err
	}
	prelude, err := filepath.Abs("testdata/mma_emu.h")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bmm_mma")
	if err := os.WriteFile(bin+".cc", []byte(pre.String()+src+"\n"+string(mainSrc)), 0o644); err != nil {
		return "", err
	}
	// As emuBuild; no strict aliasing, as the kernel stores through
	// pointers of other types than the memory's.
	out, err := exec.Command(clang, "-include", prelude, "-std=c++17", "-O1", "-w", "-ffp-contract=off", "-fno-strict-aliasing",
		"-I", dir, "-o", bin, bin+".cc").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, nil
}

// mmaEmuCache shares the builds of one test among its subtests.
type mmaEmuCache struct {
	clang, dir string
	mu         sync.Mutex
	builds     map[string]*mmaEmuBuild
}

type mmaEmuBuild struct {
	once sync.Once
	prog string
	err  error
}

func newMMAEmuCache(t *testing.T) *mmaEmuCache {
	return &mmaEmuCache{clang: emuTool(t), dir: t.TempDir(), builds: map[string]*mmaEmuBuild{}}
}

func (c *mmaEmuCache) get(t *testing.T, src string, defines []string) string {
	t.Helper()
	h := sha256.Sum256([]byte(src + "\x00" + strings.Join(defines, "\x00")))
	key := hex.EncodeToString(h[:8])
	c.mu.Lock()
	b := c.builds[key]
	if b == nil {
		b = &mmaEmuBuild{}
		c.builds[key] = b
	}
	c.mu.Unlock()
	b.once.Do(func() {
		dir := filepath.Join(c.dir, key)
		if b.err = os.Mkdir(dir, 0o755); b.err == nil {
			b.prog, b.err = mmaEmuCompile(c.clang, dir, src, defines)
		}
	})
	require.NoError(t, b.err)
	return b.prog
}

// emuJob is one product of an emulated launch: a job as Kernel.prepare
// takes it, or with mode modeCodes the byte codes of qbits bits that the
// resident Backend's MulCodes launches.
type emuJob struct {
	job
	qbits int
}

// mmaLaunch is a launch laid out as Kernel.prepare lays it out in device
// memory (mem, its device addresses from emuBase), with what the kernel
// is launched with.
type mmaLaunch struct {
	cfg             config
	blocks, threads int
	smem            int
	nprobs          int
	probOff, outOff int
	mem             []byte
	p1              []byte // the by-value descriptor (one product)
	outAt, outLen   []int  // each product's output in mem
	lists           int    // products with a zero-tile list
}

// emuBase is where the emulated launch's memory lies on the "device".
const emuBase = 1 << 40

// outFill is what the output memory starts as, outside MulBit planes
// (which the kernel ORs into zeros): a value never written shows.
const outFill = 0xFF

// newMMALaunch makes the mma.sync launch of jobs on k: the variant
// Kernel.choose picks (with its zero-tile lists), and memory as
// Kernel.prepare writes it.
func newMMALaunch(t *testing.T, k *Kernel, jobs []emuJob) *mmaLaunch {
	t.Helper()
	js := make([]job, len(jobs))
	for i := range jobs {
		js[i] = jobs[i].job
	}
	require.NoError(t, checkJobs(js))
	for i := range jobs {
		jobs[i].m, jobs[i].n = js[i].m, js[i].n
	}
	cfg, lists := k.choose(js)
	require.Equal(t, PathMMA, cfg.path)

	// As Kernel.prepare (the mma.sync path).
	var in region
	ps, fixes := layProbs(js, cfg, lists, &in)
	nlists := 0
	for i, j := range jobs {
		if lists[i].kp != nil {
			nlists++
		}
		if j.mode == modeCodes { // as Backend.mulLaunch
			ps[i].OutBits, ps[i].RqScale, ps[i].RqOffset = int32(j.qbits), j.rq.Scale, j.rq.Offset
		}
	}
	desc, blocks, err := packLaunch(ps, cfg.bm, cfg.bn)
	require.NoError(t, err)
	probOff := in.add(nil, len(desc))
	l := &mmaLaunch{cfg: cfg, blocks: blocks, threads: cfg.threads(), nprobs: len(jobs), probOff: probOff, lists: nlists}
	l.outOff = roundUp(in.size, 256)
	out := region{size: l.outOff}
	maxMode := 0
	for _, j := range jobs {
		n := cfg.jobOutBytes(j.job)
		l.outAt = append(l.outAt, out.add(nil, max(roundUp(n, 4), 4)))
		l.outLen = append(l.outLen, n)
		maxMode = max(maxMode, j.mode)
	}
	// Kernel.prepare sizes shared memory by the largest mode (plan.maxMode).
	l.smem = cfg.smem(maxMode)
	fixProbs(ps, fixes, emuBase, l.outAt)
	desc, _, err = packLaunch(ps, cfg.bm, cfg.bn)
	require.NoError(t, err)
	in.parts[len(in.parts)-1].data = desc
	if len(jobs) == 1 {
		w := probParams(desc)
		l.p1 = asBytes(w[:])
	}
	l.mem = make([]byte, out.size)
	in.fill(l.mem, false)
	for i := l.outOff; i < len(l.mem); i++ {
		l.mem[i] = outFill
	}
	for i, j := range jobs {
		if j.mode == modeBit {
			clear(l.mem[l.outAt[i] : l.outAt[i]+l.outLen[i]])
		}
	}
	return l
}

// run runs the launch on prog and returns its output region (mem from
// outOff on), or the program's complaint.
func (l *mmaLaunch) run(dir, prog string) ([]byte, error) {
	var in []byte
	for _, v := range []int64{int64(l.blocks), int64(l.threads), int64(l.smem), int64(l.nprobs), int64(l.probOff), int64(l.outOff), emuBase} {
		in = binary.LittleEndian.AppendUint64(in, uint64(v))
	}
	for _, a := range [][]byte{l.mem, l.p1} {
		in = binary.LittleEndian.AppendUint64(in, uint64(len(a)))
		in = append(in, a...)
	}
	f, err := os.CreateTemp(dir, "launch")
	if err != nil {
		return nil, err
	}
	name := f.Name()
	_, err = f.Write(in)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if out, err := exec.Command(prog, name, name+".out").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", prog, err, out)
	}
	raw, err := os.ReadFile(name + ".out")
	if err == nil && len(raw) != len(l.mem)-l.outOff {
		err = fmt.Errorf("%d bytes of output, want %d", len(raw), len(l.mem)-l.outOff)
	}
	return raw, err
}

// mmaEmuCheck runs jobs on the emulated kernel prog (built for their
// launch's defines) and returns "" when every output equals bmm.Generic's,
// bit for bit, and nothing else of the output memory was written; else
// what differs.
func mmaEmuCheck(t *testing.T, prog string, l *mmaLaunch, jobs []emuJob) string {
	t.Helper()
	got, err := l.run(t.TempDir(), prog)
	if err != nil {
		return err.Error()
	}
	var bad []string
	fail := func(format string, args ...any) {
		if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	written := make([]bool, len(got))
	for i, j := range jobs {
		o := got[l.outAt[i]-l.outOff:][:l.outLen[i]]
		for b := range o {
			written[l.outAt[i]-l.outOff+b] = true
		}
		m, n := j.m, j.n
		switch j.mode {
		case modeInt:
			want := make([]int32, m*n)
			require.NoError(t, bmm.Generic{}.MulInt(want, j.a, j.b))
			for e, w := range want {
				var g int32
				if l.cfg.out16 == 1 {
					g = int32(binary.LittleEndian.Uint16(o[2*e:]))
				} else {
					g = int32(binary.LittleEndian.Uint32(o[4*e:]))
				}
				if g != w {
					fail("product %d: C[%d][%d] = %d, want %d", i, e/n, e%n, g, w)
				}
			}
		case modeFloat, modeCodes:
			want := make([]float32, m*n)
			require.NoError(t, bmm.Generic{}.MulFloat(want, j.a, j.b, j.ep))
			for e, w := range want {
				if j.mode == modeCodes {
					if q := uint8(j.rq.Quantize(w, j.qbits)); o[e] != q {
						fail("product %d: code[%d][%d] = %d, want %d", i, e/n, e%n, o[e], q)
					}
					continue
				}
				if g := binary.LittleEndian.Uint32(o[4*e:]); g != math.Float32bits(w) {
					fail("product %d: C[%d][%d] = %v, want %v", i, e/n, e%n, math.Float32frombits(g), w)
				}
			}
		case modeBit:
			ref, err := bittensor.New(m, n, j.bits.Bits(), j.bits.Packing(), j.bits.Padding())
			require.NoError(t, err)
			require.NoError(t, bmm.Generic{}.MulBit(ref, j.a, j.b, j.ep, j.rq))
			for w, x := range ref.Words() {
				if g := binary.LittleEndian.Uint64(o[8*w:]); g != x {
					fail("product %d: word %d of the planes = %#x, want %#x", i, w, g, x)
				}
			}
		}
	}
	for b, v := range got {
		if !written[b] && v != outFill {
			fail("output memory byte %d (past every product's output) was written", l.outOff+b)
			break
		}
	}
	return strings.Join(bad, "\n")
}

// emuOperands returns a random m×k A of a bits (packed by rows) and k×n B
// of b bits (by columns) with padding pad. With sparse, A has zero
// 256-bit k-steps, so that row tiles have zero-tile lists whatever their
// height: in each 128 rows every other step (a row tile of any height
// lies in one such group), more in some groups of 16 rows, and rows from
// 128 on are all zero (tiles with no k-step at all).
func emuOperands(r *rand.Rand, m, k, n, a, b int, sparse bool, pad bittensor.Padding) (*bittensor.Tensor, *bittensor.Tensor) {
	av := make([]int32, m*k)
	for i := range av {
		av[i] = int32(r.IntN(1 << a))
	}
	if sparse {
		for g := 0; g < m; g += 16 {
			for s := 0; s < k; s += 256 {
				if g < 128 && (s/256+g/128)%2 == 1 && r.IntN(4) != 0 {
					continue
				}
				for row := g; row < min(m, g+16); row++ {
					clear(av[row*k+s : row*k+min(k, s+256)])
				}
			}
		}
	}
	bv := make([]int32, k*n)
	for i := range bv {
		bv[i] = int32(r.IntN(1 << b))
	}
	at, err := bittensor.Pack(av, m, k, a, bittensor.ByRows, pad)
	if err != nil {
		panic(err)
	}
	bt, err := bittensor.Pack(bv, k, n, b, bittensor.ByCols, pad)
	if err != nil {
		panic(err)
	}
	return at, bt
}

// mmaEmuCase is one launch of TestMMAKernelEmulated.
type mmaEmuCase struct {
	a, b    int
	m, k, n int
	out     string // int, int32, float, codes, rows, cols (MulBit packing), or mix (a batch of each)
	ep      int    // the epilogue fields present: bits of colScale, rowTerm/colTerm, colConst, rowScale, colBias, relu
	batch   int    // products in the launch (1: ONEPROB)
	sparse  bool   // A with zero k-steps: zero-tile lists
	noZTJ   bool   // but every k-step visited
	pad     bool   // operands with the least padding (lines of 1, bits of 64)
	byParam bool   // one product with its descriptor in global memory (ONEPROB=0)
	sms     int
	grid    int // one product: at most this many blocks, each taking every grid-th tile (as Backend.mulLaunch launches)
}

func (c mmaEmuCase) String() string {
	s := fmt.Sprintf("a%db%d/%dx%dx%d/%s", c.a, c.b, c.m, c.k, c.n, c.out)
	if c.ep != 0 {
		s += fmt.Sprintf("/ep%#x", c.ep)
	}
	if c.batch > 1 {
		s += fmt.Sprintf("/batch%d", c.batch)
	}
	if c.sparse {
		s += "/sparse"
		if c.noZTJ {
			s += "-dense"
		}
	}
	if c.pad {
		s += "/pad"
	}
	if c.byParam {
		s += "/global"
	}
	if c.grid > 0 {
		s += fmt.Sprintf("/grid%d", c.grid)
	}
	return s
}

// jobs returns the case's products on random operands, and the kernel
// that chooses their launch.
func (c mmaEmuCase) jobs(r *rand.Rand) (*Kernel, []emuJob) {
	tu := tuning{}
	if c.out == "int32" {
		tu.out16 = -1
	}
	if c.byParam {
		tu.oneprob = -1
	}
	k := &Kernel{d: &Device{info: DeviceInfo{Major: 8, SMs: c.sms}}, force: PathMMA, tune: tu}
	pad := bittensor.DefaultPadding
	if c.pad {
		pad = bittensor.Padding{Lines: 1, Bits: 64}
	}
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	var jobs []emuJob
	for p := range max(c.batch, 1) {
		m, n := c.m, c.n
		if p > 0 { // the batch's other products are smaller
			m, n = max(1, c.m-7*p), max(1, c.n-5*p)
		}
		a, b := emuOperands(r, m, c.k, n, c.a, c.b, c.sparse, pad)
		out := c.out
		if out == "mix" {
			out = []string{"int32", "float", "rows", "codes", "cols"}[p%5]
		}
		j := emuJob{job: job{a: a, b: b, noZTJ: c.noZTJ}}
		switch out {
		case "int", "int32":
			j.mode, j.ints = modeInt, make([]int32, m*n)
		case "float":
			j.mode, j.flts = modeFloat, make([]float32, m*n)
		case "codes":
			j.mode, j.qbits = modeCodes, 1+p%8
		case "rows", "cols":
			j.mode = modeBit
			packing := bittensor.ByRows
			if out == "cols" {
				packing = bittensor.ByCols
			}
			var err error
			if j.bits, err = bittensor.New(m, n, 1+(c.a+c.b+p)%4, packing, bittensor.DefaultPadding); err != nil {
				panic(err)
			}
		}
		if j.mode != modeInt {
			ep := &bmm.Epilogue{ReLU: c.ep&32 != 0}
			if c.ep&1 != 0 {
				ep.ColScale = vec(n)
			}
			if c.ep&2 != 0 {
				ep.RowTerm, ep.ColTerm = vec(m), vec(n)
			}
			if c.ep&4 != 0 {
				ep.ColConst = vec(n)
			}
			if c.ep&8 != 0 {
				ep.RowScale = vec(m)
			}
			if c.ep&16 != 0 {
				ep.ColBias = vec(n)
			}
			if c.ep != 0 {
				j.ep = ep
			}
		}
		if j.mode == modeBit || j.mode == modeCodes {
			j.rq = emuRequant(j, m, n)
		}
		jobs = append(jobs, j)
	}
	return k, jobs
}

// emuRequant spreads j's codes over their range: the epilogue's values
// from 5% to 95% onto 0 to 2^bits-1, so that both clamps and the steps
// between show.
func emuRequant(j emuJob, m, n int) bmm.Requant {
	y := make([]float32, m*n)
	if err := (bmm.Generic{}).MulFloat(y, j.a, j.b, j.ep); err != nil {
		panic(err)
	}
	slices.Sort(y)
	lo, hi := y[len(y)/20], y[len(y)-1-len(y)/20]
	bits := j.qbits
	if j.mode == modeBit {
		bits = j.bits.Bits()
	}
	scale := float32(int(1)<<bits) / max(hi-lo, 1e-3)
	return bmm.Requant{Scale: scale, Offset: -lo*scale + 0.25}
}

// mmaEmuCases are TestMMAKernelEmulated's launches: every pair of 1, 2
// and 4 bits and a few of 3 and 8 (narrower warp tiles); M and N not
// multiples of the block tile; K of one to three k-steps; every output
// mode, each epilogue field with and without the others; zero-tile
// lists and the dense loop over the same sparse A; operands with the
// least padding; one product (the descriptor by value, and by pointer)
// and batches with the block map.
func mmaEmuCases() []mmaEmuCase {
	var cs []mmaEmuCase
	ks := []int{64, 300, 700, 128}
	outs := []string{"int", "float", "rows", "codes", "cols", "int32"}
	eps := []int{0x3f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x00, 0x1e}
	ms := []int{37, 70, 100, 19}
	ns := []int{21, 45, 5, 70}
	i := 0
	for _, a := range []int{1, 2, 4} {
		for _, b := range []int{1, 2, 4} {
			c := mmaEmuCase{a: a, b: b, m: ms[i%4], k: ks[i%4], n: ns[(i+i/4)%4], out: outs[i%6], ep: eps[i%9],
				sparse: i%3 == 1, noZTJ: i%6 == 4, pad: i%4 == 3, sms: 1 + i%3, grid: []int{0, 2, 3}[i%3]}
			if c.sparse && c.k <= 256 {
				c.k = 520 // steps to skip
			}
			cs = append(cs, c)
			i++
		}
	}
	cs = append(cs,
		mmaEmuCase{a: 3, b: 8, m: 40, k: 300, n: 20, out: "rows", ep: 0x3f, sms: 2},
		mmaEmuCase{a: 8, b: 3, m: 33, k: 600, n: 9, out: "int", sparse: true, sms: 1},
		mmaEmuCase{a: 16, b: 8, m: 24, k: 100, n: 12, out: "int32", sms: 1},
		mmaEmuCase{a: 8, b: 8, m: 20, k: 64, n: 17, out: "float", ep: 0x2b, pad: true, sms: 1},
		mmaEmuCase{a: 2, b: 2, m: 90, k: 700, n: 40, out: "mix", ep: 0x3f, batch: 5, sparse: true, sms: 2},
		mmaEmuCase{a: 1, b: 4, m: 50, k: 300, n: 30, out: "int", batch: 3, sms: 1},
		mmaEmuCase{a: 4, b: 1, m: 45, k: 128, n: 66, out: "cols", ep: 0x11, byParam: true, sparse: true, sms: 4},
		mmaEmuCase{a: 1, b: 1, m: 130, k: 512, n: 36, out: "codes", ep: 0x3f, sparse: true, noZTJ: true, sms: 1},
		mmaEmuCase{a: 1, b: 2, m: 150, k: 800, n: 24, out: "rows", ep: 0x34, sparse: true, sms: 1},
		mmaEmuCase{a: 4, b: 4, m: 300, k: 64, n: 64, out: "rows", ep: 0x3f, sms: 1, grid: 3},
		mmaEmuCase{a: 3, b: 8, m: 40, k: 300, n: 20, out: "cols", ep: 0x3f, sms: 2, grid: 2}, // 16-row tiles share words
		mmaEmuCase{a: 4, b: 4, m: 260, k: 128, n: 64, out: "codes", ep: 0x3f, sms: 1, grid: 4},
		mmaEmuCase{a: 2, b: 4, m: 200, k: 900, n: 40, out: "cols", ep: 0x3f, sparse: true, sms: 1, grid: 2},
	)
	return cs
}

// TestMMAKernelEmulated runs bmm_mma.cu on the CPU (mma_emu.h), as
// Kernel.choose and Kernel.prepare launch it, over mmaEmuCases, against
// bmm.Generic: exact, bit for bit. The GPU's tests remain the word on a
// real device (timing, the hardware's own fragment layouts); this one
// checks the kernel's indexing, pipeline and epilogue without one.
func TestMMAKernelEmulated(t *testing.T) {
	src, _ := kernelSource("bmm_mma.cu")
	testMMAEmulated(t, src)
}

// testMMAEmulated runs every case of mmaEmuCases on src, a bmm_mma.cu
// (as embedded, or a modified copy), in parallel subtests that share the
// builds of one variant.
func testMMAEmulated(t *testing.T, src string) {
	cache := newMMAEmuCache(t)
	for ci, c := range mmaEmuCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(ci), 17))
			k, jobs := c.jobs(r)
			l := newMMALaunch(t, k, jobs)
			if c.grid > 0 {
				require.Equal(t, 1, c.batch|1, "a smaller grid is for one product")
				l.blocks = min(l.blocks, c.grid)
			}
			t.Logf("%v, %d blocks of %d threads, %d bytes of shared memory", l.cfg, l.blocks, l.threads, l.smem)
			require.Equal(t, c.sparse && !c.noZTJ, l.lists > 0, "products with zero-tile lists: %d", l.lists)
			prog := cache.get(t, src, l.cfg.opts())
			require.Empty(t, mmaEmuCheck(t, prog, l, jobs))
		})
	}
}
