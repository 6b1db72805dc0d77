//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the process has used so far.
// Unlike wall time it does not grow while other programs hold the cores,
// so per-core efficiency measured with it holds on a shared machine.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
