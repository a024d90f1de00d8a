package lockmod

// Expiry: every deadline (a lease's, a waiter's, a lingering place's) is an
// event in one heap; advance ends what is due before every read, and one
// clock timer is armed for the earliest.

import (
	"slices"
	"time"
)

// eventQueue is the timer heap: every request with a pending event, by ref,
// earliest first. One clock timer is armed for its head.
type eventQueue struct {
	slab *slab
	refs []uint32
}

// before orders events: by time, then by phase (see phase).
func before(a, b *request) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.phase < b.phase
}

func (q *eventQueue) len() int { return len(q.refs) }

// first is the earliest event's request, nil if there is none.
func (q *eventQueue) first() *request {
	if len(q.refs) == 0 {
		return nil
	}
	return q.slab.get(q.refs[0])
}

// schedule puts r in the heap at r.at, or moves it there.
func (q *eventQueue) schedule(r *request) {
	if r.index >= 0 {
		if !q.down(int(r.index)) {
			q.up(int(r.index))
		}
		return
	}
	if len(q.refs) == cap(q.refs) {
		// Double rather than let append grow by a quarter: at a million
		// leases each regrowth leaves the old array as garbage.
		q.refs = slices.Grow(q.refs, max(len(q.refs), 64))
	}
	q.refs = append(q.refs, r.ref)
	q.up(len(q.refs) - 1)
}

// unschedule takes r out of the heap if it is there.
func (q *eventQueue) unschedule(r *request) {
	i := int(r.index)
	if i < 0 {
		return
	}
	last := len(q.refs) - 1
	if i != last {
		q.refs[i] = q.refs[last]
		q.slab.get(q.refs[i]).index = int32(i)
	}
	q.refs = q.refs[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
	r.index = -1
}

// up moves the event at i towards the root to its place.
func (q *eventQueue) up(i int) {
	ref := q.refs[i]
	r := q.slab.get(ref)
	for i > 0 {
		p := (i - 1) / 2
		pr := q.slab.get(q.refs[p])
		if !before(r, pr) {
			break
		}
		q.refs[i] = q.refs[p]
		pr.index = int32(i)
		i = p
	}
	q.refs[i] = ref
	r.index = int32(i)
}

// down moves the event at i towards the leaves to its place, and reports
// whether it moved.
func (q *eventQueue) down(i int) bool {
	i0, n := i, len(q.refs)
	ref := q.refs[i]
	r := q.slab.get(ref)
	for {
		c := 2*i + 1
		if c >= n || c < 0 {
			break
		}
		cr := q.slab.get(q.refs[c])
		if c2 := c + 1; c2 < n {
			if c2r := q.slab.get(q.refs[c2]); before(c2r, cr) {
				c, cr = c2, c2r
			}
		}
		if !before(cr, r) {
			break
		}
		q.refs[i] = q.refs[c]
		cr.index = int32(i)
		i = c
	}
	q.refs[i] = ref
	r.index = int32(i)
	return i > i0
}

func (q *eventQueue) clear() { q.refs = nil }

// advance runs every event due at or before now, earliest first (LOCK-06).
// Every method runs it before it reads state, so that a late timer, or a
// sweep that has not reached a lease yet, never lets an ended lease be seen
// as live; a method that reads one key and one request runs their due
// events only, and advance only when more than a step of those are due
// (see catchUp).
//
// A method that comes in while a million leases fall due meets what the
// timer has not swept yet, maybe a second's worth. It sweeps that in steps
// of sweepStep events and lets the lock go between them (pausing as the
// timer does, see pacer), so that in between the timer's own steps, which
// read the clock afresh and end the leases with a waiter first, still
// grant those waiters on time, and other methods sweep alongside. What
// this method reads once it is through has every event due by now run,
// some due later maybe too: never an ended lease live. It is false, the
// lock held, when the Manager was closed or paused meanwhile.
func (m *Manager) advance(now instant) bool {
	step := m.step()
	var p pacer
	for m.sweep(now, step) {
		m.unlock()
		if m.betweenSteps != nil {
			m.betweenSteps()
		}
		p.pause()
		m.mu.Lock()
		if m.closed || m.paused {
			return false
		}
	}
	return true
}

// sweep runs at most limit of the events due at or before now, earliest
// first, and reports whether more are due.
// Due leases with a waiter go first (see contestedLease): a sweep that
// lags still grants their waiters at once.
func (m *Manager) sweep(now instant, limit int) (more bool) {
	for range limit {
		if r := m.dueContested(now); r != nil {
			m.expire(r, now)
			continue
		}
		r := m.events.first()
		if r == nil || r.at > now {
			return false
		}
		m.run(r, now)
	}
	r := m.events.first()
	return r != nil && r.at <= now
}

// run runs r's event, due at now.
func (m *Manager) run(r *request, now instant) {
	switch r.phase {
	case live:
		m.expire(r, now)
	case waiting:
		// What this place held back goes ahead (LOCK-08).
		at := r.at
		m.linger(r, at, ErrNotGranted)
		m.grantNext(r.name(), at, now)
		m.settle(r.name())
	case lingering:
		name := r.name()
		m.leave(r)
		m.forget(r)
		m.settle(name)
	case ended:
		m.forget(r)
	}
}

// arm makes sure one clock timer is armed no later than the earliest event.
// A timer armed for a later time is replaced; one armed earlier is left to
// fire, find nothing or little due, and arm again. It reads the clock for
// the timer's delay: a method's now is stale by as long as its advance
// took.
func (m *Manager) arm() {
	if m.closed || m.sweeping || m.events.len() == 0 {
		return
	}
	next := m.events.first().at
	if m.timer != nil && m.timerAt <= next {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = next
	m.timer = m.clock.AfterFunc(time.Duration(next-m.now()), m.fireFn)
}

// expire ends live lease r at its deadline, due at now: expired, or revoked
// if the deadline is its MAXHOLD's (LOCK-07).
func (m *Manager) expire(r *request, now instant) {
	why := expired
	if md := r.maxDeadline(); md != 0 && r.at >= md {
		why = revokedMaxHold
	}
	m.end(r, why, r.at, now)
}

// DefaultSweepStep is how many due events the clock's timer runs under one
// hold of the Manager's lock. A million leases that fall due at once would
// otherwise hold it for the whole sweep, and the goroutine that sweeps would
// keep the CPU from everything else the server does; between steps the
// timer lets the lock go and pauses (see pacer). A method that comes in
// between still runs every event due that changes what it reads: all of
// them (advance), or those of the one key and request it reads (see
// catchUp). The steps spread the timer's work; they never leave a read
// stale. At ~1 µs an end,
// a step is a quarter of a millisecond: what a waiter whose holder falls
// due mid-step waits at most, beyond the pacer's park (contested leases go
// first in every step).
const DefaultSweepStep = 256

// fire is the clock timer's callback. A timer fires at or after the time it
// was armed for, so one that fires before timerAt is a stale timer whose Stop
// came too late; it must not forget the armed one. (At worst a stale timer
// makes one extra wake-up.) It sweeps what is due in steps (see
// DefaultSweepStep); while it does, no other timer is armed (see arm), and
// a timer that fires meanwhile leaves the sweep to it: a method that found
// events due and left them to the sweep (catchUp) would otherwise start
// another sweeper each time, and a dozen would take turns at the CPU.
func (m *Manager) fire() {
	m.mu.Lock()
	if m.sweeping {
		m.mu.Unlock()
		return
	}
	m.sweeping = true
	m.mu.Unlock()
	var p pacer
	for {
		m.mu.Lock()
		if m.closed {
			m.sweeping = false
			m.mu.Unlock()
			return
		}
		now := m.now()
		if now >= m.timerAt {
			m.timer = nil
		}
		more := m.sweep(now, m.step())
		if !more {
			m.sweeping = false
			m.arm()
		}
		m.unlock()
		if !more {
			return
		}
		if m.betweenSteps != nil {
			m.betweenSteps()
		}
		p.pause()
	}
}
