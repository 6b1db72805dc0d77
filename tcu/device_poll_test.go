package tcu

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPoll: poll takes a value sent while it spins and one sent after it
// has gone to sleep, and reports a closed channel.
func TestPoll(t *testing.T) {
	for _, wait := range []time.Duration{0, spinFor / 4, 3 * spinFor} {
		c := make(chan int)
		go func() {
			time.Sleep(wait)
			c <- 7
			close(c)
		}()
		v, ok := poll(c)
		assert.True(t, ok, "after %v", wait)
		assert.Equal(t, 7, v, "after %v", wait)
		_, ok = poll(c)
		assert.False(t, ok, "closed, after %v", wait)
	}
}
