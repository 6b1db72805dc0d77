//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Process is the process's CPU time so far, and false where it cannot be
// read.
func Process() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
