//go:build !unix

package cpu

func tplCpuTime() int64 { return -1 }
