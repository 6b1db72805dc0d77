//go:build !amd64 || purego

package cpu

// haveAsm says the assembly kernels are compiled in.
const haveAsm = false
