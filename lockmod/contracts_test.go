package lockmod

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestLOCK10_NewManagerHoldsNothing(t *testing.T) {
	h := newHarness(t, Config{Epoch: 7})
	if _, ok := h.m.Info("summaries", "chat-1"); ok {
		t.Fatal("a new manager shows a key")
	}
	s := h.m.Stats()
	if s != (Stats{Epoch: 7}) {
		t.Fatalf("stats of a new manager: %+v", s)
	}
	_, err := h.m.Renew("0123456789abcdef0123456789abcdef", 0)
	mustLost(t, err, ReasonUnknownLease)
	checkEmpty(t, h.m)
}

func TestLOCK01_OneLiveLeasePerKey(t *testing.T) {
	h := newHarness(t, Config{})
	h.granted("summaries", "chat-1", "a")
	mustFail(t, h.hold("summaries", "chat-1", "b", wait(0)), ErrNotGranted)
	mustWait(t, h.hold("summaries", "chat-1", "c"))
	// Other keys, other locks, and a lock named like a key are apart.
	h.granted("summaries", "chat-2", "d")
	h.granted("other", "chat-1", "e")
	h.granted("summarieschat-1", "", "f")
	h.granted("summaries\x01", "chat-1", "g")
	if s := h.m.Stats(); s.Leases != 5 || s.Waiters != 1 {
		t.Fatalf("stats %+v, want 5 leases and 1 waiter", s)
	}
}

func TestLOCK02_FencesIncreaseAcrossKeys(t *testing.T) {
	h := newHarness(t, Config{Epoch: 3})
	var last uint64
	for i := range 100 {
		g := h.granted("l", strconv.Itoa(i%7), fmt.Sprint("r", i), ttl(sec))
		if i == 0 && g.Fence != 3<<32+1 {
			t.Fatalf("first fence %d, want 3<<32+1", g.Fence)
		}
		if g.Fence <= last || g.Fence>>32 != 3 {
			t.Fatalf("fence %d after %d", g.Fence, last)
		}
		last = g.Fence
		if err := h.m.Release(g.LeaseID()); err != nil {
			t.Fatal(err)
		}
	}
}

type bumper struct {
	calls int
	epoch uint64
	err   error
}

func (b *bumper) BumpEpoch() (uint64, error) {
	b.calls++
	if b.err != nil {
		return 0, b.err
	}
	b.epoch++
	return b.epoch, nil
}

func TestLOCK02_EpochWrapsAt2To32(t *testing.T) {
	b := &bumper{epoch: 5}
	h := newHarness(t, Config{Epoch: 5, Bumper: b, FirstN: math.MaxUint32 - 2})
	g1 := h.granted("l", "k1", "r1")
	g2 := h.granted("l", "k2", "r2")
	if g1.Fence != 5<<32+math.MaxUint32-1 || g2.Fence != 5<<32+math.MaxUint32 {
		t.Fatalf("fences before the wrap: %x %x", g1.Fence, g2.Fence)
	}
	if b.calls != 0 {
		t.Fatalf("bumped %d times before n reached 2^32", b.calls)
	}
	// n would reach 2^32: the epoch is bumped first, and n starts again at 1.
	// The grant goes to a waiter, so the bump also happens inside expiry.
	tk := h.hold("l", "k2", "r3")
	h.advance(10 * sec)
	g3 := mustGrant(t, tk)
	if g3.Fence != 6<<32+1 || g3.Fence <= g2.Fence {
		t.Fatalf("fence after the wrap %x, want 6<<32+1", g3.Fence)
	}
	g4 := h.granted("l", "k4", "r4")
	if g4.Fence != 6<<32+2 || b.calls != 1 {
		t.Fatalf("fence %x after %d bumps, want 6<<32+2 after 1", g4.Fence, b.calls)
	}
	if s := h.m.Stats(); s.Epoch != 6 {
		t.Fatalf("stats epoch %d, want 6", s.Epoch)
	}
}

func TestLOCK02_EpochBumpFailureFailsTheGrant(t *testing.T) {
	disk := errors.New("disk full")
	b := &bumper{epoch: 1, err: disk}
	h := newHarness(t, Config{Epoch: 1, Bumper: b, FirstN: math.MaxUint32})
	mustFail(t, h.hold("l", "k", "r1"), disk)
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("a failed grant left the key held")
	}
	// The failed request is not remembered: a retry tries again.
	b.err = nil
	g := h.granted("l", "k", "r1")
	if g.Fence != 2<<32+1 || b.calls != 2 {
		t.Fatalf("fence %x after %d bump calls", g.Fence, b.calls)
	}

	// Without a bumper the counter cannot wrap.
	h2 := newHarness(t, Config{FirstN: math.MaxUint32})
	mustFail(t, h2.hold("l", "k", "r"), ErrNoEpochBumper)
}

func TestLOCK03_RetryWhileLiveGetsSameLease(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "req-1", ttl(10*sec))
	h.advance(3 * sec)
	// The retry comes with other options; they do not make a second lease.
	again := h.granted("l", "k", "req-1", ttl(30*sec), maxHold(sec))
	if again.LeaseID() != g.LeaseID() || again.Fence != g.Fence || again.TTLLeft != 7*sec {
		t.Fatalf("retry got %+v, want %+v with 7s left", again, g)
	}
	if s := h.m.Stats(); s.GrantsTotal != 1 {
		t.Fatalf("grants %d, want 1", s.GrantsTotal)
	}
}

func TestLOCK03_RetryAfterEndGetsReason(t *testing.T) {
	for _, tc := range []struct {
		reason string
		end    func(h *harness, g Grant)
	}{
		{ReasonExpired, func(h *harness, g Grant) { h.advance(10 * sec) }},
		{ReasonMaxHold, func(h *harness, g Grant) {
			for range 4 {
				h.advance(4 * sec)
				h.m.Renew(g.LeaseID(), 0)
			}
		}},
		{ReasonAdmin, func(h *harness, g Grant) { h.m.Revoke("l", "k") }},
		{ReasonReleased, func(h *harness, g Grant) { h.m.Release(g.LeaseID()) }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, Config{})
			g := h.granted("l", "k", "req", ttl(10*sec), maxHold(15*sec))
			tc.end(h, g)
			mustLostTicket(t, h.hold("l", "k", "req"), tc.reason)
			// Even with the key free, the retry is no second grant.
			if _, ok := h.m.Info("l", "k"); ok {
				t.Fatal("a retry of an ended request took the key")
			}
		})
	}
}

func TestLOCK03_RetryInLineSupersedesAndTakesOver(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a")
	first := h.hold("l", "k", "b")
	h.hold("l", "k", "c")
	retry := h.hold("l", "k", "b")
	mustFail(t, first, ErrSuperseded)
	mustWait(t, retry)
	first.Abandon() // too late to matter: the retry owns the place
	if info := h.info("l", "k"); info.Waiters != 2 {
		t.Fatalf("waiters %d, want 2 (b's place is one place)", info.Waiters)
	}
	h.m.Release(a.LeaseID())
	mustGrant(t, retry) // b kept its place ahead of c
}

func TestLOCK03_ReqIDOnAnotherKey(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "live")
	h.hold("l", "k", "waiting")
	ended := h.granted("l", "k2", "ended")
	h.m.Release(ended.LeaseID())
	for _, reqid := range []string{"live", "waiting", "ended"} {
		mustFail(t, h.hold("l", "other", reqid), ErrReqIDInUse)
		mustFail(t, h.hold("other", "k", reqid), ErrReqIDInUse)
	}
	_ = g
}

func TestLOCK03_ReqIDRememberedForTTLAfterEndThenForgotten(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "req", ttl(2*sec))
	h.m.Renew(g.LeaseID(), 5*sec) // the longest ttl sets how long it is remembered
	h.advance(5 * sec)            // expired now
	h.advance(5*sec - 1)
	mustLostTicket(t, h.hold("l", "k", "req"), ReasonExpired)
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonExpired)
	h.advance(1)
	_, err = h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonUnknownLease)
	again := h.granted("l", "k", "req") // forgotten: a fresh request
	if again.LeaseID() == g.LeaseID() || again.Fence <= g.Fence {
		t.Fatalf("fresh grant %+v after %+v", again, g)
	}
}

func TestLOCK04_LeaseIDsAreRandomHex(t *testing.T) {
	h := newHarness(t, Config{})
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for i := range 1000 {
		g := h.granted("l", strconv.Itoa(i), strconv.Itoa(i))
		if !hex32.MatchString(g.LeaseID()) || seen[g.LeaseID()] {
			t.Fatalf("lease id %q: not 32 lowercase hex, or seen before", g.LeaseID())
		}
		seen[g.LeaseID()] = true
	}
}

func TestLOCK04_IDsComeFromConfigRand(t *testing.T) {
	src := bytes.Repeat([]byte{0xab}, 16)
	src = append(src, bytes.Repeat([]byte{0x01}, 16)...)
	h := newHarness(t, Config{Rand: bytes.NewReader(src)})
	if g := h.granted("l", "k1", "r1"); g.LeaseID() != "abababababababababababababababab" {
		t.Fatalf("lease id %q", g.LeaseID())
	}
	if g := h.granted("l", "k2", "r2"); g.LeaseID() != "01010101010101010101010101010101" {
		t.Fatalf("lease id %q", g.LeaseID())
	}
	// The source ran dry: the grant fails, nothing is held.
	tk := h.hold("l", "k3", "r3")
	if _, err := tk.Result(); err == nil {
		t.Fatal("granted without random bytes")
	}
	if _, ok := h.m.Info("l", "k3"); ok {
		t.Fatal("a failed grant left the key held")
	}
}

func TestLOCK04_FenceOpensNothing(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r")
	fence := strconv.FormatUint(g.Fence, 10)
	for _, id := range []string{
		fence,
		fmt.Sprintf("%032x", g.Fence),
		fmt.Sprintf("%032d", g.Fence),
		"",
		g.LeaseID()[:31],
		g.LeaseID() + "0",
		bytesUpper(g.LeaseID()),
		"zz" + g.LeaseID()[2:],
	} {
		if id == g.LeaseID() {
			continue
		}
		_, err := h.m.Renew(id, 0)
		mustLost(t, err, ReasonUnknownLease)
		mustLost(t, h.m.Release(id), ReasonUnknownLease)
	}
	if info := h.info("l", "k"); info.Fence != g.Fence || info.TTL != 10*sec {
		t.Fatalf("the lease changed: %+v", info)
	}
}

func bytesUpper(s string) string { return string(bytes.ToUpper([]byte(s))) }

func TestLOCK05_EndedLeaseNeverRenewed(t *testing.T) {
	for _, tc := range []struct {
		reason string
		end    func(h *harness, g Grant)
	}{
		{ReasonExpired, func(h *harness, g Grant) { h.advance(10 * sec) }},
		{ReasonMaxHold, func(h *harness, g Grant) {
			h.advance(9 * sec)
			h.m.Renew(g.LeaseID(), 0)
			h.advance(3 * sec)
		}},
		{ReasonAdmin, func(h *harness, g Grant) { h.m.Revoke("l", "k") }},
		{ReasonReleased, func(h *harness, g Grant) { h.m.Release(g.LeaseID()) }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			h := newHarness(t, Config{})
			g := h.granted("l", "k", "r", ttl(10*sec), maxHold(12*sec))
			tc.end(h, g)
			for range 3 {
				_, err := h.m.Renew(g.LeaseID(), 0)
				mustLost(t, err, tc.reason)
				_, err = h.m.Renew(g.LeaseID(), time.Hour)
				mustLost(t, err, tc.reason)
			}
			// Holding the key again is a new lease with a new fence.
			g2 := h.granted("l", "k", "r2")
			if g2.LeaseID() == g.LeaseID() || g2.Fence <= g.Fence {
				t.Fatalf("new lease %+v after %+v", g2, g)
			}
			_, err := h.m.Renew(g.LeaseID(), 0)
			mustLost(t, err, tc.reason) // and the old id still does not renew
		})
	}
}

func TestLOCK05_ReleaseOfEndedLease(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r1")
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatalf("release of a live lease: %v", err)
	}
	if err := h.m.Release(g.LeaseID()); err != nil {
		t.Fatalf("retried release: %v, want nil (:1)", err)
	}
	g = h.granted("l", "k", "r2", ttl(sec))
	h.advance(sec)
	mustLost(t, h.m.Release(g.LeaseID()), ReasonExpired)
	g = h.granted("l", "k", "r3")
	h.m.Revoke("l", "k")
	mustLost(t, h.m.Release(g.LeaseID()), ReasonAdmin)
	g = h.granted("l", "k", "r4", maxHold(sec))
	h.advance(sec)
	mustLost(t, h.m.Release(g.LeaseID()), ReasonMaxHold)
	h.advance(time.Minute)
	mustLost(t, h.m.Release(g.LeaseID()), ReasonUnknownLease)
}

func TestLOCK06_DeadlineIsGrantOrRenewalPlusTTL(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r", ttl(5*sec))
	if g.TTLLeft != 5*sec {
		t.Fatalf("ttl left %v", g.TTLLeft)
	}
	h.advance(4 * sec)
	if left, err := h.m.Renew(g.LeaseID(), 0); err != nil || left != 5*sec {
		t.Fatalf("renew: %v %v", left, err)
	}
	h.advance(5*sec - 1)
	if info := h.info("l", "k"); info.TTL != 1 || info.Held != 9*sec-1 {
		t.Fatalf("info %+v", info)
	}
	h.advance(1) // exactly the deadline: ended
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("lease live at its deadline")
	}
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonExpired)
}

func TestLOCK06_ExpiryGrantsNextWaiterAtTheDeadline(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a", ttl(3*sec))
	b := h.hold("l", "k", "b", ttl(7*sec))
	h.advance(3*sec - 1)
	mustWait(t, b)
	h.advance(1)
	gb := mustGrant(t, b)
	if gb.Fence <= a.Fence || gb.TTLLeft != 7*sec {
		t.Fatalf("grant to the waiter %+v", gb)
	}
	if info := h.info("l", "k"); info.Held != 0 || info.Fence != gb.Fence {
		t.Fatalf("info at the handoff %+v", info)
	}
	// The waiter's lease runs from the old deadline.
	h.advance(7*sec - 1)
	if info := h.info("l", "k"); info.Fence != gb.Fence || info.TTL != 1 {
		t.Fatalf("info %+v", info)
	}
	h.advance(1)
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("waiter's lease outlived its deadline")
	}
	if p := h.clock.Pending(); p != 1 {
		// only the timer for forgetting the two ended leases
		t.Fatalf("%d clock timers armed, want 1", p)
	}
}

// stuckClock never fires its timers: a stand-in for a late timer.
type stuckClock struct{ fake *FakeClock }

func (c stuckClock) Now() time.Time                        { return c.fake.Now() }
func (c stuckClock) AfterFunc(time.Duration, func()) Timer { return stuckTimer{} }

type stuckTimer struct{}

func (stuckTimer) Stop() bool { return true }

func TestLOCK06_LateTimerNeverShowsEndedLeaseLive(t *testing.T) {
	fake := NewFakeClock(start)
	h := newHarness(t, Config{Clock: stuckClock{fake}})
	g := h.granted("l", "k", "a", ttl(sec))
	w := h.hold("l", "k", "b")
	fake.Advance(sec) // no timer fires
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonExpired)
	mustGrant(t, w) // the re-check handed the key over too
}

func TestLOCK06_OneClockTimer(t *testing.T) {
	h := newHarness(t, Config{})
	for i := range 50 {
		h.granted("l", strconv.Itoa(i), strconv.Itoa(i), ttl(time.Duration(50-i)*sec))
		if p := h.clock.Pending(); p != 1 {
			t.Fatalf("%d timers armed, want 1", p)
		}
	}
	h.advance(time.Hour)
	checkEmpty(t, h.m)
	if p := h.clock.Pending(); p != 0 {
		t.Fatalf("%d timers armed after everything was forgotten", p)
	}
}

func TestLOCK07_MaxHoldRevokesDespiteRenewals(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r", ttl(4*sec), maxHold(10*sec))
	w := h.hold("l", "k", "w")
	if info := h.info("l", "k"); info.MaxHold != 10*sec {
		t.Fatalf("info %+v", info)
	}
	h.advance(3 * sec)
	if left, _ := h.m.Renew(g.LeaseID(), 0); left != 4*sec {
		t.Fatalf("renew at 3s: %v", left)
	}
	h.advance(3 * sec)
	if left, _ := h.m.Renew(g.LeaseID(), 0); left != 4*sec {
		t.Fatalf("renew at 6s: %v", left)
	}
	h.advance(3 * sec)
	// At 9s the cap is 1s away: the reply is less than the ttl.
	if left, err := h.m.Renew(g.LeaseID(), 0); err != nil || left != sec {
		t.Fatalf("renew at 9s: %v %v, want 1s", left, err)
	}
	if left, _ := h.m.Renew(g.LeaseID(), time.Hour); left != sec {
		t.Fatalf("renew with a long ttl at 9s: %v, want 1s", left)
	}
	h.advance(sec - 1)
	mustWait(t, w)
	h.advance(1)
	mustGrant(t, w)
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonMaxHold)
	if s := h.m.Stats(); s.RevokedTotal != 1 || s.ExpiredTotal != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLOCK07_MaxHoldShorterThanTTL(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r", ttl(10*sec), maxHold(2*sec))
	if g.TTLLeft != 2*sec {
		t.Fatalf("ttl left %v, want the cap, 2s", g.TTLLeft)
	}
	h.advance(2 * sec)
	mustLostTicket(t, h.hold("l", "k", "r"), ReasonMaxHold)
}

func TestLOCK07_ExpiryBeforeTheCapIsExpired(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "r", ttl(2*sec), maxHold(time.Hour))
	h.advance(2 * sec)
	_, err := h.m.Renew(g.LeaseID(), 0)
	mustLost(t, err, ReasonExpired)
}

func TestLOCK08_FIFO(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "holder")
	var line []Ticket
	for i := range 5 {
		line = append(line, h.hold("l", "k", fmt.Sprint("w", i)))
	}
	for i, tk := range line {
		for _, later := range line[i:] {
			mustWait(t, later)
		}
		h.m.Release(g.LeaseID())
		g = mustGrant(t, tk)
	}
}

func TestLOCK08_RetryKeepsOriginalPlace(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "holder")
	b := h.hold("l", "k", "b", wait(sec))
	c := h.hold("l", "k", "c")
	h.advance(sec)
	mustFail(t, b, ErrNotGranted)
	h.advance(DefaultLinger - 1)
	b = h.hold("l", "k", "b") // resumes the place ahead of c
	h.m.Release(g.LeaseID())
	mustGrant(t, b)
	mustWait(t, c)
}

// The concurrent test runs real goroutines against the system clock, so that
// -race sees the timer callback beside callers.
func TestLOCK01_ConcurrentSystemClock(t *testing.T) {
	m := New(Config{})
	defer m.Close()
	var (
		mu      sync.Mutex
		holding = map[string]bool{}
		wg      sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := strconv.Itoa(i % 3)
				tk := m.Hold(HoldRequest{Lock: "l", Key: key, ReqID: fmt.Sprint(w, "-", i), TTL: time.Minute})
				<-tk.Done()
				g, err := tk.Result()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if holding[key] {
					t.Errorf("two holders of %s (LOCK-01)", key)
				}
				holding[key] = true
				mu.Unlock()
				m.Renew(g.LeaseID(), 0)
				m.Info("l", key)
				mu.Lock()
				holding[key] = false
				mu.Unlock()
				if err := m.Release(g.LeaseID()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	// Short leases and waits that the system clock's timer ends.
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				tk := m.Hold(HoldRequest{Lock: "short", Key: "k", ReqID: fmt.Sprint("s", w, "-", i),
					TTL: time.Millisecond, Wait: 5 * time.Millisecond, HasWait: true})
				<-tk.Done()
				if i%5 == 0 {
					tk.Abandon()
				}
			}
		}()
	}
	wg.Wait()
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}

// prefixClash is a random source whose ids share their first 64 bits with
// the previous id's every other draw.
type prefixClash struct{ n byte }

func (c *prefixClash) Read(b []byte) (int, error) {
	c.n++
	for i := range b {
		b[i] = c.n / 2 // draws 2k-1 and 2k give the same 16 bytes
	}
	b[15] = c.n // but differ in the last byte
	return len(b), nil
}

func TestLOCK04_IDPrefixClashDrawsAgain(t *testing.T) {
	h := newHarness(t, Config{Rand: &prefixClash{n: 1}})
	g1 := h.granted("l", "k1", "r1")
	g2 := h.granted("l", "k2", "r2")
	if g1.LeaseID()[:16] == g2.LeaseID()[:16] {
		t.Fatalf("two remembered leases share a 64-bit prefix: %s %s", g1.LeaseID(), g2.LeaseID())
	}
	for _, g := range []Grant{g1, g2} {
		if left, err := h.m.Renew(g.LeaseID(), 0); err != nil || left != 10*sec {
			t.Fatalf("renew %s: %v %v", g.LeaseID(), left, err)
		}
	}
	// An id that shares a live lease's first 64 bits is still unknown.
	other := g1.LeaseID()[:16] + "ffffffffffffffff"
	_, err := h.m.Renew(other, 0)
	mustLost(t, err, ReasonUnknownLease)
}

func TestIndexSpill(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.hashMask = 0 // every name and reqid under one hash
	var grants []Grant
	for i := range 20 {
		grants = append(grants, h.granted("l", strconv.Itoa(i), fmt.Sprint("r", i), ttl(time.Duration(i+1)*sec)))
	}
	for i, g := range grants {
		if again := h.granted("l", strconv.Itoa(i), fmt.Sprint("r", i)); again.LeaseID() != g.LeaseID() {
			t.Fatalf("retry %d found another lease", i)
		}
		mustFail(t, h.hold("l", "x", fmt.Sprint("r", i)), ErrReqIDInUse)
	}
	// Release from the middle and the front; the one at the hash's home goes first.
	for _, i := range []int{0, 10, 5, 19, 1} {
		h.m.Release(grants[i].LeaseID())
		if err := checkInvariants(h.m); err != nil {
			t.Fatal(err)
		}
	}
	h.advance(time.Minute)
	checkEmpty(t, h.m)
}
