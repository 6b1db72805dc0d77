//go:build !amd64 || purego

package cpu

// haveAsm says the assembly kernels are compiled in.
const haveAsm = false

// addChain runs 64·n dependent steps, the clock calibration loop of the
// benchmarks, and returns 64·n as the assembly one does (ClockHz counts
// them). Without assembly the compiler may fuse or reorder them, so the
// bit-MACs/cycle figure of a purego build is approximate.
func addChain(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		for j := 0; j < 64; j++ {
			x = x*3 + 1 // the multiply keeps the chain from folding
		}
	}
	chainSink = x // keeps the chain from being dropped as dead code
	return 64 * n
}

var chainSink int
