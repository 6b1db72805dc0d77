package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

func TestInfo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"info"}, &stdout, &stderr), stderr.String())
	out := stdout.String()
	for _, want := range []string{"CPU:", "avx2", "vpopcntdq", "bit-kernel path: " + cpu.Path(), "cpu/" + cpu.Path() + " (default)", "GOMAXPROCS:"} {
		assert.Contains(t, out, want)
	}
}

func TestBMMDemo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bmm", "demo", "--n", "300", "--d", "20", "--bits", "3", "--density", "0.05"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	assert.Contains(t, stdout.String(), "equal bmm.Generic bit for bit (6000 values)")
	assert.Contains(t, stdout.String(), "GOPS")
}

func TestBenchBMMJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "bmm", "--n", "64,100", "--d", "16", "--bits", "1-2", "--time", "1ms", "--json"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep benchReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Len(t, rep.Rows, 4)
	for _, r := range rep.Rows {
		assert.Equal(t, r.M, r.K)
		assert.Equal(t, 16, r.N)
		assert.Greater(t, r.GOPS, 0.0, r.Name)
		assert.Greater(t, r.FP32GFLOPS, 0.0, r.Name)
		assert.InDelta(t, r.FP32Seconds/r.Seconds, r.Ratio, 1e-9, r.Name)
		assert.Greater(t, r.CPUSeconds, 0.0, r.Name)
		assert.InDelta(t, r.FP32CPU/r.CPUSeconds, r.RatioCPU, 1e-9, r.Name)
		bitMACs := float64(r.M) * float64(r.K) * float64(r.N) * float64(r.ABits*r.BBits)
		cores := float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
		assert.InDelta(t, bitMACs/r.Seconds/(rep.ClockGHz*1e9)/cores, r.MACsPerCycWall, 1e-6*r.MACsPerCycWall, r.Name)
	}
	assert.Equal(t, "n=100/d=16/s=2", rep.Rows[3].Name)
}

func TestBenchBMMTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "bmm", "--n", "128", "--d", "8", "--bits", "4", "--a", "blockdiag", "--time", "1ms", "--no-fp32"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 4, stdout.String())
	assert.Contains(t, lines[2], "bit-MACs/cyc/core")
	assert.Contains(t, lines[2], "best/cyc/core")
	assert.Contains(t, lines[3], "blockdiag")
}

func TestBMMAndBenchBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"bmm"}, {"bmm", "multiply"}, {"bmm", "demo", "--bits", "0"}, {"bmm", "demo", "--n", "-3"},
		{"bmm", "demo", "--density", "2"}, {"bench"}, {"bench", "bmm", "--n", "x"}, {"bench", "bmm", "--bits", "3-1"},
		{"bench", "bmm", "--device", "tpu"}, {"bench", "bmm", "--impl", "sse9"}, {"bench", "bmm", "--a", "sparse"},
		{"info", "extra"}, {"bench", "bmm", "--time", "-1s"}, {"bench", "bmm", "--n", "16-1000000000"}, {"bench", "bmm", "--n", "16-32768", "--d", "1-4096"},
		{"bench", "bmm", "--n", "8"}, {"bench", "bmm", "--d", "0"}, {"bench", "bmm", "--bits", "17"}, {"bench", "bmm", "--bits", "0-4"},
		{"bench", "bmm", "--device", "gpu", "--json"}, {"bench", "bmm", "--device", "gpu", "--impl", "generic"},
		{"bench", "bmm", "--device", "gpu", "--time", "1s"}, {"bmm", "demo", "--bits", "32"}, {"bmm", "demo", "--bits", "21", "--n", "2048"},
		{"bmm", "demo", "--n", "8193"}, {"bmm", "demo", "--d", "4097"}, {"bmm", "demo", "--density", "NaN"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		assert.Equal(t, 2, code, "%q: %s", args, stderr.String())
		assert.NotContains(t, stderr.String(), "panic", "%q", args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%q: one line: %s", args, stderr.String())
	}
}

func TestBenchGPUNeedsHook(t *testing.T) {
	old := gpuBenchBMM
	t.Cleanup(func() { gpuBenchBMM = old })
	gpuBenchBMM = nil
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"bench", "bmm", "--device", "gpu"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no GPU benchmark compiled in")

	var got []benchShape
	gpuBenchBMM = func(shapes []benchShape, _ io.Writer) error { got = shapes; return nil }
	require.Equal(t, 0, run([]string{"bench", "bmm", "--device", "gpu", "--n", "1024", "--d", "32", "--bits", "2,8"}, &stdout, &stderr), stderr.String())
	require.Len(t, got, 2)
	assert.Equal(t, benchShape{Name: "n=1024/d=32/s=8", M: 1024, K: 1024, N: 32, ABits: 1, BBits: 8, Density: 0.5}, got[1])
}

// Every command refuses a positional argument it does not take, with one
// line naming it and exit status 2, before doing any work.
func TestStrayPositionalArgument(t *testing.T) {
	for _, args := range [][]string{
		{"info", "extra"}, {"info", "--quiet", "extra"}, {"version", "extra"},
		{"bench", "bmm", "extra"}, {"bench", "bmm", "--n", "64", "extra", "--d", "8"}, {"bench", "bmm", "--", "extra"},
		{"bmm", "demo", "extra"}, {"bmm", "demo", "--n", "64", "extra"},
		{"data", "list", "extra"}, {"data", "synth", "-o", "/nonexistent/x.npz", "extra"},
		{"infer", "--dataset", "cora", "extra"}, {"sweep", "--dataset", "cora", "extra"},
		{"train", "--dataset", "cora", "extra"}, {"partition", "--dataset", "cora", "--parts", "4", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 2, run(args, &stdout, &stderr), stderr.String())
			msg := stderr.String()
			assert.Contains(t, msg, `unexpected argument "extra"`)
			assert.Equal(t, 1, strings.Count(msg, "\n"), "one line: %q", msg)
			assert.Empty(t, stdout.String())
		})
	}
	// Commands whose positionals are part of the syntax keep working.
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"data", "info", "cora", "--json"}, &stdout, &stderr), stderr.String())
}

// Past 20 bits at the default n the int32 sums of bmm demo can overflow:
// it shrinks n when only --bits is given, and says which sizes work when
// both are.
func TestBMMDemoWideBits(t *testing.T) {
	for _, tc := range []struct {
		bits, n int
	}{{21, 1024}, {24, 128}, {31, 1}} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"bmm", "demo", "--bits", strconv.Itoa(tc.bits), "--d", "8", "--quiet"}, &stdout, &stderr)
		require.Equal(t, 0, code, "--bits %d: %s", tc.bits, stderr.String())
		assert.Contains(t, stdout.String(), fmt.Sprintf("A (%d×%d, 1 bit", tc.n, tc.n))
		assert.Contains(t, stdout.String(), "equal bmm.Generic bit for bit")
		assert.Regexp(t, `1 bit, [0-9]+\.[0-9]{2}% ones`, stdout.String(), "percentages print plainly (was 1e+02%)")
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"bmm", "demo", "--bits", "21", "--n", "2048"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "use --bits ≤ 20 at --n 2048, or --n ≤ 1024 at --bits 21")
}

func TestDemoLimits(t *testing.T) {
	for _, tc := range []struct{ n, bits int }{{1, 31}, {2, 30}, {1024, 21}, {2048, 20}, {8192, 18}} {
		assert.Equal(t, tc.bits, demoMaxBits(tc.n), "n=%d", tc.n)
		assert.LessOrEqual(t, tc.n, demoMaxN(tc.bits), "bits=%d", tc.bits)
		assert.Greater(t, 2*tc.n, demoMaxN(tc.bits+1), "bits=%d", tc.bits+1)
		assert.LessOrEqual(t, bmm.MaxSum(demoMaxN(tc.bits), 1, tc.bits), float64(math.MaxInt32))
		assert.Greater(t, bmm.MaxSum(demoMaxN(tc.bits)+1, 1, tc.bits), float64(math.MaxInt32))
	}
}

// --quiet is accepted by every command this file covers.
func TestQuietAccepted(t *testing.T) {
	for _, args := range [][]string{
		{"info", "--quiet"}, {"version", "--quiet"}, {"data", "list", "--quiet"}, {"bmm", "demo", "--n", "64", "--d", "8", "--quiet"},
		{"bench", "bmm", "--n", "64", "--d", "8", "--bits", "1", "--time", "0s", "--no-fp32", "--quiet"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run(args, &stdout, &stderr), "%q: %s", args, stderr.String())
	}
}
