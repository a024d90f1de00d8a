package lockmod

import (
	"errors"
	"testing"
)

// ended insists that e has ended, with the reason of SPEC §4.
func mustEnd(t *testing.T, e *Ending, reason string) {
	t.Helper()
	select {
	case <-e.Done():
	default:
		t.Fatalf("the lease held in process has not ended, want %q", reason)
	}
	mustLost(t, e.Err(), reason)
}

func mustLive(t *testing.T, e *Ending) {
	t.Helper()
	select {
	case <-e.Done():
		t.Fatalf("the lease held in process ended: %v", e.Err())
	default:
	}
	if err := e.Err(); err != nil {
		t.Fatalf("Err of a live lease: %v", err)
	}
}

// LOCK-13: a lease held in process has no ttl deadline. It outlives any
// number of ttls without a renewal, is shown without a ttl, and cannot be
// renewed into having one; releasing it ends it and tells its holder.
func TestInProcessLeaseNeedsNoRenewal(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r1", ttl(sec), inProcess())
	if g.Ending == nil || g.TTLLeft != -1 {
		t.Fatalf("grant held in process: Ending %v, TTLLeft %v; want an Ending and -1", g.Ending, g.TTLLeft)
	}
	if n := h.granted("l", "net", "r2", ttl(sec)); n.Ending != nil {
		t.Fatalf("a lease over a connection has an Ending")
	}
	waiter := h.hold("l", "k", "w")
	h.advance(3600 * sec)
	mustLive(t, g.Ending)
	mustWait(t, waiter)
	info := h.info("l", "k")
	if info.Fence != g.Fence || !info.InProcess || info.TTL != 0 || info.Held != 3600*sec || info.Waiters != 1 {
		t.Fatalf("Info: %+v", info)
	}
	_, entries := h.m.List("l", 0, 10)
	if len(entries) != 1 || entries[0].Key != "k" || !entries[0].InProcess || entries[0].TTL != 0 {
		t.Fatalf("List: %+v (the lease over a connection has expired)", entries)
	}
	if _, err := h.m.Renew(g.LeaseID(), sec); !errors.Is(err, ErrHeldInProcess) {
		t.Fatalf("Renew of a lease held in process: %v", err)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatal(err)
	}
	mustEnd(t, g.Ending, ReasonReleased)
	next := mustGrant(t, waiter)
	if next.Fence <= g.Fence {
		t.Fatalf("next fence %d, not above %d (LOCK-02)", next.Fence, g.Fence)
	}
	if s := h.m.Stats(); s.RenewalsTotal != 0 {
		t.Fatalf("renewals counted: %d", s.RenewalsTotal)
	}
}

// LOCK-07, LOCK-13: MAXHOLD still ends a lease held in process, at grant +
// MAXHOLD, and its holder learns it in the same step that grants the next.
func TestInProcessLeaseRevokedAtMaxHold(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r1", ttl(sec), maxHold(5*sec), inProcess())
	waiter := h.hold("l", "k", "w")
	if info := h.info("l", "k"); !info.InProcess || info.TTL != 0 || info.MaxHold != 5*sec {
		t.Fatalf("Info: %+v", info)
	}
	h.advance(5*sec - ms)
	mustLive(t, g.Ending)
	mustWait(t, waiter)
	h.advance(ms)
	mustEnd(t, g.Ending, ReasonMaxHold)
	if next := mustGrant(t, waiter); next.Fence <= g.Fence {
		t.Fatalf("next fence %d, not above %d", next.Fence, g.Fence)
	}
	if err := h.m.Release(g.LeaseID()); err == nil {
		t.Fatalf("Release after MAXHOLD: no error")
	} else {
		mustLost(t, err, ReasonMaxHold)
	}
}

// LOCK-13: an admin's revoke ends a lease held in process at once.
func TestInProcessLeaseRevokedByAdmin(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r1", inProcess())
	if !h.m.Revoke("l", "k") {
		t.Fatal("Revoke found no lease")
	}
	mustEnd(t, g.Ending, ReasonAdmin)
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("the key is still held")
	}
}

// LOCK-08, LOCK-02, LOCK-13: one line for leases held in process and over
// connections, served in join order, fences from one counter.
func TestInProcessSharesTheLine(t *testing.T) {
	h := newHarness(t, Config{})
	first := h.granted("l", "k", "holder", ttl(sec))
	tickets := []Ticket{
		h.hold("l", "k", "a", inProcess()),
		h.hold("l", "k", "b", ttl(sec)),
		h.hold("l", "k", "c", inProcess()),
		h.hold("l", "k", "d", ttl(sec)),
	}
	fence := first.Fence
	h.advance(sec) // the first lease runs out: a is granted
	for i, tk := range tickets {
		for _, later := range tickets[i+1:] {
			mustWait(t, later)
		}
		g := mustGrant(t, tk)
		if g.Fence <= fence {
			t.Fatalf("waiter %d: fence %d not above %d", i, g.Fence, fence)
		}
		fence = g.Fence
		if inProc := i%2 == 0; (g.Ending != nil) != inProc {
			t.Fatalf("waiter %d: Ending %v, held in process %v", i, g.Ending, inProc)
		}
		if err := h.m.Release(g.LeaseID()); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

// An in-process waiter that gives up leaves a lingering place, passed over
// like any other (LOCK-08); Close tells a live lease held in process that
// it ended with the store.
func TestInProcessAbandonAndClose(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "holder", inProcess())
	gaveUp := h.hold("l", "k", "gave-up", inProcess())
	behind := h.hold("l", "k", "behind", inProcess())
	gaveUp.Abandon()
	mustFail(t, gaveUp, ErrAbandoned)
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatal(err)
	}
	second := mustGrant(t, behind)
	h.m.Close()
	select {
	case <-second.Ending.Done():
	default:
		t.Fatal("Close left the lease held in process live")
	}
	if err := second.Ending.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err after Close: %v", err)
	}
}
