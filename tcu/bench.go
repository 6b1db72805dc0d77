package tcu

import (
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// WGMMALimit is the measured wgmma b1 rate of the H100/H200 (shared/GPU.md),
// in bit-ops/s: the hardware limit the benchmarks (go test -bench, qgtc
// bench) report every figure against.
const WGMMALimit = 15.5e15

// BenchOptions controls Kernel.Bench.
type BenchOptions struct {
	Warmup  int  // untimed launches first (default 3)
	Repeats int  // timed batches; the median is reported (default 15)
	Inner   int  // back-to-back launches per timed batch (default 10)
	Dense   bool // visit every k-step (no zero-tile lists)
	Path    string
	// OutBits > 0 times MulBit instead of MulInt: the products
	// re-quantized with Requant to OutBits-bit codes, packed by rows (by
	// columns with OutCols), default padding.
	OutBits int
	OutCols bool
	Requant bmm.Requant
}

// BenchResult is one timed product (or batch of products in one launch).
type BenchResult struct {
	Time   time.Duration // median time of one launch, kernel only (CUDA events)
	Config string        // the variant that ran
	// NonZero is the fraction of A's (row tile, k-step) tiles the kernel
	// visited: 1 without zero-tile lists.
	NonZero float64
	// Out holds each product's result from the timed launches (MulInt);
	// Bits holds them with OutBits set (MulBit).
	Out  [][]int32
	Bits []*bittensor.Tensor
}

// Bench times the products as[i]·bs[i] (one launch for all, int32 output,
// or re-quantized bit planes with o.OutBits) with CUDA events around the
// kernel launches only: operands are uploaded and zero-tile lists built
// once, outside the timing. MulBit launches OR their words into the
// output, zeroed once: repeated launches of the same product leave the
// same result.
func (k *Kernel) Bench(as, bs []*bittensor.Tensor, o BenchOptions) (BenchResult, error) {
	if o.Warmup <= 0 {
		o.Warmup = 3
	}
	if o.Repeats <= 0 {
		o.Repeats = 15
	}
	if o.Inner <= 0 {
		o.Inner = 10
	}
	kk := k
	if o.Path != "" {
		var err error
		if kk, err = k.WithPath(o.Path); err != nil {
			return BenchResult{}, err
		}
	}
	if len(as) != len(bs) || len(as) == 0 {
		return BenchResult{}, fmt.Errorf("%w: %d A's, %d B's", ErrShape, len(as), len(bs))
	}
	jobs := make([]job, len(as))
	for i := range as {
		if as[i] == nil || bs[i] == nil {
			return BenchResult{}, fmt.Errorf("%w: nil operand %d", ErrShape, i)
		}
		jobs[i] = job{a: as[i], b: bs[i], mode: modeInt, noZTJ: o.Dense}
		if o.OutBits > 0 {
			packing := bittensor.ByRows
			if o.OutCols {
				packing = bittensor.ByCols
			}
			t, err := bittensor.New(as[i].Rows(), bs[i].Cols(), o.OutBits, packing, bittensor.DefaultPadding)
			if err != nil {
				return BenchResult{}, fmt.Errorf("%w: MulBit output of product %d: %w", ErrShape, i, err)
			}
			jobs[i].mode, jobs[i].bits, jobs[i].rq = modeBit, t, o.Requant
		} else {
			jobs[i].ints = make([]int32, as[i].Rows()*bs[i].Cols())
		}
	}
	if err := checkJobs(jobs); err != nil {
		return BenchResult{}, err
	}
	var res BenchResult
	d := k.d
	err := d.run(func() error {
		p, err := kk.prepare(jobs)
		if err != nil {
			return err
		}
		defer p.free()
		res.Config = p.cfg.String()
		res.NonZero = 1
		total := 0.0
		for _, j := range jobs {
			total += float64(((j.m + p.cfg.bm - 1) / p.cfg.bm) * (layoutOf(j.a).lw / stepWords))
		}
		if total > 0 {
			res.NonZero = p.work / total
		}
		if err := p.zeroOutputs(); err != nil {
			return err
		}
		for i := 0; i < o.Warmup; i++ {
			if err := p.launch(); err != nil {
				return err
			}
		}
		var ev [2]uintptr
		for i := range ev {
			if err := d.drv.do("cuEventCreate", uintptr(unsafe.Pointer(&ev[i])), 0); err != nil {
				return err
			}
			defer d.drv.do("cuEventDestroy_v2", ev[i])
		}
		if err := d.drv.do("cuStreamSynchronize", d.stream.h); err != nil {
			return err
		}
		times := make([]time.Duration, 0, o.Repeats)
		for r := 0; r < o.Repeats; r++ {
			if err := d.drv.do("cuEventRecord", ev[0], d.stream.h); err != nil {
				return err
			}
			for i := 0; i < o.Inner; i++ {
				if err := p.launch(); err != nil {
					return err
				}
			}
			if err := d.drv.do("cuEventRecord", ev[1], d.stream.h); err != nil {
				return err
			}
			if err := d.drv.do("cuEventSynchronize", ev[1]); err != nil {
				return err
			}
			var ms float32
			if err := d.drv.do("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), ev[0], ev[1]); err != nil {
				return err
			}
			times = append(times, time.Duration(float64(ms)*1e6/float64(o.Inner)))
		}
		slices.Sort(times)
		res.Time = times[len(times)/2]
		// Results of the timed launches must still be right: fetch them
		// so the caller can check.
		return p.fetch()
	})
	if err != nil {
		return BenchResult{}, err
	}
	for _, j := range jobs {
		if j.mode == modeBit {
			res.Bits = append(res.Bits, j.bits)
		} else {
			res.Out = append(res.Out, j.ints)
		}
	}
	return res, nil
}
