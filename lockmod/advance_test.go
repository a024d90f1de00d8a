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

// LOCK-06, LOCK-01: a method that reads a key none of whose events is due
// answers without sweeping a backlog of other keys' due leases (a worker's
// HOLD on a key of its own while a million others fall due): what it reads
// is as the whole sweep would leave it. It ends the due leases with a
// waiter, as the sweep does first; one that reads a due key or a due
// request still runs everything due first.
func TestLOCK06_MethodOnAQuietKeyLeavesTheBacklogToTheTimer(t *testing.T) {
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	defer m.Close()
	m.sweepStep = 4
	const n = 40
	grants := make([]Grant, n)
	for i := range n {
		k := strconv.Itoa(i)
		grants[i] = mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: "r" + k, TTL: sec}))
	}
	calm := mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "calm", ReqID: "calm", TTL: 10 * sec}))
	waiter := m.Hold(HoldRequest{Lock: "l", Key: "calm", ReqID: "waiter", TTL: 10 * sec})
	mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "hot", ReqID: "hot", TTL: sec}))
	hotWaiter := m.Hold(HoldRequest{Lock: "l", Key: "hot", ReqID: "hot-waiter", TTL: 10 * sec})
	// The 40 are due, and remembered as ended once swept until 2 s
	// (LOCK-03); no timer fires.
	clock.Advance(1500 * ms)
	steps := 0
	m.betweenSteps = func() { steps++ }
	dueLeft := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		left, now := 0, m.now()
		for _, ref := range m.events.refs {
			if m.slab.get(ref).at <= now {
				left++
			}
		}
		return left
	}

	fresh := mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "fresh", ReqID: "fresh", TTL: sec}))
	// A due lease with a waiter is ended by any lock command, as the
	// timer's sweep ends those first.
	if !isDone(hotWaiter) {
		t.Fatal("hot's holder is due, and its waiter was not granted by a HOLD on another key")
	}
	if fresh.Fence <= calm.Fence {
		t.Fatalf("fresh's fence %d is not above calm's %d", fresh.Fence, calm.Fence)
	}
	if left, err := m.Renew(calm.LeaseID(), 0); err != nil || left != 10*sec {
		t.Fatalf("Renew(calm) = %v, %v; want 10s", left, err)
	}
	if info, ok := m.Info("l", "calm"); !ok || info.Waiters != 1 || info.Fence != calm.Fence {
		t.Fatalf("Info(calm) = %+v, %v; want held with fence %d and 1 waiter", info, ok, calm.Fence)
	}
	if err := m.Release(calm.LeaseID()); err != nil {
		t.Fatal(err)
	}
	if g := mustGrant(t, waiter); g.TTLLeft != 10*sec {
		t.Fatalf("the waiter's lease has %v left, want 10s", g.TTLLeft)
	}
	if steps != 0 {
		t.Fatalf("methods on quiet keys swept the backlog (%d steps)", steps)
	}
	// The backlog is the timer's.
	if left := dueLeft(); left != n {
		t.Fatalf("%d events still due after four methods on quiet keys, want %d", left, n)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}

	// A retried HOLD whose reqid's lease is due: everything due is run
	// first, and the retry is told its lease expired.
	var k int
	m.mu.Lock()
	for k = range n {
		if due(m.lease(grants[k].id), m.now()) {
			break
		}
	}
	m.mu.Unlock()
	retry := m.Hold(HoldRequest{Lock: "l", Key: strconv.Itoa(k), ReqID: "r" + strconv.Itoa(k), TTL: sec})
	mustLostTicket(t, retry, ReasonExpired)
	if steps == 0 {
		t.Fatal("a HOLD whose reqid's lease was due did not sweep")
	}
	if left := dueLeft(); left != 0 {
		t.Fatalf("%d events still due after a method that met a due request", left)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}

// LOCK-06: while the timer's sweep is under way, a method that leaves what
// is due to it (catchUp) arms no other timer, and a timer that fires
// meanwhile leaves the sweep to the one under way: one sweeper, paced,
// rather than one more for every lock command while a million leases fall
// due. The sweep arms the next timer when it is done.
func TestLOCK06_OneSweepAtATime(t *testing.T) {
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	defer m.Close()
	m.sweepStep = 2
	const n = 10
	for i := range n {
		k := strconv.Itoa(i)
		mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: "r" + k, TTL: sec}))
	}
	clock.Advance(1500 * ms)
	steps := 0
	m.betweenSteps = func() {
		steps++
		if steps != 1 {
			return
		}
		mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "fresh", ReqID: "fresh", TTL: 10 * sec}))
		m.mu.Lock()
		armed, left := m.timer != nil, m.events.len()
		m.mu.Unlock()
		if armed {
			t.Error("a HOLD armed a timer while the timer's sweep was under way")
		}
		m.fire() // a stale timer firing mid-sweep
		m.mu.Lock()
		after := m.events.len()
		m.mu.Unlock()
		if after != left {
			t.Errorf("a timer that fired mid-sweep swept too: %d events, then %d", left, after)
		}
	}
	m.fire()
	if steps < n/2-1 {
		t.Fatalf("the sweep ran %d steps of 2 over %d due leases", steps, n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer == nil || m.timerAt != m.events.first().at {
		t.Fatalf("after the sweep the timer is %v at %v, want armed for the next event at %v", m.timer, m.timerAt, m.events.first().at)
	}
	if first := m.events.first(); first.at <= m.now() {
		t.Fatalf("an event at %v is still due at %v after the sweep", first.at, m.now())
	}
}
