package templates

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
		cands := tuneCandidates(nsrc, f)
		best = cands[tunePick(out, g, x, f, cands)]
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

// tunePick times every candidate in interleaved rounds (so a burst of
// load elsewhere hits all of them alike), keeps each one's fastest run and
// returns the index of the fastest; candidates[0], the untiled schedule,
// wins unless another beats it by more than 5%.
func tunePick(out []float32, g CSR, x []float32, f int, cands []Schedule) int {
	a, err := checkSpMM(out, g, CopyU, Sum, x, nil, nil, f, nil)
	if err != nil {
		return 0
	}
	runSpMM(&a, cands[0]) // warm the caches and the page tables
	best := make([]time.Duration, len(cands))
	for i := range best {
		best[i] = 1<<63 - 1
	}
	start := time.Now()
	for round := 0; round < 5 && (round < 2 || time.Since(start) < 200*time.Millisecond); round++ {
		for i, c := range cands {
			t0 := time.Now()
			runSpMM(&a, c)
			best[i] = min(best[i], time.Since(t0))
		}
	}
	pick := 0
	for i := range cands {
		if float64(best[i]) < 0.95*float64(best[pick]) {
			pick = i
		}
	}
	return pick
}
