package lockmod

// Ticket is the answer to one Hold. It is done at once (granted, not granted
// with WAIT 0, an error) or when the request leaves the line: granted, its WAIT
// ran out, a retry superseded it, or the Manager closed.
//
// A Ticket is a small value: one answered at once costs no allocation, and
// one that waits shares its state with the Manager through a *waiter.
type Ticket struct {
	done  <-chan struct{}
	grant Grant
	err   error
	w     *waiter // nil for a ticket done at birth
}

// waiter is a request waiting in line, as its Ticket and the Manager share it.
type waiter struct {
	done  chan struct{}
	grant Grant
	err   error

	m   *Manager
	req *request // while it waits in line; guarded by m.mu
}

// Done is closed when Result is ready.
func (t Ticket) Done() <-chan struct{} { return t.done }

// Result blocks until Done is closed, then returns the grant or why there is
// none: ErrNotGranted, ErrSuperseded, ErrReqIDInUse, ErrClosed, ErrAbandoned,
// a *LostError (a retry of a request whose lease has ended), or the error of a
// failed epoch bump or random source.
func (t Ticket) Result() (Grant, error) {
	<-t.done
	if t.w != nil {
		return t.w.grant, t.w.err
	}
	return t.grant, t.err
}

// Abandon says that the client went away or gave up. If the request still
// waits it leaves the line, and its place lingers for Config.Linger under its
// reqid; it is never granted. If it was already granted, nothing happens: a
// grant whose reply cannot be delivered stays a live lease (SPEC §3), to be
// picked up by a retry or to run out at its deadline.
func (t Ticket) Abandon() {
	w := t.w
	if w == nil {
		return
	}
	m := w.m
	now, ok := m.begin()
	if !ok {
		return
	}
	defer m.finish(now)
	r := w.req
	if r == nil || r.phase != waiting || r.rare.waiter != w {
		return
	}
	m.linger(r, now, ErrAbandoned)
	m.grantNext(r.name(), now, now) // what it held back goes ahead (LOCK-08)
	m.settle(r.name())
}

// finish answers the ticket. Called under m.mu, once.
func (w *waiter) finish(g Grant, err error) {
	w.grant, w.err = g, err
	w.req = nil
	close(w.done)
}
