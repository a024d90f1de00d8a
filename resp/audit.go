package resp

import (
	"sync"

	"github.com/tenure-db/tenure/lockmod"
)

// The audit (SPEC §14): the last Config.AuditEvents lock events in memory,
// for LOCK.EVENTS and the dashboard's feed. The ring is a sink of the lock
// module's events (lockmod/events.go), told under the Manager's lock in the
// order of the changes: it only copies the event in, under a mutex that
// readers hold for as long as a copy of what they asked for takes.

// DefaultAuditEvents is how many lock events the audit keeps when
// Config.AuditEvents is 0.
const DefaultAuditEvents = 10000

// AuditEvent is one lock event as the audit keeps it, numbered from 1 in
// the order the events happened. Never a lease id (LOCK-04).
type AuditEvent struct {
	Seq uint64
	lockmod.Event
}

type auditRing struct {
	mu   sync.Mutex
	buf  []AuditEvent // buf[(seq-1) % len(buf)] holds event seq
	last uint64       // the newest event's Seq; 0: none yet
}

func newAuditRing(size int) *auditRing { return &auditRing{buf: make([]AuditEvent, size)} }

// LockEvent keeps e, dropping the oldest kept when the ring is full.
func (a *auditRing) LockEvent(e lockmod.Event) {
	a.mu.Lock()
	a.last++
	a.buf[(a.last-1)%uint64(len(a.buf))] = AuditEvent{Seq: a.last, Event: e}
	a.mu.Unlock()
}

// latest is up to n of the newest events of lock ("" any), oldest first.
// Events of a new epoch belong to every lock.
func (a *auditRing) latest(lock string, n int) []AuditEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []AuditEvent
	for seq := a.last; seq > 0 && seq+uint64(len(a.buf)) > a.last && len(out) < n; seq-- {
		e := &a.buf[(seq-1)%uint64(len(a.buf))]
		if lock == "" || e.Lock == lock || e.Kind == lockmod.EventEpoch {
			out = append(out, *e)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// since is up to n of the events after seq, oldest first, and the Seq of
// the newest event kept (pass it back to read on). Events that fell out of
// the ring before they were read are skipped.
func (a *auditRing) since(seq uint64, n int) ([]AuditEvent, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n <= 0 {
		return nil, a.last
	}
	if oldest := a.last - min(a.last, uint64(len(a.buf))); seq < oldest {
		seq = oldest
	}
	var out []AuditEvent
	for s := seq + 1; s <= a.last && len(out) < n; s++ {
		out = append(out, a.buf[(s-1)%uint64(len(a.buf))])
	}
	return out, a.last
}

// Events returns up to n of the newest lock events of lock ("" any lock),
// oldest first; none when the audit is off.
func (s *Server) Events(lock string, n int) []AuditEvent {
	if s.audit == nil {
		return nil
	}
	return s.audit.latest(lock, n)
}

// EventsSince returns up to n lock events after the one numbered seq (0:
// from the oldest kept), oldest first, and the number of the newest event
// kept, to pass back.
func (s *Server) EventsSince(seq uint64, n int) ([]AuditEvent, uint64) {
	if s.audit == nil {
		return nil, 0
	}
	return s.audit.since(seq, n)
}

// DefaultEventsCount is how many events LOCK.EVENTS replies when given no
// COUNT.
const DefaultEventsCount = 100

// cmdLockEvents is LOCK.EVENTS [lock] [COUNT n]: the newest lock events the
// audit keeps, of one lock or of all, oldest first; each a map of time (ms
// since the Unix epoch), event, lock, key, fence, owner, reason, and epoch
// for a new epoch. Never a lease id (LOCK-04, LOCK-16). An odd number of
// arguments begins with the lock: LOCK.EVENTS COUNT 5 is every lock's.
func cmdLockEvents(c *conn, args [][]byte) {
	var lock string
	rest := args[1:]
	if len(rest)%2 == 1 {
		lock, rest = string(rest[0]), rest[1:]
		if lock == "" {
			c.out.Err("lock must not be empty")
			return
		}
	}
	count := DefaultEventsCount
	msg := parseOptions(rest, opt{name: "count", value: true, once: true, set: func(v []byte) (msg string) {
		count, msg = countArg(v)
		return msg
	}})
	if msg != "" {
		c.out.Err(msg)
		return
	}
	events := c.srv.Events(lock, count)
	c.out.Array(len(events))
	for _, e := range events {
		if e.Kind == lockmod.EventEpoch {
			c.out.Map(3)
			c.out.BulkString("time")
			c.out.Int(e.At.UnixMilli())
			c.out.BulkString("event")
			c.out.BulkString(e.Kind.String())
			c.out.BulkString("epoch")
			c.out.Int(int64(e.Epoch))
			continue
		}
		c.out.Map(7)
		c.out.BulkString("time")
		c.out.Int(e.At.UnixMilli())
		c.out.BulkString("event")
		c.out.BulkString(e.Kind.String())
		c.out.BulkString("lock")
		c.out.BulkString(e.Lock)
		c.out.BulkString("key")
		c.out.BulkString(e.Key)
		c.out.BulkString("fence")
		c.out.Int(int64(e.Fence))
		c.out.BulkString("owner")
		c.out.BulkString(e.Owner)
		c.out.BulkString("reason")
		c.out.BulkString(e.Reason)
	}
}
