package tcu

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

var updateConfigs = flag.Bool("update-configs", false, "rewrite testdata/configs.golden from the configuration choice")

// configCase is one launch of the configuration grid: its products, the
// device (multiprocessors, wgmma on or off), a forced path and tuning.
type configCase struct {
	name  string
	jobs  []job
	sms   int
	wgmma bool
	force string
	tune  tuning
}

// configFields prints the fields of a chosen configuration that decide
// the launch: the variant (every -D option), its block and shared memory.
func configFields(c config, mode int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s a%d b%d %dx%d", c.path, c.abits, c.bbits, c.bm, c.bn)
	for _, f := range []struct {
		name string
		v    int
	}{{"wm", c.wm}, {"wn", c.wn}, {"wgs", c.wgs}, {"ks", c.ks}, {"s", c.stages}, {"epi", c.epi}, {"bitreg", c.bitreg},
		{"ws", c.ws}, {"oneprob", c.oneprob}, {"l2", c.l2}, {"tail", c.tail}, {"te", c.tailepi}, {"o16", c.out16}, {"timing", c.timing},
		{"lbo", c.lbo}, {"sbo", c.sbo}, {"threads", c.threads()}, {"smem", c.smem(mode)}} {
		if f.v != 0 { // zero fields are left out: the file stays short
			fmt.Fprintf(&b, " %s%d", f.name, f.v)
		}
	}
	return b.String()
}

// denseA is an m×k a-bit A (by rows) with a one in every 256-bit k-step
// of every row: no zero tile. bandA has ones only near its diagonal (the
// row's share of K): most tiles are zero once K spans several k-steps.
func denseA(t testing.TB, m, k, bits int) *bittensor.Tensor {
	a, err := bittensor.New(m, k, bits, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	for i := 0; i < m; i++ {
		for s := 0; s*256 < k; s++ {
			c := min(s*256+i%256, k-1)
			a.Line(i%bits, i)[c/64] |= 1 << (c % 64)
		}
	}
	return a
}

func bandA(t testing.TB, m, k, bits int) *bittensor.Tensor {
	a, err := bittensor.New(m, k, bits, bittensor.ByRows, bittensor.DefaultPadding)
	require.NoError(t, err)
	for i := 0; i < m; i++ {
		c := i * k / max(m, 1)
		a.Line(0, i)[c/64] |= 1 << (c % 64)
	}
	return a
}

// configGrid is the launches whose configurations testdata/configs.golden
// records: shapes from one row to the large N=16384, D=256 product,
// 1..8-bit operands, every output mode and packing, batches, zero-tile
// lists or none, two multiprocessor counts, mma.sync forced or the only
// path, and the tuning overrides the tests and benchmarks use.
func configGrid(t testing.TB) []configCase {
	type shape struct{ m, k, n int }
	shapes := []shape{{1, 1, 1}, {100, 300, 16}, {1000, 1300, 256}, {520, 12800, 256}, {4096, 4096, 64}, {2048, 2048, 32},
		{1024, 1024, 16}, {257, 300, 512}, {2048, 512, 16}, {700, 2048, 64}, {300, 512, 100}, {16384, 16384, 256}, {16384, 16384, 64}}
	type outKind struct {
		name string
		mode int
		bits int
		pack bittensor.Packing
		ep   bool
	}
	outs := []outKind{{"int", modeInt, 0, 0, false}, {"float", modeFloat, 0, 0, true}, {"r1", modeBit, 1, bittensor.ByRows, false},
		{"r4", modeBit, 4, bittensor.ByRows, false}, {"r4ep", modeBit, 4, bittensor.ByRows, true}, {"c4", modeBit, 4, bittensor.ByCols, false}}
	mkJob := func(a, b *bittensor.Tensor, o outKind) job {
		m, n := a.Rows(), b.Cols()
		j := job{a: a, b: b, mode: o.mode, m: m, n: n}
		if o.ep {
			j.ep = &bmm.Epilogue{ColScale: make([]float32, n)}
		}
		switch o.mode {
		case modeInt:
			j.ints = make([]int32, m*n)
		case modeFloat:
			j.flts = make([]float32, m*n)
		case modeBit:
			out, err := bittensor.New(m, n, o.bits, o.pack, bittensor.DefaultPadding)
			require.NoError(t, err)
			j.bits = out
		}
		return j
	}
	tunings := []struct {
		name string
		t    tuning
	}{{"ws-1", tuning{ws: -1}}, {"tail-1", tuning{tail: -1}}, {"out16-1", tuning{out16: -1}}, {"bitreg-1", tuning{bitreg: -1}},
		{"bitreg1", tuning{bitreg: 1}}, {"bitreg2", tuning{bitreg: 2}}, {"oneprob1", tuning{oneprob: 1}}, {"oneprob-1", tuning{oneprob: -1}},
		{"bn256", tuning{bn: 256, wgs: 2}}, {"mt-1", tuning{minTiles: -1}}, {"ks2s3", tuning{ks: 2, stages: 3}},
		{"tail3te", tuning{tail: 3, tailepi: 1, ws: 1, wgs: 2, bn: 256}}, {"tail1", tuning{tail: 1, ws: 1, wgs: 2}}, {"epi-1", tuning{epi: -1}},
		{"epi1", tuning{epi: 1}}, {"l2-1", tuning{l2: -1}}, {"ws2", tuning{ws: 2, wgs: 2}},
		{"timing", tuning{timing: 1}}, {"bn16", tuning{bn: 16, minBN: 16}}, {"wg1ks3", tuning{wgs: 1, ks: 3}}, {"tailepi-1", tuning{tailepi: -1}}}
	var cases []configCase
	for _, s := range shapes {
		for _, abits := range []int{1, 2, 4} {
			if s.m*s.k > 4096*4096 && abits > 1 {
				continue
			}
			for _, dense := range []bool{true, false} {
				var a *bittensor.Tensor
				if dense {
					a = denseA(t, s.m, s.k, abits)
				} else {
					a = bandA(t, s.m, s.k, abits)
				}
				for _, bbits := range []int{1, 2, 4, 8} {
					if s.m*s.k > 4096*4096 && bbits != 1 && bbits != 4 {
						continue
					}
					b, err := bittensor.New(s.k, s.n, bbits, bittensor.ByCols, bittensor.DefaultPadding)
					require.NoError(t, err)
					for _, o := range outs {
						base := fmt.Sprintf("%dx%dx%d a%d b%d dense=%v %s", s.m, s.k, s.n, abits, bbits, dense, o.name)
						jobs := []job{mkJob(a, b, o)}
						cases = append(cases, configCase{name: base, jobs: jobs, sms: 132, wgmma: true})
						if o.name != "int" && o.name != "r4" {
							continue
						}
						cases = append(cases, configCase{name: base + " mma", jobs: jobs, sms: 132, wgmma: true, force: PathMMA})
						if o.name == "int" {
							cases = append(cases, configCase{name: base + " sms=114", jobs: jobs, sms: 114, wgmma: true},
								configCase{name: base + " nowgmma", jobs: jobs, sms: 132})
						}
						// A batch: this product, a smaller one and an empty one.
						if s.m*s.k <= 4096*4096 {
							a2 := bandA(t, max(s.m/3, 1), s.k, abits)
							b2, err := bittensor.New(s.k, max(s.n/2, 1), bbits, bittensor.ByCols, bittensor.DefaultPadding)
							require.NoError(t, err)
							a3 := denseA(t, 0, s.k, abits)
							batch := []job{mkJob(a, b, o), mkJob(a2, b2, o), mkJob(a3, b, o)}
							cases = append(cases, configCase{name: base + " batch", jobs: batch, sms: 132, wgmma: true})
						}
					}
					if abits != 1 || (bbits != 1 && bbits != 4) {
						continue
					}
					for _, o := range outs {
						if o.name == "r1" || o.name == "r4ep" || (!dense && o.name != "int") {
							continue
						}
						base := fmt.Sprintf("%dx%dx%d a%d b%d dense=%v %s", s.m, s.k, s.n, abits, bbits, dense, o.name)
						jobs := []job{mkJob(a, b, o)}
						for _, tu := range tunings {
							cases = append(cases, configCase{name: base + " tune=" + tu.name, jobs: jobs, sms: 132, wgmma: true, tune: tu.t})
						}
					}
				}
			}
		}
	}
	return cases
}

// TestConfigChoice: the configuration chosen for every launch of
// configGrid is the one recorded in testdata/configs.golden (-update-configs
// rewrites it).
func TestConfigChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("the grid builds operands up to 16384×16384 bits")
	}
	var got strings.Builder
	for _, c := range configGrid(t) {
		cfg := chooseConfigForTest(t, c)
		mode := 0
		for _, j := range c.jobs {
			mode = max(mode, j.mode)
		}
		fmt.Fprintf(&got, "%s: %s\n", c.name, configFields(cfg, mode))
	}
	const golden = "testdata/configs.golden"
	if *updateConfigs {
		require.NoError(t, os.WriteFile(golden, []byte(got.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	require.Equal(t, len(wl), len(gl), "grid size")
	diff := 0
	for i := range wl {
		if gl[i] != wl[i] {
			diff++
			if diff <= 20 {
				t.Errorf("config changed:\n got  %s\n want %s", gl[i], wl[i])
			}
		}
	}
	assert.Zero(t, diff, "configurations that differ from %s", golden)
	assert.True(t, slices.ContainsFunc(wl, func(l string) bool { return strings.Contains(l, "te1") }), "the grid reaches TAILEPI")
}

// chooseConfigForTest is Kernel.prepare's choice (Kernel.choose) on a
// device of cc.sms multiprocessors that is not there.
func chooseConfigForTest(t testing.TB, cc configCase) config {
	k := &Kernel{d: &Device{info: DeviceInfo{Major: 9, SMs: cc.sms}}, wgmmaOK: cc.wgmma, force: cc.force, lbo: 128, sbo: 256, tune: cc.tune}
	cfg, lists := k.choose(cc.jobs)
	require.Len(t, lists, len(cc.jobs))
	return cfg
}
