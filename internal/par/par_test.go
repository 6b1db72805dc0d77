package par

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counts runs For and returns how often each index was visited.
func counts(n, workers int) []int64 {
	c := make([]int64, n)
	For(n, workers, func(i int) { atomic.AddInt64(&c[i], 1) })
	return c
}

func TestForVisitsEachIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, tc := range []struct{ n, workers int }{
			{0, 4}, {1, 4}, {5, 1}, {7, 2}, {64, 2}, {1000, 3}, {3, 8}, {100, 0}, {10, -1},
		} {
			t.Run(fmt.Sprintf("procs=%d/n=%d/w=%d", procs, tc.n, tc.workers), func(t *testing.T) {
				for rep := 0; rep < 20; rep++ {
					for i, v := range counts(tc.n, tc.workers) {
						require.EqualValues(t, 1, v, "index %d", i)
					}
				}
			})
		}
		runtime.GOMAXPROCS(prev)
	}
}

func TestRunCallsEachParticipantOnce(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	for _, workers := range []int{1, 2, 3, 4, 9} {
		seen := make([]int64, workers)
		Run(workers, func(w int) { atomic.AddInt64(&seen[w], 1) })
		for w, v := range seen {
			assert.EqualValues(t, 1, v, "workers=%d participant %d", workers, w)
		}
	}
}

// A region that starts another inside a body (the team is busy) and
// regions started from many goroutines at once all finish with every index
// visited once.
func TestNestedAndConcurrentRegions(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	var total atomic.Int64
	For(8, 4, func(int) {
		For(16, 4, func(int) { total.Add(1) })
	})
	assert.EqualValues(t, 8*16, total.Load())

	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 50; rep++ {
				for i, v := range counts(37, 3) {
					if v != 1 {
						t.Errorf("index %d visited %d times", i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// After the team has parked (longer than Spin without work), a region
// still runs on it and finishes.
func TestRegionAfterTeamParked(t *testing.T) {
	prev := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(prev)
	For(4, 2, func(int) {})
	time.Sleep(5 * Spin)
	var ids sync.Map
	Run(2, func(w int) {
		ids.Store(w, true)
		time.Sleep(time.Millisecond)
	})
	for w := 0; w < 2; w++ {
		_, ok := ids.Load(w)
		assert.True(t, ok, "participant %d did not run", w)
	}
}

var sink [64]uint64

// spin is a fixed amount of ALU work (an LCG), no memory traffic.
func spin(iters int) uint64 {
	x := uint64(1)
	for i := 0; i < iters; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

// goroutinesFor is the pattern par replaces: a goroutine per extra worker
// and a WaitGroup, per region.
func goroutinesFor(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
}

// BenchmarkRegion: back-to-back regions of items of equal ALU work, on
// the team and on per-region goroutines, side by side. Run once with
// GOMAXPROCS=1 -cpu 1 and once with GOMAXPROCS=2 -cpu 2 (separate
// processes: see bench/cpu/run.sh): the ratio of ns/op is each scheme's
// scaling.
//
// Three sizes: 64 items of about 5 µs (a 4096-row bit product), 16 of
// about 1 µs (a 1024-row one, where per-region costs show most) and 2
// almost empty ones (the region's own cost).
func BenchmarkRegion(b *testing.B) {
	for _, sz := range []struct{ items, iters int }{{64, 4500}, {16, 900}, {2, 10}} {
		work := func(i int) { sink[i] = spin(sz.iters) }
		workers := runtime.GOMAXPROCS(0)
		name := fmt.Sprintf("items=%d/iters=%d", sz.items, sz.iters)
		b.Run(name+"/impl=team", func(b *testing.B) {
			for range b.N {
				For(sz.items, workers, work)
			}
		})
		b.Run(name+"/impl=goroutines", func(b *testing.B) {
			for range b.N {
				if workers == 1 {
					for i := range sz.items {
						work(i)
					}
					continue
				}
				goroutinesFor(sz.items, workers, work)
			}
		})
	}
}

// BenchmarkWakeLag measures what the team avoids: the time from a go
// statement to the new goroutine running, while the caller keeps its own
// processor busy (lag_us; run with -cpu 2). The other processor's thread is
// parked between iterations, as it is between a program's parallel loops.
func BenchmarkWakeLag(b *testing.B) {
	var total time.Duration
	for range b.N {
		time.Sleep(2 * Spin) // let the runtime park the idle thread
		var wg sync.WaitGroup
		wg.Add(1)
		var started time.Time
		t0 := time.Now()
		go func() { started = time.Now(); wg.Done() }()
		sink[0] = spin(30000) // ~30 µs on this processor
		wg.Wait()
		total += started.Sub(t0)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "lag_us")
}
