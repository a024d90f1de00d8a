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
		return 0, r.reason.lost() // LOCK-05
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
	if m.lines[r.name()] != nil {
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
		return r.reason.lost()
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

// Revoke ends the live lease of (lock, key), if any, with reason "revoked by
// admin", and grants the next open waiter. It reports whether it ended one.
func (m *Manager) Revoke(lock, key string) bool {
	now, ok := m.begin()
	if !ok {
		return false
	}
	defer m.finish(now)
	var buf [128]byte
	r := m.holder(view(keyName(buf[:0], lock, key)))
	if r == nil {
		return false
	}
	m.end(r, revokedByAdmin, now, now)
	return true
}

// end ends live lease r at instant at for reason why, and at now grants the
// key to the first open request in its line, in the same critical section
// (LOCK-06: no gap in which a newcomer can take the key).
func (m *Manager) end(r *request, why reason, at, now instant) {
	ending := r.ending()
	m.keys.del(m.hashName(r.name()), r.ref)
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
		m.trace(traceEvent{at: at, name: r.name(), reqid: r.reqID(), id: r.id, fence: r.fence, reason: why})
	}
	if ending != nil {
		delete(m.heldInProcess, ending)
		ending.finish(why.lost()) // LOCK-13: at once, not at a renewal
	}
	if m.observer != nil {
		lock, key := splitName(r.name())
		m.observer.LeaseEnded(EndEvent{Lock: lock, Key: key, Fence: r.fence, Reason: reasonText[why], Held: time.Duration(at - r.grantedAt)})
	}
	name := r.name()
	if m.lines[name] == nil {
		// Nobody waits, and r held the key (LOCK-01): it is idle now.
		m.order.remove(name)
		return
	}
	m.grantNext(name, at, now)
	m.unlistIfIdle(name)
}

// unlistIfIdle takes name out of the order once its key is neither held
// nor has a line.
func (m *Manager) unlistIfIdle(name string) {
	if m.holder(name) == nil && m.lines[name] == nil {
		m.order.remove(name)
	}
}

// grantNext grants the key name, free since freedAt, to the first open
// request in its line, passing over lingering places (LOCK-08). A request
// whose WAIT ran out before freedAt, its event not run yet (the contested
// go first in a sweep), lingers from then instead. A request whose grant
// fails (the epoch bump or the random source failed) is answered with the
// error and leaves; the next one is tried.
func (m *Manager) grantNext(name string, freedAt, now instant) {
	ln := m.lines[name]
	if ln == nil {
		return
	}
	for r := ln.head; r != nil; {
		p := r.rare
		next := p.next
		if p.waiter != nil && r.index >= 0 && r.at < freedAt {
			m.linger(r, r.at, ErrNotGranted)
		}
		if p.waiter == nil {
			r = next
			continue
		}
		m.leave(r)
		if err := m.grant(r, p.maxHold, p.ending, now); err != nil {
			p.waiter.finish(Grant{}, err)
			m.forget(r)
			r = next
			continue
		}
		p.waiter.finish(m.grantOf(r, now), nil)
		if m.lines[name] != nil {
			m.contest(r)
		}
		return
	}
}
