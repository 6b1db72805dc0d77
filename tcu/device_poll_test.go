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
