package resp

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pushQueue is a subscribing connection's output (pubsub.go): what
// publishers deliver and what its own goroutine flushes, in one order,
// written to the socket by the connection's writer goroutine
// (writePushes). Publishers never wait on it: deliver appends or refuses.
type pushQueue struct {
	mu   sync.Mutex
	buf  []byte // to write next
	held []byte // delivered while a subscribe's reply is not yet queued (hold)
	// holding: a SUBSCRIBE registered c, and its reply is still in c.out;
	// deliveries wait in held until flush queues that reply.
	holding bool
	writing int    // bytes the writer is writing now
	spare   []byte // the buffer the writer wrote last, for reuse
	// queued and written count bytes since the queue was made, so that
	// flush can wait until its own reply is written.
	queued, written uint64
	softSince       time.Time // when the queue went over the soft limit; zero if it is not
	closed          bool
	wrote           *sync.Cond // broadcast after each write and on close
	wake            chan struct{}
	done            chan struct{}
	resp3           atomic.Bool // the connection's protocol, for messages' encoding
}

func newPushQueue() *pushQueue {
	q := &pushQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.wrote = sync.NewCond(&q.mu)
	return q
}

func (q *pushQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pending is what waits to reach the socket. The caller holds q.mu.
func (q *pushQueue) pending() int { return len(q.buf) + len(q.held) + q.writing }

// hold makes deliveries wait until the next flush. The caller holds
// pubsub.mu (write).
func (q *pushQueue) hold() {
	q.mu.Lock()
	q.holding = true
	q.mu.Unlock()
}

// deliver queues b, or reports false, closing the queue, if b would take
// it past the pubsub class's hard limit, or it has been past the soft
// limit for its seconds (Redis's checkClientOutputBufferLimits).
func (q *pushQueue) deliver(b []byte, lim *obufLimits, now func() time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return true // going away: nothing to queue, nobody to cut again
	}
	l := lim.class[obufPubSub]
	size := int64(q.pending() + len(b))
	over := l.hard > 0 && size > l.hard
	if !over && l.soft > 0 && size > l.soft {
		t := now()
		if q.softSince.IsZero() {
			q.softSince = t
		} else if t.Sub(q.softSince) >= time.Duration(l.softSeconds)*time.Second {
			over = true
		}
	} else if !over {
		q.softSince = time.Time{}
	}
	if over {
		q.closeLocked()
		return false
	}
	if q.holding {
		q.held = append(q.held, b...)
		return true
	}
	q.buf = append(q.buf, b...)
	q.queued += uint64(len(b))
	q.signal()
	return true
}

// flushReply queues out, the connection's own replies, then what was held
// for them, and waits until out is written (the back-pressure a
// connection without a queue gets from its own write). It reports false
// if the queue closed first.
func (q *pushQueue) flushReply(out []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if len(out) == 0 && !q.holding {
		return true // nothing of its own to wait for: messages go on by themselves
	}
	q.buf = append(q.buf, out...)
	q.queued += uint64(len(out))
	target := q.queued
	if q.holding {
		q.buf = append(q.buf, q.held...)
		q.queued += uint64(len(q.held))
		q.held, q.holding = q.held[:0], false
	}
	q.signal()
	for q.written < target && !q.closed {
		q.wrote.Wait()
	}
	return !q.closed
}

// close ends the queue: nothing more is queued or written, and waiters
// are let go.
func (q *pushQueue) close() {
	q.mu.Lock()
	q.closeLocked()
	q.mu.Unlock()
}

func (q *pushQueue) closeLocked() {
	if q.closed {
		return
	}
	q.closed = true
	q.buf, q.held, q.spare = nil, nil, nil
	q.wrote.Broadcast()
	q.signal()
}

// writePushes is a subscribing connection's writer: it writes what q
// holds, in order, until q closes or a write fails (the connection is
// closed then, so its reader ends too).
func (c *conn) writePushes(q *pushQueue) {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.buf) == 0 && !q.closed {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		b := q.buf
		q.buf, q.spare = q.spare[:0], nil
		q.writing = len(b)
		q.mu.Unlock()

		n, err := c.nc.Write(b)
		c.srv.stats.netOutput.Add(int64(n))

		q.mu.Lock()
		q.writing = 0
		q.written += uint64(len(b))
		if cap(b) <= 4*flushAt && !q.closed {
			q.spare = b[:0]
		}
		q.wrote.Broadcast()
		q.mu.Unlock()
		if err != nil {
			q.close()
			c.nc.Close()
			return
		}
	}
}

// endPushes stops c's writer, once c's reader is done: called as the
// connection closes.
func (c *conn) endPushes() {
	if c.ps == nil {
		return
	}
	c.unsubscribeAll()
	c.stopMonitoring()
	c.ps.q.close()
	c.nc.Close() // a write blocked on a client that does not read fails
	<-c.ps.q.done
}

// client-output-buffer-limit: three classes, as Redis keeps them; tenure
// enforces the pubsub one (SPEC §13), on subscribers' queues, and shows
// the others as set.

const (
	obufNormal = iota
	obufReplica
	obufPubSub
	obufClasses
)

var obufClassName = [obufClasses]string{"normal", "slave", "pubsub"}

type obufLimit struct{ hard, soft, softSeconds int64 }

type obufLimits struct{ class [obufClasses]obufLimit }

// defaultObufLimits are Redis's defaults.
func defaultObufLimits() *obufLimits {
	return &obufLimits{class: [obufClasses]obufLimit{
		obufNormal:  {0, 0, 0},
		obufReplica: {256 << 20, 64 << 20, 60},
		obufPubSub:  {32 << 20, 8 << 20, 60},
	}}
}

// String is CONFIG GET's value: "normal 0 0 0 slave … pubsub …".
func (l *obufLimits) String() string {
	var b strings.Builder
	for i, c := range l.class {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(obufClassName[i])
		for _, v := range []int64{c.hard, c.soft, c.softSeconds} {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatInt(v, 10))
		}
	}
	return b.String()
}

// parseObufLimits reads CONFIG SET client-output-buffer-limit's value,
// "<class> <hard> <soft> <soft seconds> …", onto a copy of old, with
// Redis's errors: every class is checked before any is set.
func parseObufLimits(old *obufLimits, v string) (*obufLimits, string) {
	f := strings.Fields(v)
	if len(f)%4 != 0 {
		return nil, "Wrong number of arguments in buffer limit configuration."
	}
	next := *old
	for i := 0; i < len(f); i += 4 {
		class := -1
		switch strings.ToLower(f[i]) {
		case "normal":
			class = obufNormal
		case "slave", "replica":
			class = obufReplica
		case "pubsub":
			class = obufPubSub
		}
		if class < 0 {
			return nil, "Invalid client class specified in buffer limit configuration."
		}
		hard, ok1 := parseMemory(f[i+1])
		soft, ok2 := parseMemory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return nil, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		next.class[class] = obufLimit{hard, soft, secs}
	}
	return &next, ""
}

// parseMemory reads a size as Redis's memtoull does: digits and an
// optional unit, b, k (1000), kb (1024), m, mb, g, gb, in any case.
func parseMemory(s string) (int64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mul := int64(1)
	switch strings.ToLower(s[i:]) {
	case "", "b":
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > (1<<62)/mul {
		return 0, false
	}
	return n * mul, true
}
