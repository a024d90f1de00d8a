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
func inProcess() opt              { return func(r *HoldRequest) { r.InProcess = true } }

func (h *harness) hold(lock, key, reqid string, opts ...opt) Ticket {
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

func isDone(tk Ticket) bool {
	select {
	case <-tk.Done():
		return true
	default:
		return false
	}
}

func mustGrant(t *testing.T, tk Ticket) Grant {
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

func mustWait(t *testing.T, tk Ticket) {
	t.Helper()
	if isDone(tk) {
		g, err := tk.Result()
		t.Fatalf("ticket done (%+v, %v), want it waiting", g, err)
	}
}

func mustFail(t *testing.T, tk Ticket, want error) {
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

func mustLostTicket(t *testing.T, tk Ticket, reason string) {
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
	if n := m.keys.len() + len(m.states) + m.leases.len() + m.reqs.len() + m.events.len() + m.waiters + m.live + m.slab.used; n != 0 {
		t.Fatalf("manager not empty: keys %d states %d leases %d reqs %d events %d waiters %d live %d requests %d",
			m.keys.len(), len(m.states), m.leases.len(), m.reqs.len(), m.events.len(), m.waiters, m.live, m.slab.used)
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
	if err := checkSlab(m); err != nil {
		return fmt.Errorf("slab: %w", err)
	}
	for _, x := range []struct {
		name string
		t    *table
		hash func(*request) uint32
	}{
		{"keys", &m.keys, func(r *request) uint32 { return m.hashName(r.name()) }},
		{"reqs", &m.reqs, func(r *request) uint32 { return m.hashName(r.reqKey()) }},
		{"leases", &m.leases, func(r *request) uint32 { return r.id.hash() }},
	} {
		if err := checkTable(m, x.t, x.hash); err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
	}
	m.keys.each(func(_, ref uint32) {
		r := m.slab.get(ref)
		if r.phase != live || m.lease(r.id) != r || m.byReqKey(r.reqKey(), r.hexReqID) != r {
			fail("key %q: holder %+v not a live, indexed lease", r.name(), r)
		}
		if (r.index < 0) != (r.at == never) {
			fail("key %q: live lease scheduled %v, deadline never %v (LOCK-13: only those held in process without MAXHOLD are not)", r.name(), r.index >= 0, r.at == never)
		}
	})
	m.reqs.each(func(_, ref uint32) {
		r := m.slab.get(ref)
		if (r.phase == live || r.phase == ended) != (m.lease(r.id) == r) {
			fail("reqid %q: phase %d, and indexed as a lease: %v", r.reqID(), r.phase, m.lease(r.id) == r)
		}
	})
	if n := m.reqs.len(); n != m.slab.used {
		fail("%d reqids indexed, %d requests in the slab", n, m.slab.used)
	}
	m.leases.each(func(_, ref uint32) {
		r := m.slab.get(ref)
		if r.phase != live && r.phase != ended {
			fail("lease %x: bad record %+v", r.id, r)
		}
		if r.phase == live && !isHolder(m, r) {
			fail("lease %x: live but not among its key's holders (LOCK-01)", r.id)
		}
		if r.index < 0 && r.at != never {
			fail("lease %x: not scheduled", r.id)
		}
		if r.rare != nil && (r.rare.waiter != nil || r.rare.prev != nil || r.rare.next != nil) {
			fail("lease %x: keeps its place in line", r.id)
		}
	})
	places, nLive := 0, 0
	m.keys.each(func(_, ref uint32) {
		if m.states[m.slab.get(ref).name()] == nil {
			nLive++
		}
	})
	for name, st := range m.states {
		if st.n == 0 && (st.live == 0 || st.limit == 1 && !st.shared) {
			fail("key %q: state kept without need", name)
		}
		if st.limit == 0 || st.limit > 1 && st.shared {
			fail("key %q: limit %d shared %v", name, st.limit, st.shared)
		}
		hs := 0
		var last uint64
		for _, e := range st.holders {
			if e.fence <= last {
				fail("key %q: holders out of order", name)
			}
			last = e.fence
			if e.ref == 0 {
				continue
			}
			hs++
			if r := m.slab.get(e.ref); r.phase != live || r.fence != e.fence || r.name() != name {
				fail("key %q: holder %d not a live lease of it", name, e.fence)
			}
		}
		if len(st.holders) > 0 && (st.holders[0].ref == 0 || st.holders[len(st.holders)-1].ref == 0) {
			fail("key %q: a tombstone at an end of its holders", name)
		}
		if hs != st.live || st.live > 0 && m.holder(name) != m.slab.get(st.holders[len(st.holders)-1].ref) || st.live == 0 && m.holder(name) != nil {
			fail("key %q: %d holders, live %d, or the newest not filed in keys", name, hs, st.live)
		}
		if st.limit > 1 && st.live > int(st.limit) || st.limit == 1 && !st.shared && st.live > 1 {
			fail("key %q: %d live leases, limit %d, shared %v (LOCK-01)", name, st.live, st.limit, st.shared)
		}
		nLive += st.live
		n, open := 0, 0
		var prev *request
		for r := st.head; r != nil; r = r.rare.next {
			n++
			if r.rare.prev != prev || r.name() != name || m.byReqKey(r.reqKey(), r.hexReqID) != r {
				return fmt.Errorf("line %q: broken at %q", name, r.reqID())
			}
			switch r.phase {
			case waiting:
				open++
				if r.rare.waiter == nil || r.rare.waiter.req != r {
					fail("line %q: waiting place %q without ticket", name, r.reqID())
				}
			case lingering:
				if r.rare.waiter != nil || r.index < 0 {
					fail("line %q: lingering place %q with ticket or unscheduled", name, r.reqID())
				}
			default:
				fail("line %q: place %q in phase %d", name, r.reqID(), r.phase)
			}
			prev = r
		}
		if prev != st.tail || n != st.n {
			fail("line %q: tail or count wrong", name)
		}
		// LOCK-06, LOCK-08: the first open request does not fit, else it
		// would have been granted in the step that made room.
		for r := st.head; r != nil; r = r.rare.next {
			if r.rare.waiter != nil {
				if m.fits(name, st, r.rare.shared) {
					fail("line %q: open request %q fits and waits (LOCK-06)", name, r.reqID())
				}
				break
			}
		}
		places += n
	}
	if places != m.waiters {
		fail("waiters %d, places %d", m.waiters, places)
	}
	if nLive != m.live {
		fail("live %d, leases counted %d", m.live, nLive)
	}
	if err := checkOrder(m); err != nil {
		fail("order: %v", err)
	}
	for i, ref := range m.events.refs {
		r := m.slab.get(ref)
		if int(r.index) != i {
			fail("event %d: index %d", i, r.index)
		}
		if i > 0 && before(r, m.slab.get(m.events.refs[(i-1)/2])) {
			fail("event %d: heap order broken", i)
		}
		if m.reqs.len() > 0 && m.byReqKey(r.reqKey(), r.hexReqID) != r {
			fail("event %d: request %q not remembered", i, r.reqID())
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
	marked := 0
	if err := checkOrderBlocks(o, func(e *orderEntry) error {
		name := e.r.name()
		if r := m.holder(name); r != nil && r != e.r {
			return fmt.Errorf("%q: listed with a request that is not its holder", name)
		}
		if !e.r.listed || m.byReqKey(e.r.reqKey(), e.r.hexReqID) != e.r {
			return fmt.Errorf("%q: listed with a request not marked listed, or forgotten", name)
		}
		listed[name] = true
		return nil
	}); err != nil {
		return err
	}
	for _, c := range m.slab.chunks {
		for i := range c {
			if c[i].listed {
				marked++
			}
		}
	}
	if marked != o.n {
		return fmt.Errorf("%d requests marked listed, %d keys listed", marked, o.n)
	}
	n, want := o.n, 0
	m.keys.each(func(_, ref uint32) {
		want++
		if !listed[m.slab.get(ref).name()] {
			n = -1
		}
	})
	for name, st := range m.states {
		if st.n == 0 {
			continue
		}
		if m.holder(name) == nil {
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
	if len(o.lasts) != len(o.blocks) {
		return fmt.Errorf("%d blocks, %d last positions", len(o.blocks), len(o.lasts))
	}
	for bi, b := range o.blocks {
		if b.n < 1 || b.n > orderBlockCap {
			return fmt.Errorf("block %d holds %d entries", bi, b.n)
		}
		if o.lasts[bi] != b.e[b.n-1].pos {
			return fmt.Errorf("block %d: last position filed as %#x, is %#x", bi, o.lasts[bi], b.e[b.n-1].pos)
		}
		for j := range b.n {
			e := &b.e[j]
			if e.r == nil || o.posOf(e.r.name()) != e.pos {
				return fmt.Errorf("block %d entry %d: wrong position or no request", bi, j)
			}
			if prev != nil && compareEntry(*prev, e.pos, e.r.name()) >= 0 {
				return fmt.Errorf("block %d entry %d: %q out of order", bi, j, e.r.name())
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

// checkTable insists that every entry of t is a request in use, filed
// under its own hash, found by a probe from that hash, and counted.
func checkTable(m *Manager, t *table, hash func(*request) uint32) error {
	n := 0
	for si := range t.shards {
		sh := &t.shards[si]
		k := 0
		for _, e := range sh.slots {
			if e == 0 {
				continue
			}
			k++
			h, ref := uint32(e>>32), uint32(e)
			if int(h>>(32-tableShardBits)) != si {
				return fmt.Errorf("hash %#x in shard %d", h, si)
			}
			r := m.slab.get(ref)
			if r.ref != ref || r.text == "" {
				return fmt.Errorf("ref %d: not a request in use", ref)
			}
			if hash(r) != h {
				return fmt.Errorf("%q under the wrong hash", r.text)
			}
			found := false
			for p := t.find(h); !found; {
				got := p.next()
				if got == 0 {
					break
				}
				found = got == ref
			}
			if !found {
				return fmt.Errorf("%q not found from its hash", r.text)
			}
		}
		if k != sh.n || (k > 0 && k*5 > len(sh.slots)*4) {
			return fmt.Errorf("shard %d: %d entries, counted %d, in %d slots", si, k, sh.n, len(sh.slots))
		}
		n += k
	}
	if n != t.n {
		return fmt.Errorf("%d entries, counted %d", n, t.n)
	}
	return nil
}

// checkSlab insists that the free list and the requests in use add up,
// and that free requests are blank.
func checkSlab(m *Manager) error {
	s := &m.slab
	free := 0
	for ref := s.free; ref != 0; ref = uint32(s.get(ref).at) {
		r := s.get(ref)
		if r.ref != ref || r.text != "" || r.rare != nil || r.index != -1 || r.listed {
			return fmt.Errorf("free request %d not blank: %+v", ref, r)
		}
		if free++; free > len(s.chunks)*slabChunk {
			return fmt.Errorf("free list loops")
		}
	}
	if total := len(s.chunks)*slabChunk - 1; total > 0 && free+s.used != total {
		return fmt.Errorf("%d free and %d in use of %d", free, s.used, total)
	}
	return nil
}

// isHolder reports whether live lease r is among its key's holders.
func isHolder(m *Manager, r *request) bool {
	found := false
	m.eachHolder(r.name(), func(h *request) { found = found || h == r })
	return found
}
