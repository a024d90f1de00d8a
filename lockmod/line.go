package lockmod

// Lines of waiters: joining, lingering after an answer, leaving, and
// forgetting a request once nothing refers to it.

// linger takes the open request out of r's place: its ticket is answered err
// and the place lingers, passed over, until at + linger.
func (m *Manager) linger(r *request, at instant, err error) {
	r.rare.waiter.finish(Grant{}, err)
	r.rare.waiter = nil
	r.phase = lingering
	r.at = at.add(m.lingerFor)
	m.events.schedule(r)
}

// join puts r at the tail of its key's line.
func (m *Manager) join(r *request) {
	name := r.name()
	ln := m.lines[name]
	if ln == nil {
		ln = &line{}
		m.lines[name] = ln
		if m.holder(name) == nil { // held keys are listed already
			m.order.add(r)
		}
	}
	if ln.tail == nil {
		ln.head = r
	} else {
		ln.tail.rare.next = r
		r.rare.prev = ln.tail
	}
	ln.tail = r
	ln.n++
	m.waiters++
}

// leave takes r out of its line.
func (m *Manager) leave(r *request) {
	ln := m.lines[r.name()]
	p := r.rare
	if p.prev == nil {
		ln.head = p.next
	} else {
		p.prev.rare.next = p.next
	}
	if p.next == nil {
		ln.tail = p.prev
	} else {
		p.next.rare.prev = p.prev
	}
	p.prev, p.next = nil, nil
	ln.n--
	m.waiters--
	if ln.n == 0 {
		delete(m.lines, r.name())
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
		// key is listed with its holder). Hand the entry to the head of its
		// line, or unlist the key if it has none.
		if ln := m.lines[r.name()]; ln != nil {
			m.order.add(ln.head)
		} else {
			m.order.remove(r.name())
		}
	}
	m.slab.release(r)
}
