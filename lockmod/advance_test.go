package lockmod

import (
	"strconv"
	"testing"
	"time"
)

// stillClock is a FakeClock whose timers never fire: what is due is left
// to the methods' own advance.
type stillClock struct{ *FakeClock }

type neverTimer struct{}

func (neverTimer) Stop() bool { return true }

func (stillClock) AfterFunc(time.Duration, func()) Timer { return neverTimer{} }

// A method that meets leases the timer has not swept ends them all before
// it reads (LOCK-06: every due event runs before a method sees state), and
// yields between steps as it goes, so that a mass of due leases does not
// keep the CPU from the rest of the server.
func TestAdvanceEndsAllDueInSteps_LOCK06(t *testing.T) {
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	defer m.Close()
	m.sweepStep = 100
	const n = 1000
	for i := range n {
		k := strconv.Itoa(i)
		if _, err := m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: "r" + k, TTL: sec}).Result(); err != nil {
			t.Fatal(err)
		}
	}
	yields := 0
	m.betweenSteps = func() { yields++ }
	clock.Advance(2 * sec)
	if s := m.Stats(); s.Leases != 0 || s.ExpiredTotal != n {
		t.Fatalf("after a method's advance: %d live, %d expired; want 0 and %d", s.Leases, s.ExpiredTotal, n)
	}
	if yields < n/100-1 {
		t.Errorf("the advance over %d due leases in steps of 100 yielded %d times; want at least %d", n, yields, n/100-1)
	}
}

// LOCK-06: a method that meets a backlog of due leases (the timer lagging)
// lets the lock go between the steps of its advance, so that the timer's
// own steps, run in between with the clock read afresh, grant a waiter
// whose holder fell due meanwhile at once, not once the method is through.
// The method still reads nothing before every event due by its now has run.
func TestLOCK06_MethodAdvanceLetsTheTimerGrantInBetween(t *testing.T) {
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	defer m.Close()
	m.sweepStep = 4
	const n = 40
	for i := range n {
		k := strconv.Itoa(i)
		if _, err := m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: "r" + k, TTL: sec}).Result(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "hot", ReqID: "holder", TTL: 3 * sec}).Result(); err != nil {
		t.Fatal(err)
	}
	waiter := m.Hold(HoldRequest{Lock: "l", Key: "hot", ReqID: "waiter", TTL: 10 * sec})
	clock.Advance(2 * sec) // the 40 are due; no timer fires
	steps, grantedMidway := 0, false
	m.betweenSteps = func() {
		steps++
		if steps != 1 {
			return
		}
		if !m.mu.TryLock() {
			t.Error("a method's advance holds the Manager's lock between its steps")
			return
		}
		m.mu.Unlock()
		clock.Advance(1500 * ms) // the holder of "hot" falls due; the timer fires late
		m.fire()
		grantedMidway = isDone(waiter)
	}
	info, ok := m.Info("l", "0") // begun at 2 s, with 40 leases due
	if ok {
		t.Fatalf("key 0 is %+v, a second past its deadline", info)
	}
	if !grantedMidway {
		t.Fatalf("the waiter was not granted by the timer's steps between the method's (%d steps)", steps)
	}
	if g := mustGrant(t, waiter); g.TTLLeft != 10*sec {
		t.Fatalf("the waiter's lease has %v left, want 10s: granted when its holder's end was swept", g.TTLLeft)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}
