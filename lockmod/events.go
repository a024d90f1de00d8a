package lockmod

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Lock events (SPEC §13 "Lock events", §14's feed): every grant, end of a
// lease and -LOST answer, and every new epoch, told to the sinks added with
// AddEventSink in the same critical section as the change, so in the order
// the changes happen (per lock and overall). With no sink added an event is
// never built: the cost is one length check. Observer (metrics) stays as it
// is; sinks are for feeds that come and go (pub/sub, the dashboard, an
// audit ring).

// EventKind is what happened.
type EventKind uint8

const (
	EventGranted  EventKind = iota + 1 // a lease was granted
	EventReleased                      // LOCK.RELEASE ended it
	EventExpired                       // its deadline passed
	EventRevoked                       // MAXHOLD or LOCK.REVOKE ended it; Reason says which
	EventLost                          // a -LOST answer for an ended lease (SPEC §4)
	EventEpoch                         // a new epoch began (Epoch); Lock and Key are empty
)

var kindText = [...]string{
	EventGranted:  "granted",
	EventReleased: "released",
	EventExpired:  "expired",
	EventRevoked:  "revoked",
	EventLost:     "lost",
	EventEpoch:    "epoch",
}

// String is the kind's name as SPEC §13 spells it in a lock event's JSON.
func (k EventKind) String() string {
	if int(k) < len(kindText) && kindText[k] != "" {
		return kindText[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one lock event. It never carries a lease id (LOCK-04).
type Event struct {
	Kind      EventKind
	Lock, Key string
	// Fence is the lease's fence, the one it was granted with, for every
	// kind but EventEpoch.
	Fence uint64
	Owner string // the OWNER text of the request, "" if none (LOCK-16)
	// Reason is SPEC §4's text for an end or a lost answer ("expired",
	// "revoked maxhold", "revoked by admin", "released"); "" for a grant.
	Reason string
	Epoch  uint64    // EventEpoch: the new epoch
	At     time.Time // store time of the change (an expiry: its deadline)
}

// EventSink hears lock events. LockEvent is called with the Manager's lock
// held, in the order of the changes: it must be quick, must never block
// (a slow consumer must not stall grants: drop or queue, as Feed does) and
// must not call the Manager. The strings of an Event may be kept.
type EventSink interface {
	LockEvent(Event)
}

// AddEventSink makes s hear every lock event from now on, until the
// returned remove is called (more than once is harmless).
func (m *Manager) AddEventSink(s EventSink) (remove func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sinkSeq++
	id := m.sinkSeq
	// Copied on write, so that a list being told stays as it was.
	m.sinks = append(m.sinks[:len(m.sinks):len(m.sinks)], sinkEntry{id: id, s: s})
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range m.sinks {
			if m.sinks[i].id == id {
				next := make([]sinkEntry, 0, len(m.sinks)-1)
				next = append(next, m.sinks[:i]...)
				m.sinks = append(next, m.sinks[i+1:]...)
				return
			}
		}
	}
}

// sinkEntry is an added sink, named by the order it was added in.
type sinkEntry struct {
	id uint64
	s  EventSink
}

// emit tells every sink e. The caller holds m.mu and has checked that
// there is a sink (len(m.sinks) != 0), so that no Event is built for none.
func (m *Manager) emit(e Event) {
	for _, k := range m.sinks {
		k.s.LockEvent(e)
	}
}

// at is store time as a wall-clock time.
func (m *Manager) at(t instant) time.Time { return m.base.Add(time.Duration(t)) }

// emitLease tells the sinks of kind k for lease r at instant t.
func (m *Manager) emitLease(k EventKind, r *request, why reason, t instant) {
	lock, key := splitName(r.name())
	e := Event{Kind: k, Lock: lock, Key: key, Fence: r.fence, Owner: r.owner(), At: m.at(t)}
	if k != EventGranted {
		e.Reason = reasonText[why]
	}
	m.emit(e)
}

// endKind is the event kind of a lease ended for reason why.
func endKind(why reason) EventKind {
	switch why {
	case expired:
		return EventExpired
	case released:
		return EventReleased
	default:
		return EventRevoked
	}
}

// lostAnswer tells the sinks that ended lease r was answered -LOST, and
// returns that answer. The caller holds m.mu.
func (m *Manager) lostAnswer(r *request, now instant) *LostError {
	if len(m.sinks) != 0 {
		m.emitLease(EventLost, r, r.reason, now)
	}
	return r.reason.lost()
}

// emitEpoch tells the sinks that epoch began. The caller holds m.mu.
func (m *Manager) emitEpoch(epoch uint64) {
	if len(m.sinks) != 0 {
		m.emit(Event{Kind: EventEpoch, Epoch: epoch, At: m.clock.Now()})
	}
}

// DefaultFeedSize is a Feed's buffer when NewFeed is given none.
const DefaultFeedSize = 4096

// Feed is an EventSink that queues events on a buffered channel for a
// reader in another goroutine. When the reader falls behind and the buffer
// is full, an event is dropped and counted, never waited for: the lock
// manager goes on (a dashboard or an audit ring wants the latest, and
// learns from Dropped that it missed some).
type Feed struct {
	ch      chan Event
	dropped atomic.Uint64
}

// NewFeed makes a Feed buffering up to size events (<= 0: DefaultFeedSize).
// Add it with AddEventSink.
func NewFeed(size int) *Feed {
	if size <= 0 {
		size = DefaultFeedSize
	}
	return &Feed{ch: make(chan Event, size)}
}

// LockEvent queues e, or drops it if the buffer is full.
func (f *Feed) LockEvent(e Event) {
	select {
	case f.ch <- e:
	default:
		f.dropped.Add(1)
	}
}

// C is where the events come, in order, but for those dropped.
func (f *Feed) C() <-chan Event { return f.ch }

// Dropped is how many events did not fit in the buffer.
func (f *Feed) Dropped() uint64 { return f.dropped.Load() }
