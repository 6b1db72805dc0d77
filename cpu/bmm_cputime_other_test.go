//go:build !unix

package cpu

import "time"

// processCPU is not available here; benchmarks report wall-clock figures only.
func processCPU() (time.Duration, bool) { return 0, false }
