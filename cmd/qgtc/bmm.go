package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// errMismatch reports a kernel that disagrees with the generic reference.
var errMismatch = errors.New("result differs from bmm.Generic")

func init() {
	register(&command{name: "bmm", summary: "bit matrix products: 'bmm demo' multiplies, verifies and times one", run: runBMM})
}

func runBMM(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "demo" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(w, "usage: qgtc bmm demo [--n N] [--d D] [--bits S] [--density P] [--seed S]")
			return nil
		}
		return fmt.Errorf("%w: want 'qgtc bmm demo [flags]', got %q", errUsage, args)
	}
	fs := newFlags("bmm demo", w)
	n := fs.Int("n", 2048, "nodes: A is an n×n 1-bit adjacency")
	d := fs.Int("d", 64, "feature width: X is n×d")
	nbits := fs.Int("bits", 4, "bits per feature value (1..32)")
	density := fs.Float64("density", 0.01, "fraction of ones in the adjacency")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch {
	case *n < 1 || *n > 1<<15:
		return fmt.Errorf("%w: --n %d is not in 1..32768", errUsage, *n)
	case *d < 1 || *d > 4096:
		return fmt.Errorf("%w: --d %d is not in 1..4096", errUsage, *d)
	case *nbits < 1 || *nbits > bittensor.MaxBits:
		return fmt.Errorf("%w: --bits %d is not in 1..%d", errUsage, *nbits, bittensor.MaxBits)
	case !(*density >= 0 && *density <= 1):
		return fmt.Errorf("%w: --density %v is not in [0, 1]", errUsage, *density)
	}
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
	ops := 2 * float64(*n) * float64(*n) * float64(*d)
	fmt.Fprintf(w, "product:  A (%d×%d, 1 bit, %.2g%% ones) × X (%d×%d, %d bits) = C (%d×%d int32)\n",
		*n, *n, 100*float64(countOnes(adj))/float64(len(adj)), *n, *d, *nbits, *n, *d)
	fmt.Fprintf(w, "kernel:   %s\n", k.Name())
	fmt.Fprintf(w, "time:     %v (best of repeated runs)\n", best.Round(time.Microsecond))
	fmt.Fprintf(w, "speed:    %.1f GOPS logical (2·N·N·D/t), %.1f 1-bit GOPS\n", ops/best.Seconds()/1e9, ops*float64(*nbits)/best.Seconds()/1e9)
	fmt.Fprintf(w, "verified: MM2Int and 4-bit MM2Bit equal bmm.Generic bit for bit (%d values)\n", len(want))
	return nil
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
