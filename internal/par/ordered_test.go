package par

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOrderedInOrderAndBounded(t *testing.T) {
	const n, ahead = 200, 3
	var made, took atomic.Int64
	var worst atomic.Int64
	take, stop := Ordered(n, 8, ahead, func(i int) int {
		m := made.Add(1)
		if d := m - took.Load(); d > worst.Load() {
			worst.Store(d)
		}
		return i * i
	})
	for i := range n {
		assert.Equal(t, i*i, take(i))
		took.Add(1)
	}
	stop()
	stop() // a second stop does nothing
	assert.Equal(t, int64(n), made.Load())
	// A worker makes an item only while it holds one of the ahead tokens
	// (+1: took counts a take just after it gives its token back).
	assert.LessOrEqual(t, worst.Load(), int64(ahead+1))
}

func TestOrderedStopEarly(t *testing.T) {
	var made atomic.Int64
	take, stop := Ordered(1000, 4, 2, func(i int) int { made.Add(1); return i })
	assert.Equal(t, 0, take(0))
	finished := make(chan struct{})
	go func() { stop(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return with items left untaken")
	}
	assert.Less(t, made.Load(), int64(1000))
}
