package lockmod

// Holding: a request is granted at once, resumed (a retried reqid), or
// joins the line of its key; a grant takes a fresh lease id and fence.

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"time"
)

// HoldRequest asks for (Lock, Key) on behalf of request ReqID. Hold copies
// what it keeps, so the strings may alias buffers the caller reuses once
// Hold has returned.
type HoldRequest struct {
	Lock, Key, ReqID string
	TTL              time.Duration // <= 0: DefaultTTL
	Wait             time.Duration
	HasWait          bool          // false: wait without limit; true with Wait <= 0: try once, never join the line
	MaxHold          time.Duration // <= 0: no cap

	// InProcess asks for a lease held in the store's own process (LOCK-13):
	// it has no ttl deadline and is never renewed; it lasts until it is
	// released, reaches MAXHOLD, is revoked or the Manager closes, and
	// Grant.Ending tells its holder the moment it ends. It waits in the same
	// line and takes its fence from the same counter as any other request;
	// TTL only sets how long its reqid is remembered after it ends.
	InProcess bool

	// Limit n > 1 lets the key admit up to n live leases at once (a
	// semaphore); 0 and 1 mean none. Every request for a key in use must
	// agree on it (LOCK-15): Hold refuses one that does not with a
	// *LimitError.
	Limit int
	// Shared asks for a lease that shares a key held without LIMIT with
	// other shared leases (a reader). Beside a Limit it is ignored (resp
	// refuses the two together).
	Shared bool
	// Owner is shown of the lease by Info, List and Holders, never a
	// credential (LOCK-16). A retry of the reqid keeps the first one's.
	Owner string
}

// Grant is a lease as its holder learns it.
type Grant struct {
	id      leaseID
	Fence   uint64        // epoch<<32 + n (LOCK-02)
	TTLLeft time.Duration // deadline - now; -1 for a lease held in process: it has no ttl deadline
	// Ending, for a lease held in process (HoldRequest.InProcess), says
	// when and why it ends; nil for any other.
	Ending *Ending
}

// LeaseID is the lease id: 32 lowercase hex characters (LOCK-04).
func (g Grant) LeaseID() string {
	var b [2 * len(leaseID{})]byte
	return string(g.AppendLeaseID(b[:0]))
}

// AppendLeaseID appends LeaseID to b, so that a reply can carry the id
// without a string made for it.
func (g Grant) AppendLeaseID(b []byte) []byte { return hex.AppendEncode(b, g.id[:]) }

// Hold asks for (lock, key). It never waits: the ticket it returns is done
// already, or waits in the line (LOCK-08). It is granted at once when the
// lease fits beside the key's live ones (LOCK-01) and no open request waits
// in line ahead of it.
func (m *Manager) Hold(req HoldRequest) Ticket {
	now, behind, err := m.beginFocused()
	if err != nil {
		return m.answered(Grant{}, err)
	}
	ttl := req.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	limit := uint32(1)
	if req.Limit > 1 {
		limit = uint32(min(req.Limit, math.MaxUint32))
		req.Shared = false // a semaphore's permits are all alike
	}
	// The key's name, the owner and the reqid as kept, side by side in one
	// buffer: a new request copies them at once into its text.
	var buf [192]byte
	text := keyName(buf[:0], req.Lock, req.Key)
	nameLen := len(text)
	text = binary.AppendUvarint(text, uint64(len(req.Owner)))
	text = append(text, req.Owner...)
	reqStart := len(text)
	text, hexForm := appendReqKey(text, req.ReqID)
	name := view(text[:nameLen])
	reqKey := view(text[reqStart:])
	if behind {
		if err := m.catchUp(now, name, m.byReqKey(reqKey, hexForm)); err != nil {
			return m.answered(Grant{}, err)
		}
	}
	defer m.finish(now)

	// LOCK-03: one grant per reqid.
	r := m.byReqKey(reqKey, hexForm)
	if r != nil && r.name() != name {
		return m.answered(Grant{}, ErrReqIDInUse)
	}
	// LOCK-15: a request that disagrees on LIMIT changes nothing, a retry
	// included.
	st := m.states[name]
	if in, ok := m.keyLimit(name, st); ok && in != limit {
		return m.answered(Grant{}, &LimitError{Limit: int(in)})
	}
	if r != nil {
		switch r.phase {
		case live:
			return m.answered(m.grantOf(r, now), nil)
		case ended:
			return m.answered(Grant{}, m.lostAnswer(r, now))
		default:
			return m.resume(r, st, req, ttl, now)
		}
	}

	// A lease that fits now is granted unless an open request waits ahead
	// of it (LOCK-08); lingering places are passed over. Only a shared
	// request on a key held shared can fit with one waiting (a writer).
	if m.fits(name, st, req.Shared) && !(req.Shared && openAhead(st, nil)) {
		r := m.newRequest(text, nameLen, hexForm, ttl)
		if limit > 1 || req.Shared {
			st = m.stateFor(r.name(), limit) // its own copy of the name: the map keeps it
		}
		if err := m.grant(r, req.Shared, req.MaxHold, newEnding(req), now); err != nil {
			own := r.name() // settle keeps what it is given (the order may)
			m.slab.release(r)
			m.settle(own)
			return m.answered(Grant{}, err)
		}
		m.reqs.put(m.hashName(r.reqKey()), r.ref)
		return m.answered(m.grantOf(r, now), nil)
	}
	if req.HasWait && req.Wait <= 0 {
		return m.answered(Grant{}, ErrNotGranted) // try once: never joins the line
	}
	r = m.newRequest(text, nameLen, hexForm, ttl)
	w := &waiter{done: make(chan struct{}), m: m, req: r}
	r.rare = &rare{waiter: w, maxHold: req.MaxHold, joinedAt: now, ending: newEnding(req), shared: req.Shared}
	r.phase = waiting
	m.join(r, limit)
	m.reqs.put(m.hashName(r.reqKey()), r.ref)
	if req.HasWait {
		r.at = now.add(req.Wait)
		m.events.schedule(r)
	}
	return Ticket{done: w.done, w: w}
}

// newRequest makes a request whose text (name, then reqid as kept) is
// copied from text.
func (m *Manager) newRequest(text []byte, nameLen int, hexForm bool, ttl time.Duration) *request {
	if uint64(nameLen) > math.MaxUint32 {
		panic("lockmod: lock and key longer than 4 GB")
	}
	r := m.slab.alloc()
	r.text = string(text)
	r.nameLen = uint32(nameLen)
	r.hexReqID = hexForm
	r.ttl = ttl
	return r
}

// resume answers a retry of a request that has a place in line, waiting or
// lingering: the retry takes the place over (LOCK-03, LOCK-08), with its
// own TTL, WAIT, MAXHOLD and SHARED, and the first request's owner.
func (m *Manager) resume(r *request, st *keyState, req HoldRequest, ttl time.Duration, now instant) Ticket {
	p := r.rare
	if p.waiter != nil {
		p.waiter.finish(Grant{}, ErrSuperseded)
		p.waiter = nil
	}
	r.ttl, p.maxHold, p.ending, p.shared = ttl, req.MaxHold, newEnding(req), req.Shared
	name := r.name()
	if m.fits(name, st, p.shared) && !openAhead(st, r) {
		// First among the open requests, and room for it: grant now,
		// re-checked here.
		m.leave(r)
		if err := m.grant(r, p.shared, p.maxHold, p.ending, now); err != nil {
			m.forget(r)
			m.settle(name)
			return m.answered(Grant{}, err)
		}
		m.settle(name)
		return m.answered(m.grantOf(r, now), nil)
	}
	if req.HasWait && req.Wait <= 0 {
		// Try once: not granted, and the place lingers from now as if a
		// WAIT had just run out; what it held back goes ahead.
		r.phase = lingering
		r.at = now.add(m.lingerFor)
		m.events.schedule(r)
		m.grantNext(name, now, now)
		m.settle(name)
		return m.answered(Grant{}, ErrNotGranted)
	}
	w := &waiter{done: make(chan struct{}), m: m, req: r}
	p.waiter = w
	r.phase = waiting
	if req.HasWait {
		r.at = now.add(req.Wait)
		m.events.schedule(r)
	} else {
		m.events.unschedule(r)
	}
	return Ticket{done: w.done, w: w}
}

// answered returns a ticket that is already done.
func (m *Manager) answered(g Grant, err error) Ticket {
	return Ticket{done: m.doneCh, grant: g, err: err}
}

// grantOf is the Grant of live lease r as seen at now.
func (m *Manager) grantOf(r *request, now instant) Grant {
	if e := r.ending(); e != nil {
		return Grant{id: r.id, Fence: r.fence, TTLLeft: -1, Ending: e}
	}
	return Grant{id: r.id, Fence: r.fence, TTLLeft: time.Duration(r.at - now)}
}

// deadline is now + ttl, capped by r's MAXHOLD deadline (LOCK-06, LOCK-07).
func (m *Manager) deadline(r *request, now instant, ttl time.Duration) instant {
	d := now.add(ttl)
	if md := r.maxDeadline(); md != 0 && d > md {
		d = md
	}
	return d
}

// grant makes r a live lease of its key for r.ttl, with a fresh id and
// fence. The caller has checked, in this same critical section, that it
// fits beside the key's live leases and that no open request for the key
// is ahead of it (etcd#11456), and has made the key a keyState if r is
// shared or held with LIMIT. r is out of the line. ending is not nil for a
// lease held in process (LOCK-13): its only deadline is its MAXHOLD's, if
// it has one.
func (m *Manager) grant(r *request, shared bool, maxHold time.Duration, ending *Ending, now instant) error {
	id, err := m.newLeaseID()
	if err != nil {
		return err
	}
	fence, err := m.nextFence()
	if err != nil {
		return err
	}
	r.id, r.fence = id, fence
	r.grantedAt = now
	var waited time.Duration
	if r.rare != nil { // it waited in line
		waited = time.Duration(now - r.rare.joinedAt)
	}
	r.rare = nil
	if maxHold > 0 || ending != nil {
		r.rare = &rare{ending: ending}
		if maxHold > 0 {
			r.rare.maxDeadline = now.add(maxHold)
		}
	}
	switch {
	case ending == nil:
		r.at = m.deadline(r, now, r.ttl)
	case maxHold > 0:
		r.at = r.rare.maxDeadline
	default:
		r.at = never
	}
	r.phase = live
	m.leases.put(id.hash(), r.ref)
	// r is the key's newest lease now: the keys table files it in place of
	// the one before, and the order lists the key with it.
	h := m.hashName(r.name())
	if old := m.holder(r.name()); old != nil {
		m.keys.del(h, old.ref)
	}
	m.keys.put(h, r.ref)
	m.touch(r.name()) // LOCK-17
	if st := m.states[r.name()]; st != nil {
		st.shared = shared // LOCK-01: the caller saw it fits
		st.addHolder(r)
		if st.n > 0 {
			m.contest(r)
		}
	}
	m.live++
	m.order.add(r)
	if ending != nil {
		m.heldInProcess[ending] = struct{}{}
	}
	if r.at != never {
		m.events.schedule(r)
	} else {
		m.events.unschedule(r) // its WAIT's event, if it waited: it has none now
	}
	m.stats.GrantsTotal++
	if m.trace != nil {
		m.trace(traceEvent{grant: true, at: now, name: r.name(), reqid: r.reqID(), id: id, fence: fence})
	}
	if len(m.sinks) != 0 {
		m.emitLease(EventGranted, r, 0, now)
	}
	if m.observer != nil {
		lock, key := splitName(r.name())
		m.observer.LeaseGranted(GrantEvent{Lock: lock, Key: key, Fence: fence, Waited: waited})
	}
	return nil
}

// nextFence returns epoch<<32 + n for the next n, bumping the epoch durably
// first when n would reach 2^32 (LOCK-02, SPEC §2).
func (m *Manager) nextFence() (uint64, error) {
	if m.n == math.MaxUint32 {
		if m.bumper == nil {
			return 0, ErrNoEpochBumper
		}
		epoch, err := m.bumper.BumpEpoch()
		if err != nil {
			return 0, fmt.Errorf("bump epoch: %w", err)
		}
		if epoch <= m.epoch || epoch >= 1<<32 {
			return 0, fmt.Errorf("bump epoch: new epoch %d does not follow %d", epoch, m.epoch)
		}
		m.epoch, m.n = epoch, 0
		m.emitEpoch(epoch)
	}
	m.n++
	return m.epoch<<32 | uint64(m.n), nil
}

// newLeaseID draws 128 bits from the random source (LOCK-04). An id whose
// first 64 bits clash with a remembered one's is drawn again (see
// leaseID.prefix); a source that keeps clashing is broken.
func (m *Manager) newLeaseID() (leaseID, error) {
	for range 4 {
		// Read into the Manager's buffer: a local one would escape through
		// the io.Reader and cost an allocation per grant.
		if _, err := io.ReadFull(m.rand, m.idBuf[:]); err != nil {
			return leaseID{}, fmt.Errorf("lease id: %w", err)
		}
		if id := m.idBuf; !m.prefixTaken(id) {
			return id, nil
		}
	}
	return leaseID{}, fmt.Errorf("lease id: random source repeats itself")
}

// parseLeaseID accepts exactly 32 lowercase hex characters: one spelling per
// id. Anything else is no id at all (LOCK-04: "unknown lease").
func parseLeaseID(s string) (leaseID, bool) {
	var id leaseID
	if len(s) != 2*len(id) || !decodeHex(id[:], s) {
		return leaseID{}, false
	}
	return id, true
}
