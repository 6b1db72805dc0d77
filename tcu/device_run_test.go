package tcu

import (
	"testing"
	"time"
)

// BenchmarkRun is one op of a pass on a Device without a driver: 20 µs of
// device work, then 10 µs on the host. What passes 30 µs an op is what
// running the work costs (the lock, the OS thread's lock; no driver call).
func BenchmarkRun(b *testing.B) {
	busy := func(d time.Duration) {
		for t := time.Now(); time.Since(t) < d; {
		}
	}
	d := fakeDevice()
	defer d.Close()
	for range b.N {
		if err := d.run(func() error { busy(20 * time.Microsecond); return nil }); err != nil {
			b.Fatal(err)
		}
		busy(10 * time.Microsecond)
	}
}
