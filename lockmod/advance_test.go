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
