package tcu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPoll: poll takes a value sent while it spins and one sent after it
// has gone to sleep, with or without spinning, and reports a closed
// channel.
func TestPoll(t *testing.T) {
	for _, spin := range []bool{true, false} {
		for _, wait := range []time.Duration{0, spinFor / 4, 3 * spinFor} {
			c := make(chan int)
			go func() {
				time.Sleep(wait)
				c <- 7
				close(c)
			}()
			v, ok := poll(c, spin)
			assert.True(t, ok, "spin %v, after %v", spin, wait)
			assert.Equal(t, 7, v, "spin %v, after %v", spin, wait)
			_, ok = poll(c, spin)
			assert.False(t, ok, "closed: spin %v, after %v", spin, wait)
		}
	}
}

// BenchmarkHandOver is one op of a pass on a device thread without a
// driver: 20 µs of work on the device thread, then 10 µs on the host, by
// run (both sides poll) or runLast (neither does). The gap between them is
// what the sleeping sides' wake-ups cost on this machine.
func BenchmarkHandOver(b *testing.B) {
	busy := func(d time.Duration) {
		for t := time.Now(); time.Since(t) < d; {
		}
	}
	for _, hand := range []string{"run", "runLast"} {
		b.Run(hand, func(b *testing.B) {
			d := fakeDevice()
			defer d.Close()
			call := d.run
			if hand == "runLast" {
				call = d.runLast
			}
			for range b.N {
				if err := call(func() error { busy(20 * time.Microsecond); return nil }); err != nil {
					b.Fatal(err)
				}
				busy(10 * time.Microsecond)
			}
		})
	}
}
