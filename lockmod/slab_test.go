package lockmod

// The slab and its tables: stale handles after a slab place is reused
// (ABA), the two forms of a reqid (LOCK-03), full-key comparison under
// 32-bit hash collisions, the order's hand-over on forget, and memory
// after a peak. (Written as an independent review of that change.)

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// refOf is the slab ref of the request remembered under reqid, 0 if none.
func refOf(m *Manager, reqid string) uint32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b [80]byte
	k, hexForm := appendReqKey(b[:0], reqid)
	if r := m.byReqKey(view(k), hexForm); r != nil {
		return r.ref
	}
	return 0
}

func mustInvariants(t *testing.T, m *Manager) {
	t.Helper()
	if err := checkInvariants(m); err != nil {
		t.Fatal(err)
	}
}

// The slab's places are reused; nothing may act through a handle on a
// place after its request was forgotten. Each case makes the stale handle,
// has the place reused (checked: same ref), and uses the handle.
func TestStaleHandlesAfterSlotReuse(t *testing.T) {
	t.Run("ticket whose WAIT ran out", func(t *testing.T) {
		h := newHarness(t, Config{})
		hg := h.granted("l", "k", "H", ttl(30*sec))
		ta := h.hold("l", "k", "A", wait(sec))
		refA := refOf(h.m, "A")
		h.advance(sec) // A's WAIT runs out: A lingers
		mustFail(t, ta, ErrNotGranted)
		h.advance(sec) // A's place is forgotten
		if refOf(h.m, "A") != 0 {
			t.Fatal("A still remembered")
		}
		tb := h.hold("l", "k", "B") // reuses A's place
		if got := refOf(h.m, "B"); got != refA {
			t.Fatalf("B got ref %d, A had %d: place not reused, test proves nothing", got, refA)
		}
		ta.Abandon() // stale: must not touch B
		mustWait(t, tb)
		mustFail(t, ta, ErrNotGranted)
		mustInvariants(t, h.m)
		h.m.Release(hg.LeaseID())
		mustGrant(t, tb)
		mustInvariants(t, h.m)
	})
	t.Run("superseded and granted tickets", func(t *testing.T) {
		h := newHarness(t, Config{})
		hg := h.granted("l", "k", "H", ttl(30*sec))
		h.granted("l", "k2", "H2", ttl(30*sec))
		t1 := h.hold("l", "k", "A")
		t2 := h.hold("l", "k", "A") // supersedes t1
		mustFail(t, t1, ErrSuperseded)
		refA := refOf(h.m, "A")
		t1.Abandon() // must not withdraw t2
		mustWait(t, t2)
		h.m.Release(hg.LeaseID())
		ga := mustGrant(t, t2)
		h.m.Release(ga.LeaseID())
		h.advance(11 * sec) // A's ended lease is forgotten
		if refOf(h.m, "A") != 0 {
			t.Fatal("A still remembered")
		}
		tc := h.hold("l", "k2", "C") // waits behind H2, in A's old place
		if got := refOf(h.m, "C"); got != refA {
			t.Fatalf("C got ref %d, A had %d", got, refA)
		}
		t1.Abandon()
		t2.Abandon()
		mustWait(t, tc)
		if g, err := t2.Result(); err != nil || g.LeaseID() != ga.LeaseID() {
			t.Fatalf("t2's result changed: %v %v", g, err)
		}
		mustInvariants(t, h.m)
	})
	t.Run("lease id of a forgotten lease", func(t *testing.T) {
		h := newHarness(t, Config{})
		gx := h.granted("l", "k", "X", ttl(sec))
		refX := refOf(h.m, "X")
		if err := h.m.Release(gx.LeaseID()); err != nil {
			t.Fatal(err)
		}
		h.advance(sec) // forgotten
		gy := h.granted("l", "k", "Y", ttl(5*sec))
		if got := refOf(h.m, "Y"); got != refX {
			t.Fatalf("Y got ref %d, X had %d", got, refX)
		}
		if _, err := h.m.Renew(gx.LeaseID(), 0); err == nil {
			t.Fatal("renewed a forgotten lease through its reused place")
		} else {
			mustLost(t, err, ReasonUnknownLease)
		}
		mustLost(t, h.m.Release(gx.LeaseID()), ReasonUnknownLease)
		if info := h.info("l", "k"); info.Fence != gy.Fence {
			t.Fatalf("Y's lease touched: %+v", info)
		}
		// X is forgotten: a retry is a fresh request, which waits behind Y
		// (it must not be answered with Y's lease).
		tx := h.hold("l", "k", "X", wait(0))
		mustFail(t, tx, ErrNotGranted)
		mustInvariants(t, h.m)
	})
	t.Run("order entry handed over, then the place reused by another lock", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.granted("l", "k", "H", ttl(500*ms))    // remembered until 1s
		w := h.hold("l", "k", "W", wait(100*ms)) // lingers until 1.1s
		refH := refOf(h.m, "H")
		h.advance(100 * ms)
		mustFail(t, w, ErrNotGranted)
		h.advance(400 * ms) // H expires; the key stays listed with H (W lingers)
		mustInvariants(t, h.m)
		h.advance(500 * ms) // H forgotten: the entry goes to W
		if refOf(h.m, "H") != 0 {
			t.Fatal("H still remembered")
		}
		h.granted("other", "z", "Z")
		if got := refOf(h.m, "Z"); got != refH {
			t.Fatalf("Z got ref %d, H had %d", got, refH)
		}
		mustInvariants(t, h.m)
		if _, es := h.m.List("l", 0, 10); len(es) != 1 || es[0].Key != "k" || es[0].Fence != 0 || es[0].Waiters != 1 {
			t.Fatalf("LIST l: %+v", es)
		}
		if _, es := h.m.List("other", 0, 10); len(es) != 1 || es[0].Key != "z" {
			t.Fatalf("LIST other: %+v", es)
		}
		h.advance(100 * ms) // W's place goes: k is unlisted
		if _, es := h.m.List("l", 0, 10); len(es) != 0 {
			t.Fatalf("LIST l after the line went: %+v", es)
		}
		mustInvariants(t, h.m)
	})
}

// LOCK-03 with the two kept forms of a reqid: 32 lowercase hex characters
// are kept as 16 bytes, anything else as it is. The same hex reqid in upper
// case, and the 16 raw bytes it spells, are other reqids; with every name
// and reqid under one hash too.
func TestReqIDFormsStayDistinct(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprint("collide=", collide), func(t *testing.T) {
			h := newHarness(t, Config{})
			if collide {
				h.m.hashMask = 0
			}
			var traced []string
			h.m.trace = func(ev traceEvent) {
				if ev.grant {
					traced = append(traced, ev.reqid)
				}
			}
			lower := "00112233445566778899aabbccddeeff"
			upper := strings.ToUpper(lower)
			raw, _ := hex.DecodeString(lower)
			mixed := "00112233445566778899aabbccddeefF"

			g := h.granted("l", "k", lower)
			for _, other := range []string{upper, string(raw), mixed} {
				// Another reqid: it waits on k, and is granted on another key.
				mustFail(t, h.hold("l", "k", other, wait(0)), ErrNotGranted)
				og := h.granted("l", "k-"+hex.EncodeToString([]byte(other)), other)
				if og.LeaseID() == g.LeaseID() {
					t.Fatalf("%q answered with %q's lease", other, lower)
				}
			}
			if again := h.granted("l", "k", lower); again.LeaseID() != g.LeaseID() || again.Fence != g.Fence {
				t.Fatalf("retry of %q: %+v, want %+v", lower, again, g)
			}
			mustFail(t, h.hold("l", "elsewhere", lower), ErrReqIDInUse)
			want := []string{lower, upper, string(raw), mixed}
			if len(traced) != len(want) {
				t.Fatalf("traced grants %q, want %q", traced, want)
			}
			for i := range want {
				if traced[i] != want[i] {
					t.Fatalf("grant %d traced reqid %q, want %q", i, traced[i], want[i])
				}
			}
			mustInvariants(t, h.m)
		})
	}
}

// Lease ids that share the 32 bits the leases table files them under (and
// more) are told apart by the whole id.
func TestLeaseIDsSharingTheirHash(t *testing.T) {
	src := &bytes.Buffer{}
	for i := range 40 {
		id := make([]byte, 16)
		copy(id, []byte{0xde, 0xad, 0xbe, 0xef}) // one 32-bit hash for all
		id[4] = byte(i)                          // distinct 64-bit prefixes
		id[15] = byte(i)
		src.Write(id)
	}
	h := newHarness(t, Config{Rand: src})
	var gs []Grant
	for i := range 40 {
		gs = append(gs, h.granted("l", fmt.Sprint("k", i), fmt.Sprint("r", i), ttl(time.Duration(i+1)*sec)))
	}
	for i, g := range gs {
		if left, err := h.m.Renew(g.LeaseID(), 0); err != nil || left != time.Duration(i+1)*sec {
			t.Fatalf("renew %d: %v %v", i, left, err)
		}
	}
	// Release every other one, from the middle outwards; the rest stay.
	for i := 20; i < 40; i += 2 {
		if err := h.m.Release(gs[i].LeaseID()); err != nil {
			t.Fatal(err)
		}
		if err := h.m.Release(gs[39-i].LeaseID()); err != nil {
			t.Fatal(err)
		}
		mustInvariants(t, h.m)
	}
	notGranted := "deadbeef" + strings.Repeat("77", 12)
	_, err := h.m.Renew(notGranted, 0)
	mustLost(t, err, ReasonUnknownLease)
	h.advance(time.Hour)
	checkEmpty(t, h.m)
}

// A long random run over many keys, many more requests than one slab
// chunk, with SDK-shaped (hex), upper-case and raw 16-byte reqids, and
// under hash collisions: the structures agree after every step, and a
// reqid never gets a second lease while its first is remembered (LOCK-03),
// and a retry is answered with the lease its reqid got.
func TestChurnAcrossChunks(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprint("collide=", collide), func(t *testing.T) {
			reviewChurn(t, collide)
		})
	}
}

func reviewChurn(t *testing.T, collide bool) {
	h := newHarness(t, Config{})
	if collide {
		h.m.hashMask = 0xff00000f // few shards, few hashes in each
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(fmt.Sprint(collide)))))
	const ttlD = 2 * sec
	type leaseRec struct {
		id    string
		ended bool
		endAt instant
	}
	last := map[string]*leaseRec{} // reqid -> its last lease
	byID := map[string]string{}    // lease id -> reqid
	h.m.trace = func(ev traceEvent) {
		id := hex.EncodeToString(ev.id[:])
		if !ev.grant {
			if rec := last[ev.reqid]; rec != nil && rec.id == id {
				rec.ended, rec.endAt = true, ev.at
			}
			return
		}
		if rec := last[ev.reqid]; rec != nil && (!rec.ended || ev.at < rec.endAt+instant(ttlD)) {
			t.Fatalf("LOCK-03: reqid %q granted again at %v, its lease %s ended at %v", ev.reqid, ev.at, rec.id, rec.endAt)
		}
		last[ev.reqid] = &leaseRec{id: id}
		byID[id] = ev.reqid
	}
	reqid := func(i int) string {
		b := [16]byte{byte(i), byte(i >> 8), 0x5a}
		switch i % 4 {
		case 0:
			return hex.EncodeToString(b[:])
		case 1:
			return strings.ToUpper(hex.EncodeToString(b[:]))
		case 2:
			return string(b[:])
		}
		return fmt.Sprint("req-", i)
	}
	var open []Ticket
	var ids []string
	maxChunks := 0
	for step := range 12000 {
		switch op := rng.IntN(10); {
		case op < 5:
			id := reqid(rng.IntN(20000))
			key := fmt.Sprint("k", rng.IntN(2500))
			var opts []opt
			opts = append(opts, ttl(ttlD))
			switch rng.IntN(3) {
			case 0:
				opts = append(opts, wait(time.Duration(rng.IntN(4))*250*ms))
			case 1:
				opts = append(opts, wait(0))
			}
			tk := h.hold("l", key, id, opts...)
			if isDone(tk) {
				g, err := tk.Result()
				if err == nil {
					if r := byID[g.LeaseID()]; r != id {
						t.Fatalf("step %d: HOLD %q answered with the lease of %q", step, id, r)
					}
					ids = append(ids, g.LeaseID())
				}
			} else {
				open = append(open, tk)
			}
		case op < 6 && len(ids) > 0:
			h.m.Renew(ids[rng.IntN(len(ids))], 0)
		case op < 7 && len(ids) > 0:
			h.m.Release(ids[rng.IntN(len(ids))])
		case op < 8 && len(open) > 0:
			i := rng.IntN(len(open))
			open[i].Abandon()
			open = append(open[:i], open[i+1:]...)
		default:
			h.advance(time.Duration(rng.IntN(4)) * ms)
		}
		// Tickets answered by now: a grant is the lease of the ticket's own reqid.
		keep := open[:0]
		for _, tk := range open {
			if !isDone(tk) {
				keep = append(keep, tk)
				continue
			}
			if g, err := tk.Result(); err == nil {
				ids = append(ids, g.LeaseID())
			}
		}
		open = keep
		if len(ids) > 2000 {
			ids = ids[len(ids)-1000:]
		}
		maxChunks = max(maxChunks, len(h.m.slab.chunks))
		if step%400 == 0 {
			mustInvariants(t, h.m)
		}
	}
	mustInvariants(t, h.m)
	if maxChunks < 2 {
		t.Fatalf("only %d slab chunk(s) used: the run did not cross chunks", maxChunks)
	}
	h.advance(time.Hour)
	for _, tk := range open {
		tk.Abandon()
	}
	h.advance(time.Hour)
	checkEmpty(t, h.m)
}

// The package must build wherever it built before the change: slab.go
// passes 1<<32-1 to fmt.Sprintf as an untyped constant, an int, which
// overflows on 32-bit platforms (GOARCH=386, arm), where HEAD builds.
// An Observer may keep the strings of its events (a log handler that
// buffers): they must not change when the request's place is reused.
type rawObserver struct{ locks, keys []string }

func (o *rawObserver) LeaseGranted(e GrantEvent) {
	o.locks, o.keys = append(o.locks, e.Lock), append(o.keys, e.Key)
}
func (o *rawObserver) LeaseEnded(EndEvent) {}

func TestObserverStringsSurviveSlotReuse(t *testing.T) {
	obs := &rawObserver{}
	h := newHarness(t, Config{Observer: obs})
	for i := range 50 {
		g := h.granted(fmt.Sprint("lock", i), fmt.Sprint("key", i), fmt.Sprint("r", i), ttl(sec))
		h.m.Release(g.LeaseID())
		h.advance(sec) // forgotten: the next grant reuses the place
	}
	for i := range 50 {
		if obs.locks[i] != fmt.Sprint("lock", i) || obs.keys[i] != fmt.Sprint("key", i) {
			t.Fatalf("event %d kept %q/%q", i, obs.locks[i], obs.keys[i])
		}
	}
}

// Memory after a peak: the slab's chunks and the tables' shards are never
// given back (the Go maps before kept their buckets, but the requests
// themselves were freed). This measures what a peak leaves behind once
// every lease is forgotten, and checks that churn after the peak reuses
// it rather than growing. Measured: ~127 bytes per peak lease retained,
// against ~80 with the Go maps and a heap object per request before.
func TestMemoryAfterPeak(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 50,000 leases")
	}
	const n = 50_000
	var base, peak, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	h := newHarness(t, Config{})
	for i := range n {
		h.granted("summaries", fmt.Sprint("chat-", i), fmt.Sprintf("%032x", i+1), ttl(10*sec))
	}
	runtime.GC()
	runtime.ReadMemStats(&peak)
	h.advance(time.Minute) // all expire and are forgotten
	checkEmpty(t, h.m)
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("peak %.0f B/lease; after all are forgotten %.0f B per peak lease retained (slab %d chunks)",
		float64(peak.HeapAlloc-base.HeapAlloc)/n, float64(after.HeapAlloc-base.HeapAlloc)/n, len(h.m.slab.chunks))
	chunks := len(h.m.slab.chunks)
	for round := range 3 {
		for i := range n / 2 {
			h.granted("summaries", fmt.Sprint("chat-", i), fmt.Sprint("round", round, "-", i), ttl(10*sec))
		}
		h.advance(time.Minute)
	}
	if len(h.m.slab.chunks) != chunks {
		t.Fatalf("churn below the peak grew the slab from %d to %d chunks", chunks, len(h.m.slab.chunks))
	}
	checkEmpty(t, h.m)
}
