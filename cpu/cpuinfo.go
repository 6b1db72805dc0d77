package cpu

import (
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/cpuid/v2"
)

// CPU features, read once. cpuid also checks that the OS saves the vector
// registers (XGETBV), so a true value means the instructions are usable.
var (
	hasPOPCNT    = cpuid.CPU.Supports(cpuid.POPCNT)
	hasAVX2      = cpuid.CPU.Supports(cpuid.AVX2)
	hasFMA       = cpuid.CPU.Supports(cpuid.AVX, cpuid.FMA3)
	hasAVX512    = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512VL, cpuid.AVX512BW)
	hasVPOPCNTDQ = hasAVX512 && cpuid.CPU.Supports(cpuid.AVX512VPOPCNTDQ)
	hasGFNI      = hasAVX512 && cpuid.CPU.Supports(cpuid.GFNI, cpuid.AVX512VBMI)
)

// Features describes the CPU as the kernels see it.
type Features struct {
	Model     string // brand string
	Arch      string // GOARCH
	Cores     int    // physical cores, 0 if unknown
	POPCNT    bool
	AVX2      bool
	FMA       bool
	AVX512    bool // F + VL + BW
	VPOPCNTDQ bool // AVX-512 VPOPCNTDQ
	Asm       bool // false when built with -tags purego or off amd64
}

// CPUFeatures returns what cpuid found.
func CPUFeatures() Features {
	return Features{
		Model:     cpuid.CPU.BrandName,
		Arch:      runtime.GOARCH,
		Cores:     cpuid.CPU.PhysicalCores,
		POPCNT:    hasPOPCNT,
		AVX2:      hasAVX2,
		FMA:       hasFMA,
		AVX512:    hasAVX512,
		VPOPCNTDQ: hasVPOPCNTDQ,
		Asm:       haveAsm,
	}
}

// ClockHz measures the core clock with a chain of dependent one-cycle adds:
// the best of many ~2 ms runs, since on a shared machine a short run is
// more likely to go uninterrupted. The benchmarks divide by it to report
// bit-MACs per cycle instead of a clock figure written in by hand.
func ClockHz() float64 {
	clockOnce.Do(func() {
		const n = 1 << 8 // 16 Ki adds per call, a few microseconds
		best := 0.0
		for rep := 0; rep < 40; rep++ {
			start := time.Now()
			adds := 0
			for time.Since(start) < 2*time.Millisecond {
				adds += addChain(n)
			}
			if hz := float64(adds) / time.Since(start).Seconds(); hz > best {
				best = hz
			}
		}
		clockHz = best
	})
	return clockHz
}

var (
	clockOnce sync.Once
	clockHz   float64
)
