package par

import (
	"sync"
	"sync/atomic"
)

// Ordered makes items 0..n-1 with mk on workers goroutines, at most ahead
// of them made and not yet taken, for a consumer that takes them in
// increasing order (several consumers may, sharing one increasing
// counter). take(i) waits for item i; stop ends the workers and waits for
// them (once is enough; later calls do nothing), after the last take or on
// giving up early.
func Ordered[T any](n, workers, ahead int, mk func(i int) T) (take func(i int) T, stop func()) {
	slots := make([]chan T, n)
	for i := range slots {
		slots[i] = make(chan T, 1) // written once: a worker never blocks on it
	}
	// A worker holds a token from taking an index until its item is taken,
	// so a consumer waiting on item i never waits behind items after i.
	tokens := make(chan struct{}, max(1, ahead))
	done := make(chan struct{})
	var taken atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				select {
				case tokens <- struct{}{}:
				case <-done:
					return
				}
				i := int(taken.Add(1) - 1)
				if i >= n {
					return
				}
				slots[i] <- mk(i)
			}
		})
	}
	var once sync.Once
	take = func(i int) T {
		v := <-slots[i]
		<-tokens
		return v
	}
	stop = func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
	return take, stop
}
