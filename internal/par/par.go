package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Spin is how long an idle team member polls for the next region before it
// parks. Loops that follow each other closer than this pay no wake-up.
const Spin = 500 * time.Microsecond

// For calls fn(i) for every i in [0, n) on up to workers participants (the
// caller among them) and returns when every call has returned. Participant
// w first takes the indices of its own contiguous share [w·n/W, (w+1)·n/W)
// one at a time, then helps with the others' shares through the same
// counters. Owning a share keeps each thread on the same part of the
// output from one call to the next (the caller is always participant 0),
// so repeated loops over one buffer do not move its cache lines between
// cores; the help evens out unequal items.
func For(n, workers int, fn func(i int)) {
	if n <= 0 {
		return
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	t := &theTeam
	if runtime.GOMAXPROCS(0) > 1 && t.busy.CompareAndSwap(false, true) {
		// On the team, the loop uses the team's share counters, reused
		// from region to region: nothing fresh for the caller to allocate
		// and write (a cache miss each) before the members can start.
		defer t.busy.Store(false)
		t.shares = setShares(t.shares, n, workers)
		t.fn = fn
		t.region(workers, theForBody)
		t.fn = nil
		return
	}
	shares := setShares(nil, n, workers)
	Run(workers, func(w int) { forShare(shares, w, fn) })
}

// setShares returns s (grown to workers if needed) holding the shares of
// [0, n): plain stores, published to the other participants by the
// region's start.
func setShares(s []share, n, workers int) []share {
	if cap(s) < workers {
		s = make([]share, workers)
	}
	s = s[:workers]
	for w := range s {
		s[w].next = int64(w * n / workers)
		s[w].end = int64((w + 1) * n / workers)
	}
	return s
}

// forShare is participant w's part of a For loop over shares: its own
// share, then the others'.
func forShare(shares []share, w int, fn func(i int)) {
	workers := len(shares)
	for k := range workers {
		s := &shares[(w+k)%workers]
		if k > 0 && atomic.LoadInt64(&s.next) >= s.end {
			continue // done: looking leaves the line in its owner's cache, taking would not
		}
		for {
			i := atomic.AddInt64(&s.next, 1) - 1
			if i >= s.end {
				break
			}
			fn(int(i))
		}
	}
}

// forBody is a For loop's body on the team (theForBody).
func (t *team) forBody(w int) { forShare(t.shares, w, t.fn) }

// share is one participant's part of a For loop, padded to its own cache
// line. next is set with a plain store before the region starts and only
// added to atomically inside it.
type share struct {
	next int64
	end  int64
	_    [48]byte
}

// Run calls body(w) exactly once for each w in [0, workers), concurrently
// on the caller and the team, and returns when every call has returned.
// The caller runs body(0); team members claim the others in turn. Bodies
// must not wait for each other: any of them may run after another has
// finished (all of them on the caller when no team member is free).
func Run(workers int, body func(w int)) {
	switch {
	case workers <= 0:
		return
	case workers == 1 || runtime.GOMAXPROCS(0) == 1:
		for w := range workers {
			body(w)
		}
		return
	}
	t := &theTeam
	if !t.busy.CompareAndSwap(false, true) {
		spawn(workers, body) // nested or concurrent region: plain goroutines
		return
	}
	defer t.busy.Store(false)
	t.region(workers, body)
}

// region runs body for each of workers participants on the caller and the
// team, which the caller holds (busy).
func (t *team) region(workers int, body func(w int)) {
	t.grow(min(workers, runtime.GOMAXPROCS(0)) - 1)
	j := &job{body: body, n: int64(workers), next: 1} // index 0 is the caller's
	t.publish(j)
	j.help(true)
	// Every index is claimed; wait for the members still in a body,
	// yielding now and then in case one of them waits for this processor.
	for i := 1; j.active.Load() > 0; i++ {
		if i%4096 == 0 {
			runtime.Gosched()
		}
	}
	// cur keeps pointing at j (a member that sees this region late claims
	// nothing from it): clearing cur would take its line from the members
	// that just read it, on the caller's way out. No member calls j.body
	// any more; drop it, and with it what the region's bodies reference.
	j.body = nil
}

// spawn is Run without the team: a goroutine per participant past the
// first, which runs on the caller.
func spawn(workers int, body func(w int)) {
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() { defer wg.Done(); body(w) }()
	}
	body(0)
	wg.Wait()
}

// job is one parallel region: participant indices are claimed through next;
// active counts the members inside help.
type job struct {
	body   func(w int)
	n      int64
	next   int64 // set before the region is published, then only added to atomically
	active atomic.Int64
}

// help runs bodies for indices claimed one by one until none is left,
// after body(0) for the caller (own). A member that arrives after the
// region ended claims nothing.
func (j *job) help(own bool) {
	j.active.Add(1)
	if own {
		j.body(0)
	}
	for {
		w := atomic.AddInt64(&j.next, 1) - 1
		if w >= j.n {
			break
		}
		j.body(int(w))
	}
	j.active.Add(-1)
}

// team is the process's worker goroutines. One region runs on it at a time
// (busy); seq counts the regions published, cur is the current one.
//
// The fields are laid out by who touches them, a cache line each: idle
// members poll seq, so it shares its line with nothing the caller writes
// (publishing is then one store that takes the line from them, not one
// per field); members read cur once per region; busy, mu and size are the
// caller's alone. With all of them on one line, the caller's writes took
// it from the polling member three times per region: an almost empty
// region (BenchmarkRegion items=2, 2 cores) took 365-378 ns, 266-338 ns
// with this layout (three runs of each, taken in turn).
type team struct {
	_   [64]byte // off the line of whatever the linker puts before
	seq atomic.Uint64
	_   [56]byte

	cur      atomic.Pointer[job]
	sleepers atomic.Int64
	wake     chan struct{}
	_        [40]byte

	busy atomic.Bool
	size atomic.Int64 // members started; grown under mu
	mu   sync.Mutex
	// The For loop running on the team (forBody's operands).
	shares []share
	fn     func(i int)
	_      [16]byte
}

// maxTeam bounds the team (and the wake channel's buffer).
const maxTeam = 1024

var theTeam = team{wake: make(chan struct{}, maxTeam)}

// theForBody is theTeam.forBody, made once.
var theForBody = theTeam.forBody

// grow starts members until the team has at least n.
func (t *team) grow(n int) {
	n = min(n, maxTeam)
	if t.size.Load() >= int64(n) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for ; t.size.Load() < int64(n); t.size.Add(1) {
		go t.member(t.seq.Load())
	}
}

// publish makes j the current region and wakes the parked members.
func (t *team) publish(j *job) {
	t.cur.Store(j)
	t.seq.Add(1)
	for k := t.sleepers.Load(); k > 0; k-- {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// member is a team goroutine: it waits for a region newer than the last it
// saw and helps with it, forever.
func (t *team) member(seen uint64) {
	for {
		seen = t.await(seen)
		if j := t.cur.Load(); j != nil {
			j.help(false)
		}
	}
}

// await returns the region count once it differs from seen: polling for
// Spin, then parked until publish wakes it. A member woken by a stale token
// polls and parks again. The poll does not yield (runtime.Gosched): a
// yielding member moves between processors through the global run queue,
// and then a pass can run at one-thread speed (bench/manycore/RESULTS.md);
// the poll is short and the runtime preempts it like any other loop.
func (t *team) await(seen uint64) uint64 {
	deadline := time.Now().Add(Spin)
	for i := 0; ; i++ {
		if s := t.seq.Load(); s != seen {
			return s
		}
		if i%256 == 255 && time.Now().After(deadline) {
			t.sleepers.Add(1)
			if s := t.seq.Load(); s != seen {
				t.sleepers.Add(-1)
				return s
			}
			<-t.wake
			t.sleepers.Add(-1)
			deadline = time.Now().Add(Spin)
		}
	}
}
