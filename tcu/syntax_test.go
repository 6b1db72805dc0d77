package tcu

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelSyntax compiles the embedded kernels, for variants the host
// builds, with clang++ in CUDA syntax-only mode against
// testdata/cuda_syntax.h: a C++ or preprocessor error (a macro name clash,
// a missing declaration) otherwise shows only when NVRTC compiles it on a
// GPU host, where a failed compile turns wgmma off. The PTX inside asm
// statements is not checked (ptxas sees it on the GPU host). Skipped where
// there is no clang++ (apt install clang).
func TestKernelSyntax(t *testing.T) {
	clang, err := exec.LookPath("clang++")
	if err != nil {
		t.Skip("no clang++ on PATH: the CUDA syntax check needs it (apt install clang)")
	}
	prelude, err := filepath.Abs("testdata/cuda_syntax.h")
	require.NoError(t, err)
	dir := t.TempDir()
	flags := []string{"-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80", "-nocudainc", "-nocudalib",
		"-fsyntax-only", "-std=c++17", "-include", prelude}
	// A clang++ too old for these flags (CUDA sm_80, C++17) says nothing
	// about the kernels: skip rather than fail on it.
	probe := filepath.Join(dir, "probe.cu")
	require.NoError(t, os.WriteFile(probe, []byte("__global__ void probe(int* p) { p[threadIdx.x] = 0; }\n"), 0o644))
	if out, err := exec.Command(clang, append(flags, probe)...).CombinedOutput(); err != nil {
		t.Skipf("%s cannot check CUDA for sm_80 with these flags: %v\n%s", clang, err, out)
	}
	for _, f := range []string{"bmm_wgmma.cu", "bmm_mma.cu", "agg.cu"} {
		src, hdrs := kernelSource(f)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(src), 0o644))
		for _, h := range hdrs {
			require.NoError(t, os.WriteFile(filepath.Join(dir, h.name), []byte(h.src), 0o644))
		}
	}
	// A wgmma variant as chooseConfig makes it for a dense int launch
	// (h200), then edited for choices other launches make (MulBit
	// packing, uint16 outputs, the by-value descriptor); mma variants of
	// one product (the descriptor by value) and of a batch.
	wg := func(a, b, m, n, ksteps int, tu tuning, edit func(*config)) config {
		c := chooseConfig(intLaunch(a, b, m, n, ksteps), h200, tu)
		require.Equal(t, PathWGMMA, c.path)
		if edit != nil {
			edit(&c)
		}
		return c
	}
	mma := func(a, b, m, n int, edit func(*config)) config {
		c := chooseConfig(intLaunch(a, b, m, n, 16), target{sms: 132}, tuning{})
		if edit != nil {
			edit(&c)
		}
		return c
	}
	cases := map[string]config{
		"mma 2x3":                   mma(2, 3, 4096, 64, nil),
		"mma 2x3 batch":             mma(2, 3, 4096, 64, func(c *config) { c.oneprob = 0 }),
		"mma 1x8":                   mma(1, 8, 1024, 16, nil),
		"s=1 int32 default":         wg(1, 1, 16384, 256, 64, tuning{}, nil),
		"s=1 timing":                wg(1, 1, 16384, 256, 64, tuning{timing: 1}, nil),
		"s=1 tail 3, registers":     wg(1, 1, 16384, 256, 64, tuning{tailepi: -1}, nil),
		"s=4 int32 default":         wg(1, 4, 16384, 256, 64, tuning{}, nil),
		"s=1 MulBit by registers":   wg(1, 1, 16384, 256, 64, tuning{tail: -1}, func(c *config) { c.bitreg = 1 }),
		"s=4 MulBit packed bytes":   wg(1, 4, 16384, 256, 64, tuning{tail: -1}, func(c *config) { c.bitreg = 2 }),
		"no producer":               wg(1, 1, 16384, 256, 64, tuning{ws: -1}, nil),
		"producer, lag 2":           wg(1, 2, 4096, 64, 16, tuning{ws: 2, wgs: 2}, nil),
		"one warpgroup, 2 planes":   wg(2, 1, 1024, 64, 4, tuning{wgs: 1}, nil),
		"register epilogue, timing": wg(1, 1, 16384, 256, 64, tuning{epi: -1, timing: 1, tail: -1}, nil),
		"s=1 uint16 default":        wg(1, 1, 16384, 256, 64, tuning{}, func(c *config) { c.out16 = 1 }),
		"uint16 registers":          wg(1, 1, 16384, 256, 64, tuning{epi: -1, tail: -1}, func(c *config) { c.out16 = 1 }),
		"mma uint16":                mma(1, 2, 4096, 64, func(c *config) { c.out16 = 1 }),
	}
	for name, c := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			file := "bmm_mma.cu"
			if c.path == PathWGMMA {
				file = "bmm_wgmma.cu"
			}
			args := slices.Clone(flags)
			for _, o := range c.opts() {
				if strings.HasPrefix(o, "-D") { // NVRTC's own options (--fmad) are not clang's
					args = append(args, o)
				}
			}
			out, err := exec.Command(clang, append(args, filepath.Join(dir, file))...).CombinedOutput()
			require.NoError(t, err, "%v\n%s", c, out)
		})
	}
	t.Run("agg.cu", func(t *testing.T) { // the resident backend's kernels: one build, no variants
		out, err := exec.Command(clang, append(slices.Clone(flags), filepath.Join(dir, "agg.cu"))...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	})
}
