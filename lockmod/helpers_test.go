package lockmod

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	sec = time.Second
	ms  = time.Millisecond
)

type harness struct {
	t     *testing.T
	clock *FakeClock
	m     *Manager
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	clock := NewFakeClock(start)
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	m := New(cfg)
	t.Cleanup(m.Close)
	return &harness{t: t, clock: clock, m: m}
}

// opt edits a HoldRequest.
type opt func(*HoldRequest)

func ttl(d time.Duration) opt     { return func(r *HoldRequest) { r.TTL = d } }
func wait(d time.Duration) opt    { return func(r *HoldRequest) { r.Wait, r.HasWait = d, true } }
func maxHold(d time.Duration) opt { return func(r *HoldRequest) { r.MaxHold = d } }

func (h *harness) hold(lock, key, reqid string, opts ...opt) *Ticket {
	req := HoldRequest{Lock: lock, Key: key, ReqID: reqid, TTL: 10 * sec}
	for _, o := range opts {
		o(&req)
	}
	return h.m.Hold(req)
}

// granted holds and insists on a grant at once.
func (h *harness) granted(lock, key, reqid string, opts ...opt) Grant {
	h.t.Helper()
	return mustGrant(h.t, h.hold(lock, key, reqid, opts...))
}

func (h *harness) advance(d time.Duration) { h.clock.Advance(d) }

func isDone(tk *Ticket) bool {
	select {
	case <-tk.Done():
		return true
	default:
		return false
	}
}

func mustGrant(t *testing.T, tk *Ticket) Grant {
	t.Helper()
	if !isDone(tk) {
		t.Fatalf("ticket still waits, want a grant")
	}
	g, err := tk.Result()
	if err != nil {
		t.Fatalf("want a grant, got error %v", err)
	}
	return g
}

func mustWait(t *testing.T, tk *Ticket) {
	t.Helper()
	if isDone(tk) {
		g, err := tk.Result()
		t.Fatalf("ticket done (%+v, %v), want it waiting", g, err)
	}
}

func mustFail(t *testing.T, tk *Ticket, want error) {
	t.Helper()
	if !isDone(tk) {
		t.Fatalf("ticket still waits, want %v", want)
	}
	if _, err := tk.Result(); !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

func mustLost(t *testing.T, err error, reason string) {
	t.Helper()
	var lost *LostError
	if !errors.As(err, &lost) || !errors.Is(err, ErrLost) {
		t.Fatalf("got %v, want LOST %s", err, reason)
	}
	if lost.Reason != reason || err.Error() != reason {
		t.Fatalf("got LOST %q, want LOST %q", lost.Reason, reason)
	}
}

func mustLostTicket(t *testing.T, tk *Ticket, reason string) {
	t.Helper()
	if !isDone(tk) {
		t.Fatalf("ticket still waits, want LOST %s", reason)
	}
	_, err := tk.Result()
	mustLost(t, err, reason)
}

func (h *harness) info(lock, key string) KeyInfo {
	h.t.Helper()
	info, ok := h.m.Info(lock, key)
	if !ok {
		h.t.Fatalf("Info(%q, %q): free with nobody waiting", lock, key)
	}
	return info
}

// checkEmpty insists that the Manager remembers nothing at all.
func checkEmpty(t *testing.T, m *Manager) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.keys.len() + len(m.lines) + len(m.leases) + m.reqs.len() + len(m.events) + m.waiters; n != 0 {
		t.Fatalf("manager not empty: keys %d lines %d leases %d reqs %d events %d waiters %d",
			m.keys.len(), len(m.lines), len(m.leases), m.reqs.len(), len(m.events), m.waiters)
	}
}

// checkInvariants walks the Manager's structures and insists they agree.
func checkInvariants(m *Manager) (err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
	}
	if err := checkIndex(m.keys); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if err := checkIndex(m.reqs); err != nil {
		return fmt.Errorf("reqs: %w", err)
	}
	m.keys.each(func(r *request) {
		if r.phase != live || m.lease(r.id) != r || m.reqs.get(r.reqid) != r {
			fail("key %q: holder %+v not a live, indexed lease", r.name, r)
		}
		if r.index < 0 {
			fail("key %q: live lease not scheduled", r.name)
		}
	})
	for k, r := range m.leases {
		if r.id.key() != k || (r.phase != live && r.phase != ended) {
			fail("lease %x: bad record %+v", r.id, r)
		}
		if r.phase == live && m.keys.get(r.name) != r {
			fail("lease %x: live but not its key's holder (LOCK-01)", r.id)
		}
		if r.index < 0 {
			fail("lease %x: not scheduled", r.id)
		}
		if r.rare != nil && (r.rare.ticket != nil || r.rare.prev != nil || r.rare.next != nil) {
			fail("lease %x: keeps its place in line", r.id)
		}
	}
	places := 0
	for name, ln := range m.lines {
		if ln.n == 0 {
			fail("line %q: empty but kept", name)
		}
		n, open := 0, 0
		var prev *request
		for r := ln.head; r != nil; r = r.rare.next {
			n++
			if r.rare.prev != prev || r.name != name || m.reqs.get(r.reqid) != r {
				return fmt.Errorf("line %q: broken at %q", name, r.reqid)
			}
			switch r.phase {
			case waiting:
				open++
				if r.rare.ticket == nil {
					fail("line %q: waiting place %q without ticket", name, r.reqid)
				}
			case lingering:
				if r.rare.ticket != nil || r.index < 0 {
					fail("line %q: lingering place %q with ticket or unscheduled", name, r.reqid)
				}
			default:
				fail("line %q: place %q in phase %d", name, r.reqid, r.phase)
			}
			prev = r
		}
		if prev != ln.tail || n != ln.n {
			fail("line %q: tail or count wrong", name)
		}
		if open > 0 && m.keys.get(name) == nil {
			fail("line %q: free key with %d open waiters (LOCK-06)", name, open)
		}
		places += n
	}
	if places != m.waiters {
		fail("waiters %d, places %d", m.waiters, places)
	}
	if err := checkOrder(m); err != nil {
		fail("order: %v", err)
	}
	for i, r := range m.events {
		if int(r.index) != i {
			fail("event %d: index %d", i, r.index)
		}
		if i > 0 && m.events.Less(i, (i-1)/2) {
			fail("event %d: heap order broken", i)
		}
	}
	return err
}

// checkOrder insists that the order lists exactly the keys that are held
// or have a line, each once, sorted, in blocks neither empty nor over
// full, with the holder as the request of a held key.
func checkOrder(m *Manager) error {
	o := m.order
	listed := map[string]bool{}
	if err := checkOrderBlocks(o, func(e *orderEntry) error {
		if r := m.keys.get(e.r.name); r != nil && r != e.r {
			return fmt.Errorf("%q: listed with a request that is not its holder", e.r.name)
		}
		listed[e.r.name] = true
		return nil
	}); err != nil {
		return err
	}
	n, want := o.n, 0
	m.keys.each(func(r *request) {
		want++
		if !listed[r.name] {
			n = -1
		}
	})
	for name := range m.lines {
		if m.keys.get(name) == nil {
			want++
		}
		if !listed[name] {
			n = -1
		}
	}
	if n != want {
		return fmt.Errorf("%d keys listed, %d held or with a line", o.n, want)
	}
	return nil
}

// checkOrderBlocks insists that the order's entries are sorted, each at
// its own position, in blocks neither empty nor over full, and counted
// right; it calls each with every entry.
func checkOrderBlocks(o *order, each func(*orderEntry) error) error {
	var prev *orderEntry
	n := 0
	for bi, b := range o.blocks {
		if b.n < 1 || b.n > orderBlockCap {
			return fmt.Errorf("block %d holds %d entries", bi, b.n)
		}
		for j := range b.n {
			e := &b.e[j]
			if e.r == nil || o.posOf(e.r.name) != e.pos {
				return fmt.Errorf("block %d entry %d: wrong position or no request", bi, j)
			}
			if prev != nil && compareEntry(*prev, e.pos, e.r.name) >= 0 {
				return fmt.Errorf("block %d entry %d: %q out of order", bi, j, e.r.name)
			}
			if err := each(e); err != nil {
				return err
			}
			prev = e
			n++
		}
		for j := b.n; j < orderBlockCap; j++ {
			if b.e[j] != (orderEntry{}) {
				return fmt.Errorf("block %d keeps a stale entry at %d", bi, j)
			}
		}
	}
	if n != o.n {
		return fmt.Errorf("%d entries, counted %d", n, o.n)
	}
	return nil
}

// checkIndex insists that every entry is found under its own string.
func checkIndex(x *index) error {
	for h, r := range x.byHash {
		if x.hash(x.keyOf(r)) != h {
			return fmt.Errorf("%q under the wrong hash", x.keyOf(r))
		}
	}
	for s, r := range x.spill {
		if x.keyOf(r) != s || x.byHash[x.hash(s)] == nil {
			return fmt.Errorf("spilled %q: wrong key, or its hash slot is empty", s)
		}
	}
	var err error
	x.each(func(r *request) {
		if x.get(x.keyOf(r)) != r && err == nil {
			err = fmt.Errorf("%q not found", x.keyOf(r))
		}
	})
	return err
}
