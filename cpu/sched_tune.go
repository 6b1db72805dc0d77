package cpu

import (
	"time"
)

// TuneSchedule times SpMM (copy_u, sum) on g with f-wide features under a
// small grid of schedules (feature tile × source partitions), remembers the
// fastest for the shape (rows, nsrc, nnz, f) and returns it. Later SpMM and
// SDDMM calls of that shape with a nil schedule use it. A tuned shape is
// not timed again. Tuning costs a few dozen SpMM runs; do it once per
// graph and width, e.g. when a model is built.
func TuneSchedule(g CSR, nsrc, f int) Schedule {
	sh := Shape{g.Rows(), nsrc, g.NNZ(), f}
	if s, ok := CachedSchedule(sh); ok {
		return s
	}
	best := HeuristicSchedule(sh)
	if f > 0 && g.NNZ() > 0 && nsrc > 0 {
		x := make([]float32, nsrc*f)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		out := make([]float32, g.Rows()*f)
		bestT := time.Duration(1<<63 - 1)
		for _, c := range tuneCandidates(nsrc, f) {
			if t := timeSpMM(out, g, x, f, c); t < bestT {
				best, bestT = c, t
			}
		}
	}
	schedMu.Lock()
	schedCache[sh] = best
	schedMu.Unlock()
	return best
}

// tuneCandidates lists the schedules TuneSchedule tries: tiles of 32, 64
// and 128 columns below f, and 1, 2, 4 or 8 source partitions when there
// are enough sources for a partition to hold many of them.
func tuneCandidates(nsrc, f int) []Schedule {
	tiles := []int{0}
	for _, t := range []int{32, 64, 128} {
		if t < f {
			tiles = append(tiles, t)
		}
	}
	var out []Schedule
	for _, t := range tiles {
		for _, p := range []int{1, 2, 4, 8} {
			if p > 1 && nsrc/p < 1024 {
				break
			}
			out = append(out, Schedule{FeatTile: t, Partitions: p})
		}
	}
	return out
}

// timeSpMM is the best of up to five runs after a warm-up, stopping early
// once 50 ms have been spent.
func timeSpMM(out []float32, g CSR, x []float32, f int, s Schedule) time.Duration {
	a, err := checkSpMM(out, g, CopyU, Sum, x, nil, nil, f, nil)
	if err != nil {
		return 1<<63 - 1
	}
	runSpMM(&a, s)
	best := time.Duration(1<<63 - 1)
	start := time.Now()
	for i := 0; i < 5 && (i < 2 || time.Since(start) < 50*time.Millisecond); i++ {
		t0 := time.Now()
		runSpMM(&a, s)
		best = min(best, time.Since(t0))
	}
	return best
}
