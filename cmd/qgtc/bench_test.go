package main

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		{"info", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		assert.Equal(t, 2, code, "%q: %s", args, stderr.String())
		assert.NotContains(t, stderr.String(), "panic", "%q", args)
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
