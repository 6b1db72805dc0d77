//go:build !purego

package cpu

// haveAsm says the assembly kernels are compiled in.
const haveAsm = true
