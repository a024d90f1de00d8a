package lockmod

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// SPEC §3, LOCK.HOLD replies, one case a row.
func TestSPEC3_HoldReplies(t *testing.T) {
	t.Run("granted", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(30*sec))
		if len(g.LeaseID()) != 32 || g.Fence != 1<<32+1 || g.TTLLeft != 30*sec {
			t.Fatalf("grant %+v", g)
		}
	})
	t.Run("granted after waiting", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "a")
		tk := h.hold("l", "k", "b", wait(5*sec))
		h.advance(4 * sec)
		h.m.Release(g.LeaseID())
		mustGrant(t, tk)
	})
	t.Run("not granted within WAIT", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "a")
		tk := h.hold("l", "k", "b", wait(2*sec))
		h.advance(2*sec - 1)
		mustWait(t, tk)
		h.advance(1)
		mustFail(t, tk, ErrNotGranted)
	})
	t.Run("WAIT 0 on a held key", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "a")
		mustFail(t, h.hold("l", "k", "b", wait(0)), ErrNotGranted)
		if info := h.info("l", "k"); info.Waiters != 0 {
			t.Fatalf("WAIT 0 joined the line: %+v", info)
		}
		h.m.Revoke("l", "k")
		mustGrant(t, h.hold("l", "k", "b", wait(0))) // not remembered: a new try
	})
	t.Run("WAIT 0 on a free key", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "a", wait(0))
	})
	t.Run("same reqid, lease live", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(10*sec))
		h.advance(1500 * ms)
		again := h.granted("l", "k", "r", wait(0))
		if again.LeaseID() != g.LeaseID() || again.Fence != g.Fence || again.TTLLeft != 8500*ms {
			t.Fatalf("retry %+v, first %+v", again, g)
		}
	})
	t.Run("same reqid, lease live, granted after waiting", func(t *testing.T) {
		h := newHarness(t, Config{})
		a := h.granted("l", "k", "a")
		tk := h.hold("l", "k", "b")
		h.m.Release(a.LeaseID())
		g := mustGrant(t, tk)
		if again := h.granted("l", "k", "b"); again != g {
			t.Fatalf("retry %+v, grant %+v", again, g)
		}
	})
	for _, reason := range []string{ReasonExpired, ReasonMaxHold, ReasonAdmin, ReasonReleased} {
		t.Run("same reqid, lease ended: "+reason, func(t *testing.T) {
			h := newHarness(t, Config{})
			g := h.granted("l", "k", "r", ttl(2*sec), maxHold(3*sec))
			switch reason {
			case ReasonExpired:
				h.advance(2 * sec)
			case ReasonMaxHold:
				h.advance(1500 * ms)
				h.m.Renew(g.LeaseID(), 0)
				h.advance(1500 * ms)
			case ReasonAdmin:
				h.m.Revoke("l", "k")
			case ReasonReleased:
				h.m.Release(g.LeaseID())
			}
			mustLostTicket(t, h.hold("l", "k", "r"), reason)
			mustLostTicket(t, h.hold("l", "k", "r", wait(0)), reason)
		})
	}
	t.Run("same reqid, still in line: superseded and taken over", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "a")
		first := h.hold("l", "k", "b", wait(time.Minute))
		second := h.hold("l", "k", "b", wait(2*sec))
		mustFail(t, first, ErrSuperseded)
		mustWait(t, second)
		// The place's WAIT is now the retry's.
		h.advance(2 * sec)
		mustFail(t, second, ErrNotGranted)
		third := h.hold("l", "k", "b")
		h.m.Release(g.LeaseID())
		mustGrant(t, third)
	})
	t.Run("same reqid, lingering place: taken over", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "a")
		first := h.hold("l", "k", "b", wait(sec))
		h.advance(sec)
		mustFail(t, first, ErrNotGranted)
		mustWait(t, h.hold("l", "k", "b"))
		if info := h.info("l", "k"); info.Waiters != 1 {
			t.Fatalf("info %+v", info)
		}
	})
	t.Run("same reqid, another lock or key", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "r")
		mustFail(t, h.hold("l", "k2", "r"), ErrReqIDInUse)
		mustFail(t, h.hold("l2", "k", "r"), ErrReqIDInUse)
		mustFail(t, h.hold("l", "k2", "r", wait(0)), ErrReqIDInUse)
	})
}

func TestSPEC3_Renew(t *testing.T) {
	t.Run("default ttl is the granted one", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(3*sec))
		h.advance(2 * sec)
		if left, err := h.m.Renew(g.LeaseID(), 0); err != nil || left != 3*sec {
			t.Fatalf("renew %v %v", left, err)
		}
	})
	t.Run("explicit ttl, then the default again", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(3*sec))
		if left, _ := h.m.Renew(g.LeaseID(), 20*sec); left != 20*sec {
			t.Fatalf("renew 20s: %v", left)
		}
		if left, _ := h.m.Renew(g.LeaseID(), 1500*ms); left != 1500*ms {
			t.Fatalf("renew 1.5s: %v (a shorter ttl moves the deadline back)", left)
		}
		if left, _ := h.m.Renew(g.LeaseID(), 0); left != 3*sec {
			t.Fatalf("renew default: %v, want the granted 3s", left)
		}
		if s := h.m.Stats(); s.RenewalsTotal != 3 {
			t.Fatalf("renewals %d", s.RenewalsTotal)
		}
	})
	t.Run("capped by maxhold", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(10*sec), maxHold(15*sec))
		h.advance(8 * sec)
		if left, _ := h.m.Renew(g.LeaseID(), 0); left != 7*sec {
			t.Fatalf("renew %v, want 7s", left)
		}
		if info := h.info("l", "k"); info.TTL != 7*sec || info.MaxHold != 7*sec {
			t.Fatalf("info %+v", info)
		}
	})
	t.Run("ended, never revives", func(t *testing.T) {
		h := newHarness(t, Config{})
		g := h.granted("l", "k", "r", ttl(sec))
		h.advance(sec)
		for range 3 {
			_, err := h.m.Renew(g.LeaseID(), time.Hour)
			mustLost(t, err, ReasonExpired)
		}
		if _, ok := h.m.Info("l", "k"); ok {
			t.Fatal("a failed renew took the key")
		}
		if s := h.m.Stats(); s.RenewalsTotal != 0 {
			t.Fatalf("renewals %d", s.RenewalsTotal)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		h := newHarness(t, Config{})
		_, err := h.m.Renew("00000000000000000000000000000000", 0)
		mustLost(t, err, ReasonUnknownLease)
	})
}

func TestSPEC3_Release(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	w := h.hold("l", "k", "b")
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatal(err)
	}
	gb := mustGrant(t, w) // the next in line, in the same step
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatalf("retried release %v, want nil", err)
	}
	if info := h.info("l", "k"); info.Fence != gb.Fence {
		t.Fatalf("a retried release touched the next lease: %+v", info)
	}
	h.m.Revoke("l", "k")
	mustLost(t, h.m.Release(gb.LeaseID()), ReasonAdmin)
	mustLost(t, h.m.Release("not an id"), ReasonUnknownLease)
	if s := h.m.Stats(); s.ReleasedTotal != 1 || s.RevokedTotal != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSPEC3_Revoke(t *testing.T) {
	h := newHarness(t, Config{})
	if h.m.Revoke("l", "k") {
		t.Fatal("revoked a free key")
	}
	g := h.granted("l", "k", "a")
	w := h.hold("l", "k", "b")
	if !h.m.Revoke("l", "k") {
		t.Fatal("revoke of a held key reported false")
	}
	gb := mustGrant(t, w)
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonAdmin)
	if !h.m.Revoke("l", "k") {
		t.Fatal("second revoke")
	}
	mustLost(t, h.m.Release(gb.LeaseID()), ReasonAdmin)
	if h.m.Revoke("l", "k") {
		t.Fatal("revoke with nothing live reported true")
	}
}

func TestSPEC3_Info(t *testing.T) {
	h := newHarness(t, Config{})
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("free key shown")
	}
	g := h.granted("l", "k", "a", ttl(10*sec), maxHold(60*sec))
	h.hold("l", "k", "b")
	h.hold("l", "k", "c", wait(sec))
	h.advance(1500 * ms) // c's WAIT ran out at 1s; its place lingers
	want := KeyInfo{Fence: g.Fence, TTL: 8500 * ms, Held: 1500 * ms, MaxHold: 58500 * ms, Waiters: 2, Holders: 1, Limit: 1}
	if info := h.info("l", "k"); info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	h.m.Release(g.LeaseID()) // b gets it, passing over c
	want = KeyInfo{Fence: g.Fence + 1, TTL: 10 * sec, Held: 0, MaxHold: 0, Waiters: 1, Holders: 1, Limit: 1}
	if info := h.info("l", "k"); info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	h.advance(500 * ms)
	want = KeyInfo{Fence: g.Fence + 1, TTL: 9500 * ms, Held: 500 * ms, MaxHold: 0, Waiters: 0, Holders: 1, Limit: 1}
	if info := h.info("l", "k"); info != want {
		t.Fatalf("info %+v, want %+v (c's linger ended at 2s)", info, want)
	}
}

func TestSPEC3_InfoFreeKeyWithLingeringPlaces(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	w1 := h.hold("l", "k", "b")
	w2 := h.hold("l", "k", "c", wait(100*ms))
	w1.Abandon()
	h.advance(100 * ms)
	mustFail(t, w1, ErrAbandoned)
	mustFail(t, w2, ErrNotGranted)
	h.m.Release(g.LeaseID())
	want := KeyInfo{Fence: 0, TTL: 0, Held: 0, MaxHold: 0, Waiters: 2, Limit: 1}
	if info := h.info("l", "k"); info != want {
		t.Fatalf("info %+v, want %+v", info, want)
	}
	h.advance(DefaultLinger)
	if info, ok := h.m.Info("l", "k"); ok {
		t.Fatalf("info %+v after the lingers", info)
	}
}

// SPEC §4: every reason, as its text and as ErrLost.
func TestSPEC4_Reasons(t *testing.T) {
	for _, reason := range []string{ReasonExpired, ReasonMaxHold, ReasonAdmin, ReasonReleased, ReasonUnknownLease} {
		err := error(&LostError{Reason: reason})
		if err.Error() != reason || !errors.Is(err, ErrLost) || errors.Is(err, ErrNotGranted) {
			t.Fatalf("LostError %q", reason)
		}
		if wrapped := fmt.Errorf("renew: %w", err); !errors.Is(wrapped, ErrLost) {
			t.Fatalf("wrapped LostError %q is not ErrLost", reason)
		}
	}
	for i, text := range reasonText {
		if reason(i).lost().Reason != text {
			t.Fatalf("reason %d", i)
		}
	}
}

func TestSPEC3_LingerResumeWithinLinger(t *testing.T) {
	h := newHarness(t, Config{Linger: 2 * sec})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b", wait(sec))
	c := h.hold("l", "k", "c")
	h.advance(sec)
	mustFail(t, b, ErrNotGranted)
	h.advance(2*sec - 1) // custom linger
	b = h.hold("l", "k", "b")
	mustWait(t, b)
	h.m.Release(g.LeaseID())
	mustGrant(t, b)
	mustWait(t, c)
}

func TestSPEC3_LingerExpiryForgetsThePlace(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b", wait(sec))
	c := h.hold("l", "k", "c")
	h.advance(sec + DefaultLinger)
	mustFail(t, b, ErrNotGranted)
	if info := h.info("l", "k"); info.Waiters != 1 {
		t.Fatalf("waiters %d after the linger, want 1", info.Waiters)
	}
	b = h.hold("l", "k", "b") // a new place, behind c
	h.m.Release(g.LeaseID())
	gc := mustGrant(t, c)
	mustWait(t, b)
	h.m.Release(gc.LeaseID())
	mustGrant(t, b)
}

func TestSPEC3_LingerPassedOverNeverGranted(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b", wait(sec))
	h.advance(sec)
	mustFail(t, b, ErrNotGranted)
	c := h.hold("l", "k", "c")
	h.m.Release(g.LeaseID())
	gc := mustGrant(t, c) // b lingers ahead of c, passed over
	h.m.Release(gc.LeaseID())
	if info := h.info("l", "k"); info.Fence != 0 || info.Waiters != 1 {
		t.Fatalf("info %+v: the lingering place was granted", info)
	}
	// A newcomer takes the free key past the lingering place…
	gd := h.granted("l", "k", "d")
	// …and the lingering request, resumed, waits behind nobody open: it is
	// first in line again.
	b = h.hold("l", "k", "b")
	e := h.hold("l", "k", "e")
	h.m.Release(gd.LeaseID())
	mustGrant(t, b)
	mustWait(t, e)
}

func TestSPEC3_LingerResumeOnFreeKeyGrantsAtOnce(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b", wait(sec))
	h.advance(sec)
	mustFail(t, b, ErrNotGranted)
	h.m.Release(g.LeaseID())
	gb := h.granted("l", "k", "b", wait(0))
	if gb.Fence != g.Fence+1 {
		t.Fatalf("fence %d", gb.Fence)
	}
	if info := h.info("l", "k"); info.Waiters != 0 {
		t.Fatalf("the granted place stayed in line: %+v", info)
	}
}

func TestSPEC3_LingerResumeWithWait0StaysLingering(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b", wait(sec))
	h.advance(sec)
	mustFail(t, b, ErrNotGranted)
	h.advance(900 * ms)
	mustFail(t, h.hold("l", "k", "b", wait(0)), ErrNotGranted)
	// The try restarted the linger: the place is still there 900ms on.
	h.advance(900 * ms)
	b = h.hold("l", "k", "b")
	c := h.hold("l", "k", "c")
	h.m.Release(g.LeaseID())
	mustGrant(t, b)
	mustWait(t, c)
}

func TestSPEC3_AbandonNeverGranted(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b")
	c := h.hold("l", "k", "c")
	b.Abandon()
	mustFail(t, b, ErrAbandoned)
	b.Abandon() // twice is harmless
	h.m.Release(g.LeaseID())
	mustGrant(t, c)
	if info := h.info("l", "k"); info.Waiters != 1 {
		t.Fatalf("info %+v: the abandoned place should linger", info)
	}
	h.advance(DefaultLinger)
	if info := h.info("l", "k"); info.Waiters != 0 {
		t.Fatalf("info %+v: the abandoned place outlived its linger", info)
	}
}

func TestSPEC3_AbandonResumeWithinLinger(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	b := h.hold("l", "k", "b")
	c := h.hold("l", "k", "c")
	b.Abandon()
	h.advance(500 * ms)
	b = h.hold("l", "k", "b")
	h.m.Release(g.LeaseID())
	mustGrant(t, b)
	mustWait(t, c)
}

func TestSPEC3_AbandonAfterGrantLeavesTheLease(t *testing.T) {
	h := newHarness(t, Config{})
	tk := h.hold("l", "k", "a")
	g := mustGrant(t, tk)
	tk.Abandon()
	a := h.granted("l", "k2", "x")
	w := h.hold("l", "k2", "y")
	h.m.Release(a.LeaseID())
	gw := mustGrant(t, w)
	w.Abandon()
	for _, g := range []Grant{g, gw} {
		if _, err := h.m.Renew(g.LeaseID(), 0); err != nil {
			t.Fatalf("abandoning a granted ticket ended the lease: %v", err)
		}
	}
	if again := h.granted("l", "k2", "y"); again.LeaseID() != gw.LeaseID() {
		t.Fatal("retry after an undelivered grant got another lease")
	}
}

func TestClose(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a")
	w := h.hold("l", "k", "b")
	h.hold("l", "k", "c", wait(sec))
	h.advance(sec)
	h.m.Close()
	mustFail(t, w, ErrClosed)
	mustFail(t, h.hold("l", "k2", "d"), ErrClosed)
	if _, err := h.m.Renew(g.LeaseID(), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("renew after close: %v", err)
	}
	if err := h.m.Release(g.LeaseID()); !errors.Is(err, ErrClosed) {
		t.Fatalf("release after close: %v", err)
	}
	if h.m.Revoke("l", "k") {
		t.Fatal("revoke after close")
	}
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("info after close")
	}
	if p := h.clock.Pending(); p != 0 {
		t.Fatalf("%d timers left armed", p)
	}
	h.m.Close()
	w.Abandon()
	if s := h.m.Stats(); s.GrantsTotal != 1 || s.Leases != 0 {
		t.Fatalf("stats after close %+v", s)
	}
}

func TestStats(t *testing.T) {
	h := newHarness(t, Config{Epoch: 4})
	a := h.granted("l", "1", "a", ttl(sec))
	b := h.granted("l", "2", "b", maxHold(sec))
	h.granted("l", "3", "c")
	h.hold("l", "3", "d")
	h.hold("l", "3", "e", wait(ms))
	h.m.Renew(a.LeaseID(), 0)
	h.m.Renew(b.LeaseID(), 0)
	h.advance(sec) // a expires, b revoked at maxhold, e lingers
	h.m.Revoke("l", "3")
	want := Stats{Epoch: 4, Leases: 1, Waiters: 1, GrantsTotal: 4, RenewalsTotal: 2,
		ExpiredTotal: 1, RevokedTotal: 2, RevokedMaxHoldTotal: 1, RevokedAdminTotal: 1}
	if s := h.m.Stats(); s != want {
		t.Fatalf("stats %+v, want %+v", s, want)
	}
	_ = b
}

// Memory is bounded: once every window has passed, nothing is remembered.
func TestLOCK03_LOCK05_MemoryForgetsEverything(t *testing.T) {
	h := newHarness(t, Config{})
	for i := range 2000 {
		key := fmt.Sprint(i % 13)
		tk := h.hold("l", key, fmt.Sprint("r", i), ttl(time.Duration(1+i%5)*sec), wait(time.Duration(i%3)*sec), maxHold(time.Duration(i%4)*sec))
		switch i % 6 {
		case 0:
			if g, err := tk.Result(); isDone(tk) && err == nil {
				h.m.Release(g.LeaseID())
			}
		case 1:
			tk.Abandon()
		case 2:
			h.m.Revoke("l", key)
		case 3:
			if g, err := tk.Result(); isDone(tk) && err == nil {
				h.m.Renew(g.LeaseID(), 2*sec)
			}
		}
		if i%50 == 0 {
			h.advance(700 * ms)
		}
		if err := checkInvariants(h.m); err != nil {
			t.Fatal(err)
		}
	}
	// Requests without a WAIT wait until someone lets go; let everything run
	// out, over and over, until the lines drain.
	for range 2000 {
		h.advance(sec)
	}
	h.advance(time.Hour)
	checkEmpty(t, h.m)
	if p := h.clock.Pending(); p != 0 {
		t.Fatalf("%d timers armed with nothing to do", p)
	}
}

func TestHugeDurationsDoNotWrap(t *testing.T) {
	h := newHarness(t, Config{})
	forever := time.Duration(math.MaxInt64)
	g := h.granted("l", "k", "a", ttl(forever), maxHold(forever))
	w := h.hold("l", "k", "b", wait(forever))
	h.advance(24 * time.Hour)
	mustWait(t, w)
	if left, err := h.m.Renew(g.LeaseID(), forever); err != nil || left <= 0 {
		t.Fatalf("renew: %v %v", left, err)
	}
	h.m.Release(g.LeaseID())
	mustGrant(t, w)
}
