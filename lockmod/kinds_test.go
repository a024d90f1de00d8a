package lockmod

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Semaphores, readers and writers, and owners (SPEC §12).

func limit(n int) opt    { return func(r *HoldRequest) { r.Limit = n } }
func shared() opt        { return func(r *HoldRequest) { r.Shared = true } }
func owner(s string) opt { return func(r *HoldRequest) { r.Owner = s } }
func fences(hs []Holder) []uint64 {
	var fs []uint64
	for _, h := range hs {
		fs = append(fs, h.Fence)
	}
	return fs
}

func TestLOCK01_LimitAdmitsUpToNLeases(t *testing.T) {
	h := newHarness(t, Config{})
	var gs []Grant
	for i := range 3 {
		gs = append(gs, h.granted("llm", "openai", "r"+strconv.Itoa(i), limit(3)))
	}
	seen := map[string]bool{}
	for i, g := range gs {
		if seen[g.LeaseID()] || i > 0 && g.Fence <= gs[i-1].Fence {
			t.Fatalf("permits share an id or a fence: %+v", gs)
		}
		seen[g.LeaseID()] = true
	}
	w := h.hold("llm", "openai", "r3", limit(3))
	mustWait(t, w)
	mustFail(t, h.hold("llm", "openai", "r4", limit(3), wait(0)), ErrNotGranted)
	info := h.info("llm", "openai")
	if info.Holders != 3 || info.Limit != 3 || info.Shared || info.Waiters != 1 || info.Fence != gs[2].Fence {
		t.Fatalf("info %+v", info)
	}
	// Each permit is a lease of its own: renewed, released, expiring alone.
	if _, err := h.m.Renew(gs[0].LeaseID(), 20*sec); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Release(gs[1].LeaseID()); err != nil {
		t.Fatal(err)
	}
	g3 := mustGrant(t, w) // the freed permit goes to the first in line
	h.advance(10 * sec)   // gs[2] and g3 run out; gs[0] was renewed
	if got := fences(h.m.Holders("llm", "openai")); len(got) != 1 || got[0] != gs[0].Fence {
		t.Fatalf("holders %x, want only %x", got, gs[0].Fence)
	}
	if _, err := h.m.Renew(g3.LeaseID(), 0); !errors.Is(err, ErrLost) {
		t.Fatalf("renew of an expired permit: %v", err)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

func TestLOCK01_SharedLeasesExcludeAWriter(t *testing.T) {
	h := newHarness(t, Config{})
	r1 := h.granted("reports", "q3", "r1", shared(), owner("reader-1"))
	r2 := h.granted("reports", "q3", "r2", shared(), owner("reader-2"))
	w := h.hold("reports", "q3", "w", owner("migration"))
	mustWait(t, w)
	hs := h.m.Holders("reports", "q3")
	if len(hs) != 2 || !hs[0].Shared || hs[0].Owner != "reader-1" || hs[1].Owner != "reader-2" || hs[0].Fence != r1.Fence {
		t.Fatalf("holders %+v", hs)
	}
	h.m.Release(r1.LeaseID())
	mustWait(t, w)
	h.m.Release(r2.LeaseID())
	wg := mustGrant(t, w)
	// A reader now waits for the writer.
	r3 := h.hold("reports", "q3", "r3", shared())
	mustWait(t, r3)
	if info := h.info("reports", "q3"); info.Holders != 1 || info.Shared || info.Owner != "migration" || info.Fence != wg.Fence {
		t.Fatalf("info %+v", info)
	}
	h.m.Release(wg.LeaseID())
	mustGrant(t, r3)
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

func TestLOCK08_WriterHoldsBackLaterReaders(t *testing.T) {
	h := newHarness(t, Config{})
	r1 := h.granted("l", "k", "r1", shared())
	w := h.hold("l", "k", "w")
	r2 := h.hold("l", "k", "r2", shared())
	r3 := h.hold("l", "k", "r3", shared())
	mustWait(t, w)
	mustWait(t, r2) // it would fit beside r1, but the writer came first
	mustWait(t, r3)
	h.m.Release(r1.LeaseID())
	wg := mustGrant(t, w)
	mustWait(t, r2)
	h.m.Release(wg.LeaseID())
	// Both readers in one step.
	g2, g3 := mustGrant(t, r2), mustGrant(t, r3)
	if g3.Fence != g2.Fence+1 {
		t.Fatalf("fences %x, %x", g2.Fence, g3.Fence)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

// A writer whose WAIT runs out, or who goes away, lets the readers it held
// back go at once.
func TestLOCK08_WaitingWriterLeavingLetsReadersIn(t *testing.T) {
	for _, leave := range []string{"wait runs out", "abandon"} {
		t.Run(leave, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.granted("l", "k", "r1", shared())
			w := h.hold("l", "k", "w", wait(sec))
			r2 := h.hold("l", "k", "r2", shared())
			mustWait(t, r2)
			if leave == "abandon" {
				w.Abandon()
			} else {
				h.advance(sec)
			}
			mustGrant(t, r2)
			if err := checkInvariants(h.m); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLOCK08_FreedPermitGoesToFirstInLine(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a", limit(2))
	h.granted("l", "k", "b", limit(2))
	var line []Ticket
	for i := range 4 {
		line = append(line, h.hold("l", "k", "w"+strconv.Itoa(i), limit(2)))
	}
	h.m.Release(a.LeaseID())
	g0 := mustGrant(t, line[0])
	for _, w := range line[1:] {
		mustWait(t, w)
	}
	// A newcomer with room would still not overtake: there is no room.
	mustFail(t, h.hold("l", "k", "late", limit(2), wait(0)), ErrNotGranted)
	// Revoking the key's every permit grants the next two in one step.
	if n := h.m.RevokeFence("l", "k", 0); n != 2 {
		t.Fatalf("revoked %d, want 2", n)
	}
	mustGrant(t, line[1])
	mustGrant(t, line[2])
	mustWait(t, line[3])
	if _, err := h.m.Renew(g0.LeaseID(), 0); err == nil || err.Error() != ReasonAdmin {
		t.Fatalf("renew of a revoked permit: %v", err)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

func TestLOCK15_LimitMismatchChangesNothing(t *testing.T) {
	h := newHarness(t, Config{})
	h.granted("l", "sem", "a", limit(5))
	h.granted("l", "mutex", "b")
	for _, c := range []struct {
		key  string
		opts []opt
		want string
	}{
		{"sem", nil, "this key is in use with LIMIT 5"},
		{"sem", []opt{limit(4)}, "this key is in use with LIMIT 5"},
		{"sem", []opt{shared()}, "this key is in use with LIMIT 5"},
		{"sem", []opt{limit(4), wait(0)}, "this key is in use with LIMIT 5"},
		{"mutex", []opt{limit(2)}, "this key is in use without LIMIT"},
	} {
		before, _ := h.m.Info("l", c.key)
		stats := h.m.Stats()
		_, err := h.hold("l", c.key, "x", c.opts...).Result()
		var le *LimitError
		if !errors.As(err, &le) || err.Error() != c.want {
			t.Fatalf("%s %v: %v, want %q", c.key, c.opts, err, c.want)
		}
		if after, _ := h.m.Info("l", c.key); after != before || h.m.Stats() != stats {
			t.Fatalf("%s: a refused request changed %+v into %+v", c.key, before, after)
		}
	}
	// The reqid was not remembered: it may be used afresh.
	mustGrant(t, h.hold("l", "free", "x", limit(7)))
	// A place in line keeps the key's limit too, lingering or not.
	w := h.hold("l", "mutex", "w", wait(sec))
	h.advance(sec)
	mustFail(t, w, ErrNotGranted)
	if _, err := h.hold("l", "mutex", "y", limit(3)).Result(); err == nil || err.Error() != "this key is in use without LIMIT" {
		t.Fatalf("%v", err)
	}
	// LIMIT 1 is the same as none.
	mustWait(t, h.hold("l", "mutex", "z", limit(1)))
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

// Once a key is free and nobody is in line, another limit is welcome.
func TestLOCK15_FreeKeyTakesAnyLimit(t *testing.T) {
	h := newHarness(t, Config{})
	g := h.granted("l", "k", "a", limit(3))
	h.m.Release(g.LeaseID())
	g = h.granted("l", "k", "b")
	h.m.Release(g.LeaseID())
	h.granted("l", "k", "c", limit(9))
	if info := h.info("l", "k"); info.Limit != 9 {
		t.Fatalf("info %+v", info)
	}
}

func TestLOCK16_OwnerPerLeaseKeptAcrossRetries(t *testing.T) {
	h := newHarness(t, Config{})
	h.granted("l", "k", "a", owner("host-a:1"), limit(2))
	tk := h.granted("l", "k", "b", owner("host-b:2"), limit(2))
	w := h.hold("l", "k", "c", owner("host-c:3"), limit(2), wait(sec))
	h.advance(sec) // c lingers
	mustFail(t, w, ErrNotGranted)
	h.m.Release(tk.LeaseID())
	// The retry resumes c's place with another owner text: the first stays.
	mustGrant(t, h.hold("l", "k", "c", owner("impostor"), limit(2)))
	again := mustGrant(t, h.hold("l", "k", "c", owner("impostor"), limit(2)))
	hs := h.m.Holders("l", "k")
	if len(hs) != 2 || hs[0].Owner != "host-a:1" || hs[1].Owner != "host-c:3" || hs[1].Fence != again.Fence {
		t.Fatalf("holders %+v", hs)
	}
	if info := h.info("l", "k"); info.Owner != "host-c:3" {
		t.Fatalf("info %+v: the newest lease's owner", info)
	}
	_, entries := h.m.List("l", 0, 10)
	if len(entries) != 1 || entries[0].Owner != "host-c:3" || entries[0].Holders != 2 {
		t.Fatalf("list %+v", entries)
	}
	// Any bytes, up to what resp admits.
	long := strings.Repeat("\x00é", 128)
	h.granted("l", "other", "d", owner(long))
	if info := h.info("l", "other"); info.Owner != long {
		t.Fatalf("owner %q", info.Owner)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

func TestRevokeFenceEndsOneLease(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a", shared())
	b := h.granted("l", "k", "b", shared())
	if n := h.m.RevokeFence("l", "k", a.Fence+100); n != 0 {
		t.Fatalf("revoked %d with an unknown fence", n)
	}
	if n := h.m.RevokeFence("l", "k", a.Fence); n != 1 {
		t.Fatalf("revoked %d, want 1", n)
	}
	if _, err := h.m.Renew(a.LeaseID(), 0); err == nil || err.Error() != ReasonAdmin {
		t.Fatalf("a: %v", err)
	}
	if _, err := h.m.Renew(b.LeaseID(), 0); err != nil {
		t.Fatalf("b: %v", err)
	}
	if n := h.m.RevokeFence("l", "k", 0); n != 1 {
		t.Fatalf("revoked %d, want 1", n)
	}
	if _, ok := h.m.Info("l", "k"); ok {
		t.Fatal("key still shown")
	}
	checkEmptyAfter(t, h)
}

// checkEmptyAfter lets every memory of the harness's Manager run out and
// insists nothing is left.
func checkEmptyAfter(t *testing.T, h *harness) {
	t.Helper()
	h.advance(DefaultTTL + DefaultLinger + 10*sec)
	h.m.Stats()
	checkEmpty(t, h.m)
}

func TestInProcessPermitsAndReaders(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.granted("l", "k", "a", inProcess(), shared())
	b := h.granted("l", "k", "b", shared())
	w := h.hold("l", "k", "w", inProcess())
	mustWait(t, w)
	h.m.Release(a.LeaseID())
	if err := a.Ending.Err(); err == nil {
		t.Fatal("released in-process reader not told")
	}
	h.m.Release(b.LeaseID())
	wg := mustGrant(t, w)
	if wg.Ending == nil || wg.TTLLeft != -1 {
		t.Fatalf("in-process writer grant %+v", wg)
	}
	h.m.Release(wg.LeaseID())
	checkEmptyAfter(t, h)
}

// TestMemoryPerLivePermit reports what a permit of a semaphore costs beside
// a plain lease: its share of the key's state and its entry among the
// key's holders.
func TestMemoryPerLivePermit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100,000 leases")
	}
	per := liveLeaseBytesLimit(t, 100_000, 100)
	t.Logf("%.0f bytes per live permit (100,000 permits, LIMIT 100 on 1,000 keys)", per)
	if per > 260 {
		t.Errorf("%.0f bytes per live permit, limit 260", per)
	}
}
