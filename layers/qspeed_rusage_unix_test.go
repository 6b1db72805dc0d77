//go:build unix

package layers

import "syscall"

// qCPUTime is the process's user+system CPU time in ns, or -1. On a shared
// machine the CPU time of a pass moves less than its wall time.
func qCPUTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
