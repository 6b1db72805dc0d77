package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/progress"
)

// errMismatch reports a kernel that disagrees with the generic reference.
var errMismatch = errors.New("result differs from bmm.Generic")

func init() {
	register(&command{name: "bmm", summary: "bit matrix products: 'bmm demo' multiplies, verifies and times one", run: runBMM})
}

func runBMM(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "demo" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(w, "usage: qgtc bmm demo [--n N] [--d D] [--bits S] [--density P] [--seed S] [--quiet]")
			return nil
		}
		return fmt.Errorf("%w: want 'qgtc bmm demo [flags]', got %q", errUsage, args)
	}
	fs := newFlags("bmm demo", w)
	n := fs.Int("n", 2048, "nodes: A is an n×n 1-bit adjacency (1..8192; lowered below the default when only --bits is given and needs it)")
	d := fs.Int("d", 64, "feature width: X is n×d (1..4096)")
	nbits := fs.Int("bits", 4, "bits per feature value (1..31, with n·(2^bits−1) < 2^31 so the int32 sums are exact)")
	density := fs.Float64("density", 0.01, "fraction of ones in the adjacency")
	seed := fs.Uint64("seed", 1, "random seed")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	// The adjacency is built as n×n int32 values before packing: 8192
	// keeps that at 256 MiB.
	switch {
	case *n < 1 || *n > 8192:
		return fmt.Errorf("%w: --n %d is not in 1..8192", errUsage, *n)
	case *d < 1 || *d > 4096:
		return fmt.Errorf("%w: --d %d is not in 1..4096", errUsage, *d)
	case *nbits < 1 || *nbits > 31:
		return fmt.Errorf("%w: --bits %d is not in 1..31 (a %d-bit value alone overflows the int32 sums)", errUsage, *nbits, bittensor.MaxBits)
	case !(*density >= 0 && *density <= 1):
		return fmt.Errorf("%w: --density %v is not in [0, 1]", errUsage, *density)
	}
	if bmm.MaxSum(*n, 1, *nbits) > math.MaxInt32 {
		if fs.Changed("n") {
			return fmt.Errorf("%w: --bits %d with --n %d: a sum of C can reach %d×(2^%d−1) > 2^31−1 (int32); use --bits ≤ %d at --n %d, or --n ≤ %d at --bits %d",
				errUsage, *nbits, *n, *n, *nbits, demoMaxBits(*n), *n, demoMaxN(*nbits), *nbits)
		}
		*n = demoMaxN(*nbits)
	}
	prog := progress.Stderr(*quiet)
	defer prog.Done()
	prog.Printf("bmm demo: drawing A (%d×%d) and X (%d×%d, %d bits)", *n, *n, *n, *d, *nbits)
	r := rand.New(rand.NewPCG(*seed, 0x51))
	adj := make([]int32, *n**n)
	for i := 0; i < *n; i++ {
		adj[i**n+i] = 1 // self-loops, as GCN adds them
		for j := 0; j < *n; j++ {
			if r.Float64() < *density {
				adj[i**n+j] = 1
			}
		}
	}
	feat := make([]int32, *n**d)
	for i := range feat {
		feat[i] = int32(r.Uint64() & (1<<*nbits - 1))
	}
	a, err := bittensor.PackRows(adj, *n, *n, 1)
	if err != nil {
		return err
	}
	x, err := bittensor.PackCols(feat, *n, *d, *nbits)
	if err != nil {
		return err
	}
	k := bmm.Default()
	prog.Printf("bmm demo: timing %s", k.Name())
	got, err := bmm.MM2IntWith(k, a, x)
	if err != nil {
		return err
	}
	best := time.Duration(1 << 62)
	for rep, start := 0, time.Now(); rep < 3 || (time.Since(start) < 300*time.Millisecond && rep < 100); rep++ {
		t0 := time.Now()
		if _, err := bmm.MM2IntWith(k, a, x); err != nil {
			return err
		}
		best = min(best, time.Since(t0))
	}
	prog.Printf("bmm demo: checking against bmm.Generic")
	want, err := bmm.MM2IntWith(bmm.Generic{}, a, x)
	if err != nil {
		return err
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%w: kernel %s, C[%d][%d] = %d, want %d", errMismatch, k.Name(), i / *d, i%*d, got[i], want[i])
		}
	}
	// The fused re-quantizing product, to 4 bits: the next layer's input.
	rq := bmm.Requant{Scale: 1 / float32(max(1, maxOf(want))) * 15, Offset: 0}
	q, err := bmm.MM2BitWith(k, a, x, 4, rq, bittensor.ByRows, bittensor.DefaultPadding, nil)
	if err != nil {
		return err
	}
	qRef, err := bmm.MM2BitWith(bmm.Generic{}, a, x, 4, rq, bittensor.ByRows, bittensor.DefaultPadding, nil)
	if err != nil {
		return err
	}
	if !q.Equal(qRef) {
		return fmt.Errorf("%w: kernel %s, MM2Bit 4-bit output", errMismatch, k.Name())
	}
	prog.Done()
	ops := 2 * float64(*n) * float64(*n) * float64(*d)
	fmt.Fprintf(w, "product:  A (%d×%d, 1 bit, %.2f%% ones) × X (%d×%d, %d bits) = C (%d×%d int32)\n",
		*n, *n, 100*float64(countOnes(adj))/float64(len(adj)), *n, *d, *nbits, *n, *d)
	fmt.Fprintf(w, "kernel:   %s\n", k.Name())
	fmt.Fprintf(w, "time:     %v (best of repeated runs)\n", best.Round(time.Microsecond))
	fmt.Fprintf(w, "speed:    %.1f GOPS logical (2·N·N·D/t), %.1f 1-bit GOPS\n", ops/best.Seconds()/1e9, ops*float64(*nbits)/best.Seconds()/1e9)
	fmt.Fprintf(w, "verified: MM2Int and 4-bit MM2Bit equal bmm.Generic bit for bit (%d values)\n", len(want))
	return nil
}

// demoMaxN is the largest n whose sums of n s-bit values fit in int32.
func demoMaxN(s int) int {
	return int(math.MaxInt32 / (uint64(1)<<s - 1))
}

// demoMaxBits is the widest s whose sums of n s-bit values fit in int32.
func demoMaxBits(n int) int {
	s := 0
	for s < 31 && bmm.MaxSum(n, 1, s+1) <= math.MaxInt32 {
		s++
	}
	return s
}

func maxOf(v []int32) int32 {
	var m int32
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func countOnes(v []int32) int {
	n := 0
	for _, x := range v {
		n += int(x)
	}
	return n
}
