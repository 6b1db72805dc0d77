package subgraph

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// ErrSynth reports bad parameters for a synthetic graph generator.
var ErrSynth = errors.New("subgraph: bad synthetic graph parameters")

// synthChunk is the number of edges drawn from one random stream. The
// streams are fixed by the seed and the chunk index, never by the number of
// goroutines, so a generator's output depends on its seed alone.
const synthChunk = 1 << 18

// rng64 returns a PCG stream for (seed, stream).
func rng64(seed, stream uint64) *rand.PCG {
	return rand.NewPCG(splitmix(seed), splitmix(stream^0x9e3779b97f4a7c15))
}

// splitmix is SplitMix64's finalizer: it spreads nearby seeds apart.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// below maps 32 random bits onto [0, n) (Lemire's multiply-shift; the bias is
// below n/2^32, far under the sampling noise of any graph here).
func below(r uint32, n uint32) uint32 { return uint32(uint64(r) * uint64(n) >> 32) }

// genEdges fills src/dst (length m) in parallel, chunk by chunk; gen draws
// the edges of one chunk from its own stream.
func genEdges(m int, seed uint64, gen func(r *rand.PCG, src, dst []int32)) (src, dst []int32) {
	src = make([]int32, m)
	dst = make([]int32, m)
	chunks := (m + synthChunk - 1) / synthChunk
	workers := min(runtime.GOMAXPROCS(0), chunks)
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := 0; c < chunks; c++ {
		next <- c
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				lo, hi := c*synthChunk, min(m, (c+1)*synthChunk)
				gen(rng64(seed, uint64(c)), src[lo:hi], dst[lo:hi])
			}
		}()
	}
	wg.Wait()
	return src, dst
}

// RMAT returns a seeded R-MAT graph (Chakrabarti et al. 2004) on 2^scale
// nodes: edgeFactor·2^scale edges are drawn by descending the adjacency
// matrix quadrant by quadrant with probabilities a, b, c and d = 1-a-b-c,
// node ids are then shuffled (as Graph500 does, so ids carry no locality),
// and the result is made undirected: symmetric, deduplicated, without
// self-loops. Graph500 uses a=0.57, b=c=0.19.
func RMAT(scale, edgeFactor int, a, b, c float64, seed uint64) (*Graph, error) {
	if scale < 1 || scale > 30 {
		return nil, fmt.Errorf("%w: R-MAT scale %d not in 1..30", ErrSynth, scale)
	}
	if edgeFactor < 1 || int64(edgeFactor)<<scale > 1<<30 {
		return nil, fmt.Errorf("%w: R-MAT edge factor %d at scale %d (at most 2^30 edges)", ErrSynth, edgeFactor, scale)
	}
	d := 1 - a - b - c
	for _, p := range []float64{a, b, c} {
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("%w: R-MAT probabilities a=%g b=%g c=%g must lie in [0, 1]", ErrSynth, a, b, c)
		}
	}
	if d < -1e-9 {
		return nil, fmt.Errorf("%w: R-MAT probabilities a+b+c=%g exceed 1", ErrSynth, a+b+c)
	}
	n := 1 << scale
	m := edgeFactor * n
	// 32-bit thresholds: a draw r < ta picks quadrant a, < tab b, < tabc c, else d.
	const one = float64(1 << 32)
	ta := uint64(math.Min(a*one, one))
	tab := uint64(math.Min((a+b)*one, one))
	tabc := uint64(math.Min((a+b+c)*one, one))
	src, dst := genEdges(m, seed, func(r *rand.PCG, src, dst []int32) {
		for i := range src {
			var u, v uint32
			var x uint64
			for l := 0; l < scale; l++ {
				if l%2 == 0 {
					x = r.Uint64()
				}
				q := x & 0xffffffff
				x >>= 32
				u <<= 1
				v <<= 1
				switch {
				case q < ta:
				case q < tab:
					v |= 1
				case q < tabc:
					u |= 1
				default:
					u |= 1
					v |= 1
				}
			}
			src[i], dst[i] = int32(u), int32(v)
		}
	})
	perm := permutation(n, rng64(seed, 1<<40))
	for i := range src {
		src[i], dst[i] = perm[src[i]], perm[dst[i]]
	}
	return symCSR(n, src, dst)
}

// permutation returns a seeded random permutation of [0, n).
func permutation(n int, r *rand.PCG) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	for i := n - 1; i > 0; i-- {
		j := int(below(uint32(r.Uint64()), uint32(i+1)))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// PlantedPartition returns a seeded planted-partition graph (a stochastic
// block model with k equal communities) on n nodes and its community of each
// node. About n·avgDeg/2 undirected edges are drawn: each picks a uniform
// endpoint u, and with probability 1-mixing a uniform partner inside u's
// community, otherwise a uniform partner in another community; so mixing is
// the expected fraction of edges between communities. Communities are
// assigned by a seeded shuffle, not by id ranges. The graph is undirected:
// symmetric, deduplicated, without self-loops (duplicates and loops drawn
// are dropped, so the edge count is slightly below n·avgDeg/2).
func PlantedPartition(n, k int, avgDeg, mixing float64, seed uint64) (*Graph, []int32, error) {
	if n < 2 || n > 1<<30 {
		return nil, nil, fmt.Errorf("%w: planted partition with %d nodes (want 2..2^30)", ErrSynth, n)
	}
	if k < 1 || k > n {
		return nil, nil, fmt.Errorf("%w: %d communities for %d nodes", ErrSynth, k, n)
	}
	if !(avgDeg > 0) || avgDeg*float64(n)/2 > 1<<30 {
		return nil, nil, fmt.Errorf("%w: average degree %g for %d nodes", ErrSynth, avgDeg, n)
	}
	if !(mixing >= 0 && mixing <= 1) || (k == 1 && mixing > 0) {
		return nil, nil, fmt.Errorf("%w: mixing %g (in [0, 1], and 0 when k=1)", ErrSynth, mixing)
	}
	perm := permutation(n, rng64(seed, 1<<40))
	comm := make([]int32, n)
	start := make([]int32, k+1) // members of community c: members[start[c]:start[c+1]]
	for v := 0; v < n; v++ {
		comm[v] = perm[v] % int32(k)
		start[comm[v]+1]++
	}
	for c := 0; c < k; c++ {
		start[c+1] += start[c]
	}
	members := make([]int32, n)
	fill := append([]int32(nil), start[:k]...)
	for v := 0; v < n; v++ {
		members[fill[comm[v]]] = int32(v)
		fill[comm[v]]++
	}
	m := int(math.Round(avgDeg * float64(n) / 2))
	tmix := uint64(mixing * float64(1<<32))
	if mixing >= 1 {
		tmix = 1 << 32
	}
	src, dst := genEdges(m, seed, func(r *rand.PCG, src, dst []int32) {
		for i := range src {
			x := r.Uint64()
			u := below(uint32(x), uint32(n))
			cu := comm[u]
			y := r.Uint64()
			var v int32
			if y&0xffffffff < tmix {
				// A uniform node outside u's community: draw a community
				// other than cu, then a member of it.
				c := int32(below(uint32(y>>32), uint32(k-1)))
				if c >= cu {
					c++
				}
				sz := uint32(start[c+1] - start[c])
				v = members[start[c]+int32(below(uint32(r.Uint64()), sz))]
				// Communities differ in size by at most one, so picking the
				// community first is uniform up to that rounding.
			} else {
				sz := uint32(start[cu+1] - start[cu])
				v = members[start[cu]+int32(below(uint32(y>>32), sz))]
			}
			src[i], dst[i] = int32(u), v
		}
	})
	g, err := symCSR(n, src, dst)
	if err != nil {
		return nil, nil, err
	}
	return g, comm, nil
}

// SynthMemory is what a generator needs in memory, in bytes: Peak is the
// most it holds live at once (edge draw, then CSR build), Graph what the
// returned graph (and planted labels) keeps afterwards.
type SynthMemory struct {
	Peak, Graph int64
}

// csrBuildBytes is the live peak of FromEdges(n, src, dst) with m drawn
// edges, symmetrized: src and dst (4 bytes each per edge), the int64
// degree and fill arrays, the int32 index array for both directions (its
// capacity stays with the graph even after deduplication) and indptr.
func csrBuildBytes(n, m int64) int64 { return 8*m + 16*(n+1) + 8*m + 4*(n+1) }

// RMATMemory is RMAT's memory need for (scale, edgeFactor), computed
// without allocating; parameters RMAT refuses give ok = false.
func RMATMemory(scale, edgeFactor int) (mem SynthMemory, ok bool) {
	if scale < 1 || scale > 30 || edgeFactor < 1 || int64(edgeFactor)<<scale > 1<<30 {
		return mem, false
	}
	n := int64(1) << scale
	m := int64(edgeFactor) * n
	// The id permutation (4n) stays referenced through the CSR build.
	mem.Peak = csrBuildBytes(n, m) + 4*n
	mem.Graph = 8*m + 4*(n+1)
	return mem, true
}

// PlantedMemory is PlantedPartition's memory need for n nodes at avgDeg,
// computed without allocating; parameters it refuses give ok = false.
func PlantedMemory(n int, avgDeg float64) (mem SynthMemory, ok bool) {
	if n < 2 || n > 1<<30 || !(avgDeg > 0) || avgDeg*float64(n)/2 > 1<<30 {
		return mem, false
	}
	nn := int64(n)
	m := int64(math.Round(avgDeg * float64(n) / 2))
	// perm, comm and members are 4n each and live through the CSR build;
	// comm is returned as the labels.
	mem.Peak = csrBuildBytes(nn, m) + 12*nn
	mem.Graph = 8*m + 4*(nn+1) + 4*nn
	return mem, true
}
