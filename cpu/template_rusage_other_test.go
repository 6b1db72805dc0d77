//go:build !unix

package cpu

func cpuTime() int64 { return -1 }
