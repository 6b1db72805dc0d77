//go:build !amd64 || purego

package cpu

// asmBitImpls is empty without assembly: the generic path only.
func asmBitImpls() []*bitImpl { return nil }
