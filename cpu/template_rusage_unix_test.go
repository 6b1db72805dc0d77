//go:build unix

package cpu

import "syscall"

// tplCpuTime is the process's user+system CPU time in ns, or -1.
func tplCpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
