package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/tcu"
)

// The GPU backend's CLI hooks: the backend that runs plans, the tcu
// kernel's benchmark table and its section of `qgtc info`.

func init() {
	openGPUBackend = openTCUBackend
	gpuCount = func() (int, error) {
		devs, err := tcu.Devices()
		return len(devs), err
	}
	gpuBenchBMM = benchTCU
	infoSections = append(infoSections, gpuInfo)
}

// openTCUBackend opens GPU ordinal as a bmm.Backend for compiled plans;
// the closer releases the backend's operands, then the device.
func openTCUBackend(ordinal int) (bmm.Backend, io.Closer, error) {
	k, d, err := openTCUOn(ordinal)
	if err != nil {
		return nil, nil, err
	}
	be, err := tcu.NewBackend(k.(*tcu.Kernel))
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return be, closers{be, d}, nil
}

// closers closes each in turn and reports every failure.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func openTCU() (bmm.Kernel, io.Closer, error) { return openTCUOn(0) }

func openTCUOn(ordinal int) (bmm.Kernel, io.Closer, error) {
	d, err := tcu.Open(ordinal)
	if err != nil {
		return nil, nil, err
	}
	k, err := tcu.NewKernel(d)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return k, d, nil
}

// gpuInfo reports the devices, NVRTC and the kernel path, or why there is
// no GPU path (the CPU path carries on either way).
func gpuInfo(w io.Writer) {
	fmt.Fprintln(w, "GPU:")
	devs, err := tcu.Devices()
	if err != nil {
		// "unavailable" is said once: not "unavailable: tcu: GPU path unavailable: ...".
		why := strings.TrimPrefix(err.Error(), tcu.ErrUnavailable.Error()+": ")
		fmt.Fprintf(w, "  unavailable: %s\n  (the CPU kernels are used)\n", why)
		return
	}
	for _, d := range devs {
		fmt.Fprintf(w, "  %v\n", d)
	}
	k, c, err := openTCU()
	if err != nil {
		fmt.Fprintf(w, "  kernel unavailable: %v\n", err)
		return
	}
	defer c.Close()
	tk := k.(*tcu.Kernel)
	fmt.Fprintf(w, "  NVRTC %s, kernel %s\n", tk.Device().NVRTCVersion(), tk.Name())
	if ok, why := tk.WGMMA(); !ok {
		fmt.Fprintf(w, "  wgmma off: %s\n", why)
	}
}

// benchTCU times each shape on GPU 0 (CUDA events around the kernels
// only, warm-up, median of repeats) and writes a table row per shape.
func benchTCU(shapes []benchShape, w io.Writer) error {
	k, c, err := openTCU()
	if err != nil {
		return err
	}
	defer c.Close()
	tk := k.(*tcu.Kernel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "shape\tM\tK\tN\tbits\tus\tT ops/s\tP bit-ops/s\t%% of %.1fP\tvisited\tvariant\t\n", tcu.WGMMALimit/1e15)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		a, b, err := gpuBenchOperands(r, s)
		if err != nil {
			return fmt.Errorf("shape %s: %w", s.Name, err)
		}
		res, err := tk.Bench([]*bittensor.Tensor{a}, []*bittensor.Tensor{b}, tcu.BenchOptions{})
		if err != nil {
			return fmt.Errorf("shape %s: %w", s.Name, err)
		}
		ops := 2 * float64(s.M) * float64(s.K) * float64(s.N)
		sec := res.Time.Seconds()
		bitops := ops * float64(s.ABits*s.BBits)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%dx%d\t%.2f\t%.1f\t%.3f\t%.1f\t%.3f\t%s\t\n", s.Name, s.M, s.K, s.N, s.ABits, s.BBits,
			sec*1e6, ops/sec/1e12, bitops/sec/1e15, 100*bitops/sec/tcu.WGMMALimit, res.NonZero, res.Config)
	}
	return tw.Flush()
}

// gpuBenchOperands draws the shape's operands: A from benchA, the same
// values (density of non-zeros, block-diagonal structure) the CPU rows of
// `qgtc bench bmm` multiply, and B uniform s-bit values.
func gpuBenchOperands(r *rand.Rand, s benchShape) (a, b *bittensor.Tensor, err error) {
	if s.ABits < 1 || s.ABits > 16 || s.BBits < 1 || s.BBits > 16 {
		return nil, nil, fmt.Errorf("%w: bench bit widths %d×%d are not in 1..16", errUsage, s.ABits, s.BBits)
	}
	if a, err = bittensor.PackRows(benchA(s, r), s.M, s.K, s.ABits); err != nil {
		return nil, nil, err
	}
	bv := make([]int32, s.K*s.N)
	for i := range bv {
		bv[i] = int32(r.IntN(1 << s.BBits))
	}
	b, err = bittensor.PackCols(bv, s.K, s.N, s.BBits)
	return a, b, err
}
