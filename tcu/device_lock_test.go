package tcu

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeDevice is a Device without a driver: its work (run, Close) and
// module map are the real ones, so their lock structure is tested without
// a GPU.
func fakeDevice() *Device { return &Device{modules: map[string]*module{}} }

// waitAll waits for n results, failing (instead of hanging until the test
// binary's timeout) when they do not come: the callers are deadlocked.
func waitAll(t *testing.T, res <-chan error, n int, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for i := 0; i < n; i++ {
		select {
		case err := <-res:
			require.NoError(t, err)
		case <-deadline:
			t.Fatalf("deadlock: %d of %d device calls still waiting after %v", n-i, n, limit)
		}
	}
}

// A caller waiting to run work while the device's work looks up a module:
// the module lock must not be held while waiting (before the fix, run held
// it while waiting for the busy device, and the work waited for it: the fp
// conformance tests' hang).
func TestRunWhileWorkLooksUpModule(t *testing.T) {
	d := fakeDevice()
	inside, calling := make(chan struct{}), make(chan struct{})
	res := make(chan error, 2)
	go func() {
		res <- d.run(func() error {
			close(inside)
			<-calling
			// Let the other caller reach run, which waits for this
			// work, before the work takes the module lock.
			time.Sleep(50 * time.Millisecond)
			if d.module("k") != nil {
				return fmt.Errorf("module k found in an empty map")
			}
			return nil
		})
	}()
	<-inside
	go func() {
		close(calling)
		res <- d.run(func() error { return nil })
	}()
	waitAll(t, res, 2, 10*time.Second)
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.run(func() error { return nil }), ErrClosed)
}

// Many callers at once, as the parallel fp subtests are: module lookups on
// in and out of device work, loads recorded in it, and Close afterwards.
func TestRunConcurrentModuleUse(t *testing.T) {
	d := fakeDevice()
	const callers, calls = 16, 60
	res := make(chan error, callers)
	var loads sync.Map // key -> loads, to check each key is loaded once
	for c := 0; c < callers; c++ {
		go func() {
			var err error
			for i := 0; i < calls && err == nil; i++ {
				key := fmt.Sprint(i % 37)
				// As fpFunctions: a lookup off the thread, then the load on it.
				_ = d.module(key)
				err = d.run(func() error {
					// Device work takes a while (a load, a copy), so callers pile up at run.
					time.Sleep(20 * time.Microsecond)
					if d.module(key) == nil {
						d.addModule(key, &module{funcs: map[string]uintptr{}})
						if _, dup := loads.LoadOrStore(key, true); dup {
							return fmt.Errorf("module %s loaded twice", key)
						}
					}
					return nil
				})
			}
			res <- err
		}()
	}
	waitAll(t, res, callers, 30*time.Second)
	require.NoError(t, d.Close())
	require.Len(t, d.modules, 37)
	require.ErrorIs(t, d.Close(), ErrClosed)
}

// Close while callers are running work: every call either runs or gets
// ErrClosed, and no work runs once Close has returned.
func TestCloseWhileRunning(t *testing.T) {
	d := fakeDevice()
	const callers = 8
	res := make(chan error, callers)
	start := make(chan struct{})
	var closed atomic.Bool
	for c := 0; c < callers; c++ {
		go func() {
			<-start
			for {
				if err := d.run(func() error {
					_ = d.module("k")
					if closed.Load() {
						return fmt.Errorf("work ran after Close returned")
					}
					return nil
				}); err != nil {
					if err == ErrClosed {
						err = nil
					}
					res <- err
					return
				}
			}
		}()
	}
	close(start)
	time.Sleep(20 * time.Millisecond)
	closing := make(chan error, 1)
	go func() {
		err := d.Close()
		closed.Store(true)
		closing <- err
	}()
	waitAll(t, closing, 1, 10*time.Second)
	waitAll(t, res, callers, 10*time.Second)
}

// Callers preparing the same fp variant at once compile it once; while
// they wait for the compile, the device stays free for other work.
func TestCompileOnce(t *testing.T) {
	d := fakeDevice()
	const callers = 8
	var builds sync.WaitGroup
	builds.Add(1)
	release := make(chan struct{})
	n := 0
	build := func() ([]byte, error) {
		n++ // only the builder runs this: the race detector checks that too
		builds.Done()
		<-release
		return []byte("cubin"), nil
	}
	type result struct {
		cubin []byte
		err   error
	}
	res := make(chan result, callers)
	for c := 0; c < callers; c++ {
		go func() {
			cubin, done, err := d.compileOnce("k", build)
			// As fpFunctions: load in device work, then done.
			if err == nil {
				err = d.run(func() error {
					if d.module("k") == nil {
						d.addModule("k", &module{funcs: map[string]uintptr{}})
					}
					return nil
				})
			}
			done()
			res <- result{cubin, err}
		}()
	}
	builds.Wait()
	ran := make(chan error, 1)
	go func() { ran <- d.run(func() error { return nil }) }()
	waitAll(t, ran, 1, 10*time.Second)
	close(release)
	deadline := time.After(10 * time.Second)
	for c := 0; c < callers; c++ {
		select {
		case r := <-res:
			require.NoError(t, r.err)
			// A caller that came after the load needs no cubin.
			if r.cubin != nil {
				require.Equal(t, "cubin", string(r.cubin))
			}
		case <-deadline:
			t.Fatalf("deadlock: %d of %d callers still waiting for the compile", callers-c, callers)
		}
	}
	require.Equal(t, 1, n, "compiles")
	cubin, done, err := d.compileOnce("k", func() ([]byte, error) { return nil, fmt.Errorf("built again") })
	done()
	require.NoError(t, err)
	require.Nil(t, cubin, "the module is loaded")
	require.Empty(t, d.building)
	require.NoError(t, d.Close())
}
