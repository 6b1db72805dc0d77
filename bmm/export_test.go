package bmm

// SwapRegistry empties the kernel registry down to Generic and returns a
// function restoring the previous one, so registry tests leave no trace.
func SwapRegistry() (restore func()) {
	regMu.Lock()
	saved := registry
	registry = []registered{{Generic{}, 0}}
	regMu.Unlock()
	return func() {
		regMu.Lock()
		registry = saved
		regMu.Unlock()
	}
}
