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
	shares := make([]share, workers)
	for w := range shares {
		shares[w].next.Store(int64(w * n / workers))
		shares[w].end = int64((w + 1) * n / workers)
	}
	Run(workers, func(w int) {
		for k := range workers {
			s := &shares[(w+k)%workers]
			for {
				i := s.next.Add(1) - 1
				if i >= s.end {
					break
				}
				fn(int(i))
			}
		}
	})
}

// share is one participant's part of a For loop, padded to its own cache
// line.
type share struct {
	next atomic.Int64
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
	t.grow(min(workers, runtime.GOMAXPROCS(0)) - 1)
	j := &job{body: body, n: int64(workers)}
	j.next.Store(1) // index 0 is the caller's
	t.publish(j)
	j.help(true)
	// Every index is claimed; wait for the members still in a body,
	// yielding now and then in case one of them waits for this processor.
	for i := 1; j.active.Load() > 0; i++ {
		if i%4096 == 0 {
			runtime.Gosched()
		}
	}
	t.cur.Store(nil)
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
	next   atomic.Int64
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
		w := j.next.Add(1) - 1
		if w >= j.n {
			break
		}
		j.body(int(w))
	}
	j.active.Add(-1)
}

// team is the process's worker goroutines. One region runs on it at a time
// (busy); seq counts the regions published, cur is the current one.
type team struct {
	busy     atomic.Bool
	cur      atomic.Pointer[job]
	seq      atomic.Uint64
	sleepers atomic.Int64
	wake     chan struct{}

	mu   sync.Mutex
	size int
}

// maxTeam bounds the team (and the wake channel's buffer).
const maxTeam = 1024

var theTeam = team{wake: make(chan struct{}, maxTeam)}

// grow starts members until the team has at least n.
func (t *team) grow(n int) {
	n = min(n, maxTeam)
	t.mu.Lock()
	defer t.mu.Unlock()
	for ; t.size < n; t.size++ {
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
// and measured that way the 1M-node GCN pass ran at one-thread speed in
// about half the runs (218 against 107 ms); the poll is short and the
// runtime preempts it like any other loop.
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
