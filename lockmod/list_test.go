package lockmod

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// walkAll lists lock to the end, count keys a step, and insists every
// cursor but the last is not 0.
func walkAll(t testing.TB, m *Manager, lock string, count int) []ListEntry {
	t.Helper()
	var all []ListEntry
	cursor := uint64(0)
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			t.Fatalf("List(%q) does not end", lock)
		}
		next, entries := m.List(lock, cursor, count)
		all = append(all, entries...)
		if next == 0 {
			return all
		}
		if next <= cursor {
			t.Fatalf("List(%q, %d) went back to %d", lock, cursor, next)
		}
		cursor = next
	}
}

func keysOf(entries []ListEntry) []string {
	var keys []string
	for _, e := range entries {
		keys = append(keys, e.Key)
	}
	slices.Sort(keys)
	return keys
}

func TestListShowsHeldAndWaitedKeys(t *testing.T) {
	h := newHarness(t, Config{})
	if next, entries := h.m.List("l", 0, 10); next != 0 || len(entries) != 0 {
		t.Fatalf("empty store: %d %+v", next, entries)
	}
	a := h.granted("l", "a", "r1", ttl(30*sec))
	h.granted("l", "b", "r2", ttl(10*sec))
	h.hold("l", "b", "r3")              // waits
	h.hold("l", "b", "r4", wait(1*sec)) // waits, then lingers
	h.granted("other", "c", "r5")       // another lock
	h.granted("", "la", "r6")           // lock "" + "la" must not read as lock "l" + "a"
	h.granted("l\x00", "a", "r7")       // nor "l\x00" as "l"
	h.advance(1500 * ms)                // r4's WAIT ran out at 1 s; its place lingers to 2 s

	got := map[string]ListEntry{}
	for _, e := range walkAll(t, h.m, "l", 10) {
		if _, dup := got[e.Key]; dup {
			t.Fatalf("key %q listed twice in a quiet walk", e.Key)
		}
		got[e.Key] = e
	}
	want := map[string]ListEntry{
		"a": {Key: "a", Fence: a.Fence, TTL: 28500 * ms, Holders: 1, Held: 1500 * ms, LeaseTTL: 30 * sec, Limit: 1},
		"b": {Key: "b", Fence: a.Fence + 1, TTL: 8500 * ms, Waiters: 2, Holders: 1, Held: 1500 * ms, LeaseTTL: 10 * sec, Limit: 1},
	}
	if !maps.Equal(got, want) {
		t.Fatalf("List: %+v, want %+v", got, want)
	}

	// The holder of b goes; r3 gets it; r4's place lingers, then goes.
	h.m.Revoke("l", "b")
	h.m.Revoke("l", "a")
	_, entries := h.m.List("l", 0, 10)
	if len(entries) != 1 || entries[0].Key != "b" || entries[0].Waiters != 1 {
		t.Fatalf("after revokes: %+v", entries)
	}
	h.m.Revoke("l", "b") // free, with r4 lingering: fence 0, ttl -1, as LOCK.INFO
	_, entries = h.m.List("l", 0, 10)
	if len(entries) != 1 || entries[0] != (ListEntry{Key: "b", Waiters: 1, Limit: 1}) {
		t.Fatalf("lingering only: %+v", entries)
	}
	h.advance(DefaultLinger)
	if _, entries := h.m.List("l", 0, 10); len(entries) != 0 {
		t.Fatalf("after the linger: %+v", entries)
	}
	if err := checkInvariants(h.m); err != nil {
		t.Fatal(err)
	}
}

func TestListWalksEveryKeyOnce(t *testing.T) {
	h := newHarness(t, Config{})
	const n = 1000
	for i := range n {
		h.granted("l", strconv.Itoa(i), "r"+strconv.Itoa(i))
		h.granted("m", strconv.Itoa(i), "s"+strconv.Itoa(i))
	}
	for _, count := range []int{1, 3, 10, 999, 5000, 0} {
		entries := walkAll(t, h.m, "l", count)
		keys := keysOf(entries)
		if len(keys) != n || len(slices.Compact(keys)) != n {
			t.Fatalf("COUNT %d: %d keys, %d distinct, want %d", count, len(entries), len(keys), n)
		}
	}
	// COUNT is a hint, kept when no positions collide.
	if _, entries := h.m.List("l", 0, 7); len(entries) != 7 {
		t.Fatalf("COUNT 7 gave %d", len(entries))
	}
	if next, entries := h.m.List("l", 1<<32, 7); next != 0 || len(entries) != 0 {
		t.Fatalf("a cursor past every key hash: %d %+v", next, entries)
	}
}

// Keys at one position come in one step, whatever COUNT says, so that a
// cursor never falls between them; a lock whose hash collides is skipped.
func TestListCollisions(t *testing.T) {
	h := newHarness(t, Config{})
	h.m.order.hash = func(s string) uint32 { return uint32(len(s)) }
	for i := range 30 {
		h.granted("l", fmt.Sprintf("%02d", i), fmt.Sprint("r", i)) // all at one position
		h.granted("m", fmt.Sprintf("%03d", i), fmt.Sprint("s", i)) // lock m hashes as lock l
	}
	h.granted("l", "x", "rx")
	h.granted("l", "yyy", "ry")
	next, entries := h.m.List("l", 0, 1)
	if next != 2 || len(entries) != 1 || entries[0].Key != "x" {
		t.Fatalf("first step: %d %+v", next, entries)
	}
	next, entries = h.m.List("l", next, 1)
	if next != 3 || len(entries) != 30 {
		t.Fatalf("second step: next %d, %d entries, want the group of 30", next, len(entries))
	}
	next, entries = h.m.List("l", next, 1)
	if next != 0 || len(entries) != 1 || entries[0].Key != "yyy" {
		t.Fatalf("third step: %d %+v (lock m must be skipped)", next, entries)
	}
	if got := len(walkAll(t, h.m, "m", 4)); got != 30 {
		t.Fatalf("lock m: %d keys", got)
	}
}

// A key held for a whole walk is listed at least once, while other keys
// come and go and the walk's blocks split and merge.
func TestListDuringChurn(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := NewFakeClock(start)
		m := New(Config{Clock: clock})
		defer m.Close()
		if rapid.Bool().Draw(rt, "collide") {
			m.order.hash = func(s string) uint32 { return uint32(len(s) % 5) }
		}
		seq := 0
		held := map[string]string{} // key -> lease id
		// hold holds key, or joins its line with a WAIT of a second (then
		// its place lingers for another).
		hold := func(lock, key string) {
			seq++
			tk := m.Hold(HoldRequest{Lock: lock, Key: key, ReqID: strconv.Itoa(seq), TTL: time.Hour, Wait: sec, HasWait: true})
			if !isDone(tk) {
				return
			}
			if g, err := tk.Result(); err == nil && lock == "l" {
				held[key] = g.LeaseID()
			}
		}
		keyGen := rapid.IntRange(0, 400)
		for range rapid.IntRange(0, 300).Draw(rt, "before") {
			hold("l", strconv.Itoa(keyGen.Draw(rt, "key")))
		}
		steady := map[string]bool{}
		for k := range held {
			if rapid.Bool().Draw(rt, "steady") {
				steady[k] = true
			}
		}
		seen := map[string]bool{}
		cursor := uint64(0)
		for step := 0; ; step++ {
			next, entries := m.List("l", cursor, rapid.IntRange(1, 40).Draw(rt, "count"))
			for _, e := range entries {
				seen[e.Key] = true
				if e.Fence == 0 && e.Waiters == 0 {
					rt.Fatalf("key %q listed, neither held nor waited for", e.Key)
				}
			}
			if next == 0 {
				break
			}
			cursor = next
			// Churn between steps, never touching the steady keys.
			for range rapid.IntRange(0, 60).Draw(rt, "churn") {
				k := strconv.Itoa(keyGen.Draw(rt, "key"))
				switch id, ok := held[k]; {
				case steady[k]:
				case ok:
					if err := m.Release(id); err != nil {
						rt.Fatal(err)
					}
					delete(held, k)
				default:
					hold("l", k)
					hold("x", k)
				}
			}
			clock.Advance(time.Duration(rapid.IntRange(0, 1500).Draw(rt, "ms")) * ms)
			if err := checkInvariants(m); err != nil {
				rt.Fatal(err)
			}
		}
		for k := range steady {
			if !seen[k] {
				rt.Fatalf("key %q held for the whole walk was not listed", k)
			}
		}
	})
}

// The order alone, against a sorted model, through many adds and removes.
func TestOrderBlocks(t *testing.T) {
	o := newOrder()
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := map[string]*request{}
	model := map[string]bool{}
	for i := range 20000 {
		name := string(keyName(nil, "l", strconv.Itoa(rng.IntN(3000))))
		if i > 10000 && rng.IntN(3) > 0 { // drain more than fill
			o.remove(name)
			delete(model, name)
		} else {
			r := reqs[name]
			if r == nil {
				r = &request{text: name, nameLen: uint32(len(name))}
				reqs[name] = r
			}
			o.add(r)
			model[name] = true
		}
		if i%500 == 0 || i == 19999 {
			if err := checkOrderBlocks(o, func(e *orderEntry) error {
				if !model[e.r.name()] {
					return fmt.Errorf("%q listed, not in the model", e.r.name())
				}
				return nil
			}); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			if o.n != len(model) {
				t.Fatalf("op %d: %d listed, model has %d", i, o.n, len(model))
			}
		}
	}
	o.clear()
	if o.n != 0 || len(o.blocks) != 0 {
		t.Fatal("clear left entries")
	}
}

func TestSplitName(t *testing.T) {
	for _, c := range [][2]string{{"", "k"}, {"l", ""}, {"l", "k"}, {string(make([]byte, 300)), "key"}} {
		lock, key := splitName(string(keyName(nil, c[0], c[1])))
		if lock != c[0] || key != c[1] {
			t.Fatalf("splitName(keyName(%q, %q)) = %q, %q", c[0], c[1], lock, key)
		}
	}
}

// BenchmarkListStep: one step of COUNT 10 among 100,000 held keys.
func BenchmarkListStep(b *testing.B) {
	clock := NewFakeClock(start)
	m := New(Config{Clock: clock})
	defer m.Close()
	for i := range 100_000 {
		m.Hold(HoldRequest{Lock: "l", Key: strconv.Itoa(i), ReqID: strconv.Itoa(i), TTL: time.Hour})
	}
	b.ReportAllocs()
	cursor := uint64(0)
	for b.Loop() {
		cursor, _ = m.List("l", cursor, 10)
	}
}

// BenchmarkOrderRemoveAdd: the order of a million keys, one key unlisted
// and listed again an op, the keys in random order: what ending a lease
// and granting one cost the order, caches cold as in a mass expiry.
func BenchmarkOrderRemoveAdd(b *testing.B) {
	const n = 1_000_000
	o := newOrder()
	reqs := make([]*request, n)
	for i := range reqs {
		name := string(keyName(nil, "batch", "job-"+strconv.Itoa(i)))
		reqs[i] = &request{text: name, nameLen: uint32(len(name))}
		o.add(reqs[i])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for range b.N {
		r := reqs[rng.IntN(n)]
		o.remove(r.name())
		o.add(r)
	}
}
