package lockmod

import (
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// While the timer sweeps a mass of due leases, a goroutine waiting on the
// network is let in within a couple of milliseconds of its data arriving,
// even where the process has one P (a server pinned to a CPU). Between
// steps the sweep only yielded once: the scheduler took it straight back
// and left the network to its monitor's poll, every 10 ms, so a PING
// waited ~5 ms on average and up to 10. The pacer parks it every
// sweepParkEvery instead.
func TestSweepLetsTheNetworkInOnOneP(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps 200,000 leases")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newHarness(t, Config{})
	h.m.sweepStep = 128 // short steps, even under the race detector: what is measured is the time between them
	const n = 200_000
	for i := range n {
		k := strconv.Itoa(i)
		h.granted("l", k, "r"+k, ttl(sec))
	}

	// A loopback connection: a writer that the timers wake (they run at
	// every turn of the scheduler) sends a byte a millisecond after the
	// reader took the last; the reader is woken only by the network poll.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var sent atomic.Int64
	took, stop, done := make(chan struct{}, 1), make(chan struct{}), make(chan []time.Duration)
	go func() {
		for {
			select {
			case <-took:
			case <-stop:
				return
			}
			time.Sleep(time.Millisecond)
			sent.Store(time.Now().UnixNano())
			if _, err := out.Write([]byte{1}); err != nil {
				return
			}
		}
	}()
	go func() {
		var waits []time.Duration
		b := make([]byte, 1)
		for {
			if _, err := in.Read(b); err != nil {
				done <- waits
				return
			}
			waits = append(waits, time.Duration(time.Now().UnixNano()-sent.Load()))
			select {
			case took <- struct{}{}:
			case <-stop:
			}
		}
	}()
	sweeps := 0
	h.m.betweenSteps = func() { sweeps++ }
	took <- struct{}{}
	began := time.Now()
	h.advance(2 * sec) // the timer sweeps, here, in this goroutine
	swept := time.Since(began)
	close(stop)
	in.SetReadDeadline(time.Now())
	waits := <-done
	if s := h.m.Stats(); s.ExpiredTotal != n {
		t.Fatalf("%d expired, want %d", s.ExpiredTotal, n)
	}
	if swept < 40*time.Millisecond || len(waits) == 0 {
		t.Skipf("the sweep took %v, %d steps, %d waits: too short to tell", swept, sweeps, len(waits))
	}
	slices.Sort(waits)
	median := waits[len(waits)/2]
	step := swept / time.Duration(sweeps+1)
	t.Logf("sweep of %d leases: %v in %d steps; %d waits on the network, median %v, longest %v", n, swept, sweeps+1, len(waits), median, waits[len(waits)-1])
	// The pacer parks at the first step's end after sweepParkEvery: a
	// wait is about that and a step at most, half of it at the median. The
	// limit leaves room for a loaded machine, and stays well below the
	// ~9 ms that waiting for the runtime's monitor gives.
	if limit := sweepParkEvery + 3*time.Millisecond + 2*step; median > limit {
		t.Errorf("a goroutine woken by the network waited %v (median of %d) while the timer swept in steps of %v, want at most %v", median, len(waits), step, limit)
	}
}
