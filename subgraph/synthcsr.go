package subgraph

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/qgtc/qgtc/internal/par"
)

// symCSR is FromEdges(n, src, dst, Symmetrize, RemoveSelfLoops) on all
// cores, for the generators' edge lists (every endpoint in [0, n)), in the
// same memory. The entries reach their rows in whatever order the cores'
// atomic slots give, and each row is then sorted and deduplicated, so the
// graph does not depend on the number of cores. The serial build was most
// of a large synthetic graph's time (bench/scale/RESULTS.md).
func symCSR(n int, src, dst []int32) (*Graph, error) {
	if len(src) != len(dst) || n < 0 || n > 1<<31-2 {
		return nil, fmt.Errorf("%w: %d nodes, %d sources, %d destinations", ErrGraph, n, len(src), len(dst))
	}
	workers := runtime.GOMAXPROCS(0)
	if workers == 1 { // the atomics only cost on one core (bench/scale/RESULTS.md)
		return FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	}
	const edgeChunk = 1 << 16
	chunks := (len(src) + edgeChunk - 1) / edgeChunk
	overEdges := func(fn func(u, v int32)) {
		par.For(chunks, workers, func(c int) {
			lo, hi := c*edgeChunk, min(len(src), (c+1)*edgeChunk)
			for i := lo; i < hi; i++ {
				if u, v := src[i], dst[i]; u != v {
					fn(u, v)
					fn(v, u)
				}
			}
		})
	}
	deg := make([]int64, n+1)
	overEdges(func(u, _ int32) { atomic.AddInt64(&deg[u+1], 1) })
	fill, idx, err := rowStarts(deg)
	if err != nil {
		return nil, err
	}
	overEdges(func(u, v int32) { idx[atomic.AddInt64(&fill[u], 1)-1] = v })
	// Sort and dedupe each row in place, its length into fill; then compact.
	const rowChunk = 1 << 12
	par.For((n+rowChunk-1)/rowChunk, workers, func(c int) {
		for v := c * rowChunk; v < min(n, (c+1)*rowChunk); v++ {
			row := idx[deg[v]:deg[v+1]]
			slices.Sort(row)
			fill[v] = int64(len(slices.Compact(row)))
		}
	})
	indptr := make([]int32, n+1)
	w := int64(0)
	for v := range n {
		copy(idx[w:], idx[deg[v]:deg[v]+fill[v]])
		w += fill[v]
		indptr[v+1] = int32(w)
	}
	return &Graph{Indptr: indptr, Indices: slices.Clip(idx[:w])}, nil
}
