package lockmod

import (
	"strconv"
	"testing"
	"time"
)

// massDue holds n keys k0..k(n-1) at one instant with one ttl, so that all
// their deadlines fall due together, and puts a waiter on the last one.
func massDue(h *harness, n int, ttlOf time.Duration) (leases []Grant, waiter Ticket) {
	for i := range n {
		leases = append(leases, h.granted("l", "k"+strconv.Itoa(i), "h"+strconv.Itoa(i), ttl(ttlOf)))
	}
	return leases, h.hold("l", "k"+strconv.Itoa(n-1), "waiter", ttl(10*sec))
}

// The timer's sweep of many due leases runs in steps of at most sweepStep
// ends, the lock let go between them; every lease still ends at its
// deadline and the waiter is granted in the step that ends its holder
// (LOCK-06).
func TestLOCK06_TimerSweepsInBoundedSteps(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.sweepStep = 4
	const n = 18
	_, waiter := massDue(h, n, 2*sec)
	ends, perStep, steps := 0, []int{}, 0
	grantedInStep := -1
	h.m.trace = func(e traceEvent) {
		switch {
		case e.grant && e.reqid == "waiter":
			grantedInStep = steps
		case !e.grant:
			if e.reason != expired {
				t.Errorf("%s ended %v, want expired", e.name, e.reason)
			}
			if e.at != instant(2*sec) {
				t.Errorf("%s ended at %v, want at its deadline %v", e.name, time.Duration(e.at), 2*sec)
			}
			ends++
		}
	}
	h.m.betweenSteps = func() {
		perStep = append(perStep, ends)
		ends = 0
		steps++
	}
	h.advance(2 * sec)
	perStep = append(perStep, ends)
	total := 0
	for _, k := range perStep {
		if k > 4 {
			t.Fatalf("ends per step %v: a step ended more than 4", perStep)
		}
		total += k
	}
	if total != n || len(perStep) < n/4 {
		t.Fatalf("ends per step %v: want all %d ended, in at least %d steps", perStep, n, n/4)
	}
	g := mustGrant(t, waiter)
	if grantedInStep < 0 {
		t.Fatal("the waiter's grant was not traced")
	}
	if info, ok := h.m.Info("l", "k"+strconv.Itoa(n-1)); !ok || info.Fence != g.Fence || info.TTL != 10*sec {
		t.Fatalf("Info %+v, %v: want the waiter's lease %d, granted at the deadline with its full ttl", info, ok, g.Fence)
	}
}

// LOCK-01, LOCK-05: between two steps of the timer's sweep, a lease past its
// deadline that the sweep has not reached is not live to anyone: a RENEW is
// LOST expired, Info shows the key free (or its waiter's), a newcomer is
// granted with a larger fence, and the gauges count no ended lease.
func TestLOCK01_LeasePastDeadlineIsEndedBeforeTheSweepReachesIt(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.sweepStep = 2
	const n = 10
	leases, waiter := massDue(h, n, 2*sec)
	ended := map[string]bool{}
	h.m.trace = func(e traceEvent) {
		if !e.grant {
			ended[e.name] = true
		}
	}
	checked := false
	h.m.betweenSteps = func() {
		if checked {
			return
		}
		checked = true
		// Which leases the first step has not reached.
		var unswept []int
		for i := range n {
			if !ended[string(keyName(nil, "l", "k"+strconv.Itoa(i)))] {
				unswept = append(unswept, i)
			}
		}
		if len(unswept) < n-2 {
			t.Fatalf("the first step ended %d leases, want at most 2", n-len(unswept))
		}
		first := unswept[0]
		if _, err := h.m.Renew(leases[first].LeaseID(), 0); err != nil {
			mustLost(t, err, ReasonExpired)
		} else {
			t.Fatalf("k%d past its deadline was renewed", first)
		}
		if _, ok := h.m.Info("l", "k"+strconv.Itoa(unswept[1])); ok {
			t.Fatalf("k%d past its deadline is shown held", unswept[1])
		}
		if s := h.m.Stats(); s.Leases != 1 {
			t.Fatalf("Stats.Leases %d between steps, want 1 (the waiter's)", s.Leases)
		}
		newcomer := h.granted("l", "k"+strconv.Itoa(unswept[2]), "newcomer")
		if newcomer.Fence <= leases[len(leases)-1].Fence {
			t.Fatalf("newcomer's fence %d not above the ended leases'", newcomer.Fence)
		}
		if !isDone(waiter) {
			t.Fatal("the waiter is not granted though its holder's deadline passed")
		}
	}
	h.advance(2 * sec)
	if !checked {
		t.Fatal("the sweep ran in one step: nothing was checked between steps")
	}
	mustGrant(t, waiter)
}

// lateFire is the clock's timer firing d late: the armed timer is stopped,
// the clock moved on without it, and the timer's callback run at the new
// time, with everything due since still to sweep.
func lateFire(h *harness, d time.Duration) {
	h.m.mu.Lock()
	if h.m.timer != nil {
		h.m.timer.Stop()
	}
	h.m.mu.Unlock()
	h.clock.Advance(d)
	h.m.fire()
}

// LOCK-06: a sweep that lags behind many due leases ends the ones with a
// waiter first, whatever their deadlines among the rest, so their waiters
// are granted in its first step.
func TestLOCK06_LaggingSweepEndsLeasesWithWaitersFirst(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.sweepStep = 4
	for i := range 40 {
		h.granted("l", "k"+strconv.Itoa(i), "h"+strconv.Itoa(i), ttl(2*sec))
	}
	h.granted("l", "hot", "holder", ttl(2*sec+ms))
	waiter := h.hold("l", "hot", "waiter")
	steps, grantedInStep, firstEnded := 0, -1, ""
	h.m.trace = func(e traceEvent) {
		if e.grant && e.reqid == "waiter" {
			grantedInStep = steps
		}
		if !e.grant && firstEnded == "" {
			firstEnded = e.reqid
		}
	}
	h.m.betweenSteps = func() { steps++ }
	lateFire(h, 3*sec)
	mustGrant(t, waiter)
	if grantedInStep != 0 || firstEnded != "holder" {
		t.Fatalf("waiter granted in step %d, first lease ended %q: want step 0 and the holder first", grantedInStep, firstEnded)
	}
	if steps < 40/4 {
		t.Fatalf("%d steps for 41 leases, 4 a step", steps)
	}
	if s := h.m.Stats(); s.Leases != 1 || s.ExpiredTotal != 41 {
		t.Fatalf("Stats %+v: want the waiter's lease live and 41 expired", s)
	}
}

// LOCK-06, LOCK-08: a waiter whose WAIT ran out before its holder's deadline
// is not granted when a lagging sweep ends that lease before it has run the
// WAIT's own event: it lingers, and the next in line is granted.
func TestLOCK06_LaggingSweepGrantsNoWaiterWhoseWaitRanOutFirst(t *testing.T) {
	h := newHarness(t, Config{})
	h.granted("l", "hot", "holder", ttl(2*sec))
	gaveUp := h.hold("l", "hot", "gave-up", wait(1500*ms))
	next := h.hold("l", "hot", "next")
	lateFire(h, 2200*ms) // the place lingers until 2.5 s
	mustFail(t, gaveUp, ErrNotGranted)
	g := mustGrant(t, next)
	if info, ok := h.m.Info("l", "hot"); !ok || info.Fence != g.Fence || info.Waiters != 1 {
		t.Fatalf("Info %+v, %v: want next's lease, and the lingering place", info, ok)
	}
}
