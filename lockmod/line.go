package lockmod

// Lines of waiters: joining, lingering after an answer, leaving, and
// forgetting a request once nothing refers to it; and the keyState that
// keeps a key's line, LIMIT and live leases while it needs one.

// linger takes the open request out of r's place: its ticket is answered err
// and the place lingers, passed over, until at + linger. The caller then
// grants what r held back (grantNext), if r was in front of it.
func (m *Manager) linger(r *request, at instant, err error) {
	r.rare.waiter.finish(Grant{}, err)
	r.rare.waiter = nil
	r.phase = lingering
	r.at = at.add(m.lingerFor)
	m.events.schedule(r)
}

// stateFor is the keyState of the key named name, made if it has none: a
// key that has none is free, or held by one exclusive lease without LIMIT
// (see keyState), which becomes its first holder. limit is the LIMIT of
// the request that makes it, which the caller has checked agrees with the
// key's (LOCK-15).
func (m *Manager) stateFor(name string, limit uint32) *keyState {
	st := m.states[name]
	if st != nil {
		return st
	}
	st = &keyState{limit: max(limit, 1)}
	if h := m.holder(name); h != nil {
		st.addHolder(h)
	}
	m.states[name] = st
	return st
}

// keyLimit is the LIMIT the key named name is in use with (1: none), and
// false if it is not in use: no live lease and no place in line (LOCK-15).
func (m *Manager) keyLimit(name string, st *keyState) (uint32, bool) {
	if st != nil {
		return st.limit, true
	}
	if m.holder(name) != nil {
		return 1, true // one exclusive lease without LIMIT
	}
	return 0, false
}

// fits reports whether one more lease, shared or not, fits beside the live
// leases of the key named name (LOCK-01): fewer than its LIMIT; or, without
// LIMIT, none at all, or only shared ones for a shared request.
func (m *Manager) fits(name string, st *keyState, shared bool) bool {
	if st == nil {
		return m.holder(name) == nil
	}
	if st.limit > 1 {
		return st.live < int(st.limit)
	}
	return st.live == 0 || shared && st.shared
}

// openAhead reports whether an open request waits in st's line before r
// (r nil: anywhere in it). Lingering places do not count: they are passed
// over (LOCK-08).
func openAhead(st *keyState, r *request) bool {
	if st == nil || st.n == 0 {
		return false
	}
	for w := st.head; w != nil && w != r; w = w.rare.next {
		if w.rare.waiter != nil {
			return true
		}
	}
	return false
}

// join puts r at the tail of its key's line. A line that starts files the
// key's live leases as contested (LOCK-06); a lease granted while it lasts
// is filed at its grant.
func (m *Manager) join(r *request, limit uint32) {
	name := r.name()
	st := m.stateFor(name, limit)
	if st.n == 0 {
		if st.live == 0 { // held keys are listed already
			m.order.add(r)
		}
		for _, e := range st.holders {
			if e.ref != 0 {
				m.contest(m.slab.get(e.ref))
			}
		}
	}
	if st.tail == nil {
		st.head = r
	} else {
		st.tail.rare.next = r
		r.rare.prev = st.tail
	}
	st.tail = r
	st.n++
	m.waiters++
	if m.counts != nil {
		lock, _ := splitName(name)
		m.counts.LineChanged(lock, 1)
	}
}

// leave takes r out of its line. The caller settles the key once it is
// done with it.
func (m *Manager) leave(r *request) {
	st := m.states[r.name()]
	p := r.rare
	if p.prev == nil {
		st.head = p.next
	} else {
		p.prev.rare.next = p.next
	}
	if p.next == nil {
		st.tail = p.prev
	} else {
		p.next.rare.prev = p.prev
	}
	p.prev, p.next = nil, nil
	st.n--
	m.waiters--
	if m.counts != nil {
		lock, _ := splitName(r.name())
		m.counts.LineChanged(lock, -1)
	}
}

// settle drops the keyState of the key named name once it needs none (no
// place in line, and no live lease but one exclusive one without LIMIT),
// and takes the key out of the order once it is neither held nor has a
// line.
func (m *Manager) settle(name string) {
	st := m.states[name]
	if st != nil && st.n == 0 && (st.live == 0 || st.limit == 1 && !st.shared) {
		delete(m.states, name)
		st = nil
	}
	if st == nil && m.holder(name) == nil {
		m.order.remove(name)
	}
}

// forget drops every trace of r: the reqid may be used afresh, and r's
// place in the slab is reused, so r must be out of its line and nothing may
// touch it after.
func (m *Manager) forget(r *request) {
	m.events.unschedule(r)
	m.reqs.del(m.hashName(r.reqKey()), r.ref)
	if r.phase == ended || r.phase == live {
		m.leases.del(r.id.hash(), r.ref)
	}
	if r.listed {
		// The order lists r's key with r, so the key is not held (a held
		// key is listed with its newest lease). Hand the entry to the head
		// of its line, or unlist the key if it has none.
		if st := m.states[r.name()]; st != nil && st.n > 0 {
			m.order.add(st.head)
		} else {
			m.order.remove(r.name())
		}
	}
	m.slab.release(r)
}
