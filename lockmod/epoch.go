package lockmod

import "errors"

// A cluster's node grants only while it leads, and then only in an epoch
// the replicated log has made durable (SPEC §10, LOCK-14): Pause and
// Resume are how its lock module follows leadership. A failover is a
// restart: the new epoch starts with no lease and no waiter.

// ErrNoEpoch answers every waiter when Pause is called: the node stopped
// leading, and what it held is gone with its epoch.
var ErrNoEpoch = errors.New("no epoch: this node does not grant now")

// Pause drops every lease, place in line and reqid at once, answering the
// waiters ErrNoEpoch, and refuses every call until Resume, as after Close
// but with ErrPaused (an ErrClosed too) where a call returns an error.
// Stats keeps its counters.
func (m *Manager) Pause() {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return
	}
	m.paused = true
	m.dropAll(ErrNoEpoch)
}

// Resume starts epoch, which the caller has made durable, with no lease
// and no waiter: its first fence is epoch<<32 + 1 (SPEC §2). It panics if
// epoch does not fit in a fence, or is before the current one, or equal to
// it once a fence was granted in it, any of which would break LOCK-02.
func (m *Manager) Resume(epoch uint64) {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return
	}
	if epoch >= 1<<32 || epoch < m.epoch || (epoch == m.epoch && m.n != 0) {
		panic("lockmod: Resume with an epoch not after the current one")
	}
	m.dropAll(ErrNoEpoch)
	m.epoch, m.n, m.paused = epoch, 0, false
	m.emitEpoch(epoch)
}

// Paused reports whether the Manager refuses calls until Resume.
func (m *Manager) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// dropAll answers every open waiter err, stops the timer and forgets all
// leases, lines and reqids. The caller holds m.mu.
func (m *Manager) dropAll(err error) {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	for _, st := range m.states {
		for r := st.head; r != nil; r = r.rare.next {
			if w := r.rare.waiter; w != nil {
				w.finish(Grant{}, err)
			}
		}
	}
	if errors.Is(err, ErrNoEpoch) {
		m.dropWatchers(nil) // the node vouches for no lease now: free (SPEC §3)
	} else {
		m.dropWatchers(err)
	}
	for e := range m.heldInProcess {
		e.finish(err) // the lease ends with the epoch, or the store (LOCK-13)
	}
	clear(m.heldInProcess)
	m.keys.clear()
	clear(m.states)
	m.order.clear()
	m.leases.clear()
	m.reqs.clear()
	m.events.clear()
	m.contested = nil
	m.slab = slab{}
	m.waiters = 0
	m.live = 0
}
