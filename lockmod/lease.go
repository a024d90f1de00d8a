package lockmod

// A lease's life after its grant: renewed, released, revoked, or ended by its
// deadline; the next open waiter is granted in the same step.

import (
	"time"
)

// Renew moves a live lease's deadline to now + ttl (ttl <= 0: the ttl it was
// granted with), never past its MAXHOLD deadline (LOCK-07), and returns the
// time to the new deadline. An ended or unknown lease is a *LostError and
// stays ended (LOCK-05).
func (m *Manager) Renew(leaseID string, ttl time.Duration) (time.Duration, error) {
	id, ok := parseLeaseID(leaseID)
	if !ok {
		return 0, unknownLease() // LOCK-04: not an id at all
	}
	now, err := m.beginLease(id) // re-check: a lease past its deadline has ended, timer or not
	if err != nil {
		return 0, err
	}
	defer m.finish(now)
	r := m.lease(id)
	if r == nil {
		return 0, unknownLease()
	}
	if r.phase != live {
		return 0, m.lostAnswer(r, now) // LOCK-05
	}
	if r.ending() != nil {
		return 0, ErrHeldInProcess // LOCK-13: a deadline would be a ttl it never had
	}
	if ttl <= 0 {
		ttl = r.ttl
	}
	if ttl > r.span() {
		if r.rare == nil {
			r.rare = &rare{}
		}
		r.rare.span = ttl
	}
	r.at = m.deadline(r, now, ttl)
	m.events.schedule(r)
	if st := m.states[r.name()]; st != nil && st.n > 0 {
		m.contest(r)
	}
	m.stats.RenewalsTotal++
	return time.Duration(r.at - now), nil
}

// Release ends a live lease now and grants the next open waiter in the same
// step. It returns nil for a live lease, and again for a lease that a Release
// already ended (a retried RELEASE); otherwise a *LostError.
func (m *Manager) Release(leaseID string) error {
	id, ok := parseLeaseID(leaseID)
	if !ok {
		return unknownLease()
	}
	now, err := m.beginLease(id)
	if err != nil {
		return err
	}
	defer m.finish(now)
	r := m.lease(id)
	switch {
	case r == nil:
		return unknownLease()
	case r.phase == live:
		m.end(r, released, now, now)
		return nil
	case r.reason == released:
		return nil
	default:
		return m.lostAnswer(r, now)
	}
}

// beginLease is begin for Renew and Release, which read lease id's
// request and its key only (see catchUp).
func (m *Manager) beginLease(id leaseID) (now instant, err error) {
	now, behind, err := m.beginFocused()
	if err != nil || !behind {
		return now, err
	}
	name := ""
	r := m.lease(id)
	if r != nil {
		name = r.name()
	}
	return now, m.catchUp(now, name, r)
}

// Revoke ends every live lease of (lock, key), with reason "revoked by
// admin", and grants the next in line. It reports whether it ended one.
func (m *Manager) Revoke(lock, key string) bool { return m.RevokeFence(lock, key, 0) > 0 }

// RevokeFence ends the live leases of (lock, key) with reason "revoked by
// admin" — with fence > 0, only the one with that fence — and grants the
// next in line as each ends. It returns how many it ended.
func (m *Manager) RevokeFence(lock, key string, fence uint64) int {
	now, ok := m.begin()
	if !ok {
		return 0
	}
	defer m.finish(now)
	var buf [128]byte
	name := view(keyName(buf[:0], lock, key))
	// The leases live now, not those granted as these end.
	var ended []*request
	m.eachHolder(name, func(r *request) {
		if fence == 0 || r.fence == fence {
			ended = append(ended, r)
		}
	})
	for _, r := range ended {
		m.end(r, revokedByAdmin, now, now)
	}
	return len(ended)
}

// eachHolder calls f with each live lease of the key named name, oldest
// first. f must not change the key.
func (m *Manager) eachHolder(name string, f func(r *request)) {
	st := m.states[name]
	if st == nil {
		if r := m.holder(name); r != nil {
			f(r)
		}
		return
	}
	for _, e := range st.holders {
		if e.ref != 0 {
			f(m.slab.get(e.ref))
		}
	}
}

// end ends live lease r at instant at for reason why, and at now grants
// the key to as many of the first open requests in its line as now fit, in
// the same critical section (LOCK-06: no gap in which a newcomer can take
// the key).
func (m *Manager) end(r *request, why reason, at, now instant) {
	ending := r.ending()
	name := r.name()
	h := m.hashName(name)
	st := m.states[name]
	if st != nil {
		st.dropHolder(r)
	}
	m.live--
	if m.keys.del(h, r.ref) && st != nil && st.live > 0 {
		// r was the newest; the newest left takes its place, in the keys
		// table and in the order.
		newest := m.slab.get(st.holders[len(st.holders)-1].ref)
		m.keys.put(h, newest.ref)
		m.order.add(newest)
	}
	m.touch(name) // LOCK-17
	r.phase = ended
	r.reason = why
	r.at = at.add(r.span()) // LOCK-03, LOCK-05: remembered for its ttl after it ends
	r.rare = nil            // MAXHOLD and span are spent
	m.events.schedule(r)
	switch why {
	case expired:
		m.stats.ExpiredTotal++
	case released:
		m.stats.ReleasedTotal++
	case revokedMaxHold:
		m.stats.RevokedTotal++
		m.stats.RevokedMaxHoldTotal++
	default:
		m.stats.RevokedTotal++
		m.stats.RevokedAdminTotal++
	}
	if m.trace != nil {
		m.trace(traceEvent{at: at, name: name, reqid: r.reqID(), id: r.id, fence: r.fence, reason: why})
	}
	if ending != nil {
		delete(m.heldInProcess, ending)
		ending.finish(why.lost()) // LOCK-13: at once, not at a renewal
	}
	if len(m.sinks) != 0 {
		m.emitLease(endKind(why), r, why, at)
	}
	if m.observer != nil {
		lock, key := splitName(name)
		m.observer.LeaseEnded(EndEvent{Lock: lock, Key: key, Fence: r.fence, Reason: reasonText[why], Held: time.Duration(at - r.grantedAt)})
	}
	if st != nil {
		m.grantNext(name, at, now)
	}
	m.settle(name)
}

// grantNext grants the key name, with room since freedAt, to as many of
// the first open requests in its line as now fit, in one step, passing over
// lingering places (LOCK-08): consecutive shared requests together, or
// permits while fewer than its LIMIT live. It stops at the first open
// request that does not fit, so that none overtakes it: a writer holds back
// the readers behind it. A request whose WAIT ran out before freedAt, its
// event not run yet (the contested go first in a sweep), lingers from then
// instead. A request whose grant fails (the epoch bump or the random source
// failed) is answered with the error and leaves; the next one is tried. The
// caller settles the key.
func (m *Manager) grantNext(name string, freedAt, now instant) {
	st := m.states[name]
	if st == nil {
		return
	}
	for r := st.head; r != nil; {
		p := r.rare
		next := p.next
		if p.waiter != nil && r.index >= 0 && r.at < freedAt {
			m.linger(r, r.at, ErrNotGranted)
		}
		if p.waiter == nil {
			r = next
			continue
		}
		if !m.fits(name, st, p.shared) {
			return
		}
		m.leave(r)
		if err := m.grant(r, p.shared, p.maxHold, p.ending, now); err != nil {
			p.waiter.finish(Grant{}, err)
			m.forget(r)
			r = next
			continue
		}
		p.waiter.finish(m.grantOf(r, now), nil)
		r = next
	}
}
