package lockmod

import (
	"errors"
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
	// Begun at 2 s, with 40 leases due: List reads every key, so it runs
	// everything due first.
	if _, entries := m.List("l", 0, 100); len(entries) != 1 || entries[0].Key != "hot" {
		t.Fatalf("List = %+v; want only hot, its 40 leases a second past their deadline", entries)
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
// request runs their events only.
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

	// A retried HOLD whose reqid's lease is due: that lease's end is run,
	// not the backlog, and the retry is told its lease expired.
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
	if steps != 0 {
		t.Fatalf("a HOLD whose reqid's lease was due swept the backlog (%d steps)", steps)
	}
	if left := dueLeft(); left != n-1 {
		t.Fatalf("%d events still due after a HOLD that met one due lease, want %d", left, n-1)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
	// The timer's sweep then ends the rest.
	m.fire()
	if left := dueLeft(); left != 0 {
		t.Fatalf("%d events still due after the timer's sweep", left)
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
		armed, expired := m.timer != nil, m.stats.ExpiredTotal
		m.mu.Unlock()
		if armed {
			t.Error("a HOLD armed a timer while the timer's sweep was under way")
		}
		m.fire() // a stale timer firing mid-sweep
		m.mu.Lock()
		after := m.stats.ExpiredTotal
		m.mu.Unlock()
		// Counted by the leases ended: an ended lease stays in the heap,
		// to be forgotten, so the heap's length would not tell.
		if after != expired {
			t.Errorf("a timer that fired mid-sweep swept too: %d expired, then %d", expired, after)
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

// backlog grants n leases of ttl 1 s on keys "0".."n-1" of lock "l", with
// no timer firing (stillClock) and sweeps in steps of step.
func backlog(t *testing.T, n, step int) (*Manager, stillClock) {
	t.Helper()
	clock := stillClock{NewFakeClock(start)}
	m := New(Config{Clock: clock})
	t.Cleanup(m.Close)
	m.sweepStep = step
	for i := range n {
		k := strconv.Itoa(i)
		mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: "r" + k, TTL: sec}))
	}
	return m, clock
}

// LOCK-06, LOCK-08: a waiter whose client re-sends its HOLD (the SDKs
// wait in chunks) on a key whose lease is one of a mass falling due, more
// of them contested than the contested step ends, is granted by that HOLD
// at once: the key's events run, not the backlog.
func TestLOCK06_RetriedHoldOnADueKeyRunsThatKeyOnly(t *testing.T) {
	m, clock := backlog(t, 40, 1)
	for i := range 3 { // contested, due before hot
		k := "c" + strconv.Itoa(i)
		mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: k, TTL: sec}))
		mustWait(t, m.Hold(HoldRequest{Lock: "l", Key: k, ReqID: k + "-waiter", TTL: sec}))
	}
	clock.Advance(10 * ms)
	mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "hot", ReqID: "holder", TTL: sec}))
	hold := HoldRequest{Lock: "l", Key: "hot", ReqID: "waiter", TTL: 10 * sec, HasWait: true, Wait: 5 * sec}
	first := m.Hold(hold)
	mustWait(t, first)
	clock.Advance(1500 * ms)
	steps := 0
	m.betweenSteps = func() { steps++ }
	g := mustGrant(t, m.Hold(hold))
	if g.TTLLeft != 10*sec {
		t.Fatalf("the re-sent HOLD's lease has %v left, want 10s", g.TTLLeft)
	}
	// Granted to the open request when its holder's end ran, then
	// answered to the retry as its reqid's live lease (LOCK-03).
	if g1 := mustGrant(t, first); g1.LeaseID() != g.LeaseID() {
		t.Fatalf("the first ticket got lease %s, the retry %s", g1.LeaseID(), g.LeaseID())
	}
	if steps != 0 {
		t.Fatalf("the re-sent HOLD swept the backlog (%d steps)", steps)
	}
	if s := m.Stats(); s.ExpiredTotal != 44 || s.Leases != 4 {
		t.Fatalf("after the sweep: %d expired, %d live; want 44 and the 4 waiters' leases", s.ExpiredTotal, s.Leases)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}

// SPEC §3, LOCK-03: a reqid whose place on another key is gone (its WAIT
// and then its linger ran out, neither run by a timer) is free for a new
// request: the HOLD that reads it runs its events first.
func TestLOCK03_ReqIDWhosePlaceOnAnotherKeyIsDueIsFree(t *testing.T) {
	m, clock := backlog(t, 40, 4)
	mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "b", ReqID: "holder", TTL: 10 * sec}))
	w := m.Hold(HoldRequest{Lock: "l", Key: "b", ReqID: "R", TTL: sec, Wait: 100 * ms, HasWait: true})
	mustWait(t, w)
	clock.Advance(1500 * ms)
	if _, err := m.Hold(HoldRequest{Lock: "l", Key: "a", ReqID: "R", TTL: sec}).Result(); err != nil {
		t.Fatalf("HOLD a with a reqid whose place on b is gone: %v, want a grant", err)
	}
	if _, err := w.Result(); !errors.Is(err, ErrNotGranted) {
		t.Fatalf("R's ticket on b: %v, want ErrNotGranted", err)
	}
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}

// LOCK-08: Info on a key with places due runs them first: a place whose
// WAIT ran out and whose linger is over is not counted, and its ticket is
// answered.
func TestLOCK08_InfoRunsItsKeysDuePlaces(t *testing.T) {
	m, clock := backlog(t, 40, 4)
	mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "a", ReqID: "h", TTL: 10 * sec}))
	p := m.Hold(HoldRequest{Lock: "l", Key: "a", ReqID: "P", TTL: sec, Wait: 100 * ms, HasWait: true})
	q := m.Hold(HoldRequest{Lock: "l", Key: "a", ReqID: "Q", TTL: sec})
	mustWait(t, p)
	mustWait(t, q)
	clock.Advance(1500 * ms)
	if info, ok := m.Info("l", "a"); !ok || info.Waiters != 1 {
		t.Fatalf("Info(a) = %+v, %v; want 1 waiter (P's place is gone)", info, ok)
	}
	if !isDone(p) {
		t.Fatal("P's WAIT ran out 1.4 s ago and its ticket is still open")
	}
}

// LOCK-06: a method whose key has more events due than a sweep step (a
// line whose WAITs all ran out) advances everything instead, in paced
// steps, and still reads nothing stale.
func TestLOCK06_AKeyWithMoreThanAStepDueAdvancesEverything(t *testing.T) {
	m, clock := backlog(t, 40, 4)
	mustGrant(t, m.Hold(HoldRequest{Lock: "l", Key: "long", ReqID: "h", TTL: 10 * sec}))
	var waits []Ticket
	for i := range 10 {
		tk := m.Hold(HoldRequest{Lock: "l", Key: "long", ReqID: "w" + strconv.Itoa(i), TTL: sec, HasWait: true, Wait: 100 * ms})
		mustWait(t, tk)
		waits = append(waits, tk)
	}
	clock.Advance(1500 * ms) // the 40 are due, and the ten WAITs and their lingers
	steps := 0
	m.betweenSteps = func() { steps++ }
	if info, ok := m.Info("l", "long"); !ok || info.Waiters != 0 {
		t.Fatalf("Info(long) = %+v, %v; want held and no places left", info, ok)
	}
	for i, tk := range waits {
		if _, err := tk.Result(); !isDone(tk) || !errors.Is(err, ErrNotGranted) {
			t.Fatalf("waiter %d: done %v, %v; want ErrNotGranted", i, isDone(tk), err)
		}
	}
	if steps == 0 {
		t.Fatal("ten places due on one key, more than a step of 4, and Info did not advance everything")
	}
	m.mu.Lock()
	expired := m.stats.ExpiredTotal
	m.mu.Unlock()
	if expired != 40 {
		t.Fatalf("%d expired after the advance, want 40", expired)
	}
}
