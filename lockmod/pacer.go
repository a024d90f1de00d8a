package lockmod

// Pacing a long sweep so that the rest of the process keeps the CPU and the
// network.

import (
	"runtime"
	"time"
)

// pacer spaces the steps of one sweep. Between two steps it yields
// (runtime.Gosched), and once sweepParkEvery has gone by since it last
// parked, it parks the sweeping goroutine until the scheduler next polls
// the network (see parkForPoll) instead. Yielding alone is not enough where
// the server has one P (GOMAXPROCS=1, as when it is pinned to a CPU): the
// scheduler runs what is in its run queues, the sweeper again at once, and
// polls the network only when they are empty, or when its monitor does
// (every 10 ms) — a PING that came in would wait for that.
//
// The times here are the machine's, not the store's: they pace the CPU,
// and decide nothing about any lease.
type pacer struct{ parked time.Time }

// sweepParkEvery is the longest a sweep runs without letting the network
// in (issue 19's mass expiry: PING/GET p50 10 ms with Gosched alone).
const sweepParkEvery = 500 * time.Microsecond

// pause is what a sweep does between two of its steps.
func (p *pacer) pause() {
	if p.parked.IsZero() {
		p.parked = time.Now()
	}
	if time.Since(p.parked) < sweepParkEvery {
		runtime.Gosched()
		return
	}
	if !parkForPoll() {
		// A sleep lets the network in too, but where nothing else runs
		// the runtime makes it a millisecond, and gives the CPU away.
		time.Sleep(time.Microsecond)
	}
	p.parked = time.Now()
}
