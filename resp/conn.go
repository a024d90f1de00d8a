package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/kv"
)

const (
	// flushAt is how many reply bytes a batch may gather before they are
	// written, so a pipeline of large replies is not held in memory whole.
	flushAt = 64 << 10
	// maxReadAhead caps what a blocked connection's watcher buffers of the
	// requests its client pipelines behind the blocking one.
	maxReadAhead = 1 << 20
)

// conn is one client connection: its reader, its replies, and what the
// client told us about itself. One goroutine runs it; only a blocking
// command adds a second, which watches for the client going away.
type conn struct {
	srv     *Server
	nc      net.Conn
	rd      *reader
	out     reply
	id      int64
	addr    string
	laddr   string
	created time.Time
	closing bool // set by QUIT, SHUTDOWN, or a write that failed
	// lastEnd is when the request before ended, while the next one of the
	// same read batch follows it at once (see exec); zero otherwise.
	lastEnd time.Time
	// looked is the row of the request about to run, as batchFor looked
	// it up, for admit; nil when it did not.
	looked *command

	role Role
	user string

	// store is the keyspace this connection's commands act on: the
	// server's, or during EXEC the transaction's view of it.
	store *kv.Store
	tx    txState // MULTI, WATCH and EXEC (transactions.go)
	batch batch   // the writes of the read batch, not yet committed (batch.go)

	// readyKeys are the keys the request running may have made poppable
	// for clients blocked on them (blocking.go).
	readyKeys []string
	// inLine: the connection is blocked on keys, and an attempt that
	// meets a key of another type leaves it so (blocking.go).
	inLine bool

	// entryNowMs is the leader's clock in the log entry the conn applies
	// (Server.Apply), 0 on any other: see nowMs.
	entryNowMs int64
	// effects records the writes of a script a cluster's leader runs for
	// its effects (scripting.go), nil on any other.
	effects *scriptEffects

	// ctx is a request's run in process (Server.Do), nil on a socket: a
	// blocking command waits until it ends instead of watching nc.
	ctx context.Context

	lastActive atomic.Int64 // unix nanoseconds
	lastCmd    atomic.Pointer[command]

	mu      sync.Mutex // guards what CLIENT LIST reads from other goroutines
	name    string
	libName string
	libVer  string
	noEvict bool // CLIENT NO-EVICT: shown in CLIENT LIST's flags
	noTouch bool // CLIENT NO-TOUCH: shown in CLIENT LIST's flags

	// ps is the connection's subscriptions and its output queue, from its
	// first SUBSCRIBE on (pubsub.go); nil before.
	ps *subscriptions
	// monitoring: MONITOR made c a monitor (monitor.go); its lines go
	// through ps's queue.
	monitoring bool
	// replyMode is CLIENT REPLY's: replies on, off, or skip the next.
	replyMode replyMode
}

// applyingEntry says the conn applies a cluster's log entry (Server.Apply)
// rather than serving a client.
func (c *conn) applyingEntry() bool { return c.entryNowMs != 0 }

// nowMs is the instant a relative expiry counts from (EXPIRE k 10, SET …
// EX 10), in unix ms: the leader's clock in the entry being applied, so
// that every node of a cluster sets the same deadline; else this node's
// clock.
func (c *conn) nowMs() int64 {
	if c.applyingEntry() {
		return c.entryNowMs
	}
	if c.effects != nil {
		return c.effects.nowMs // the instant the effects' entry is stamped with
	}
	return time.Now().UnixMilli()
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		nc:      nc,
		rd:      newReader(countingReader{nc, &s.stats.netInput}, s.cfg.Limits),
		id:      s.nextID.Add(1),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		created: time.Now(),
		role:    RoleAdmin, // SPEC §5: without a users file every connection is admin
		user:    "default",
		store:   s.store,
	}
	if s.users != nil {
		c.role = RoleNone
		c.rd.unauth = true // SPEC §7: at most 10 arguments of 16 KB before AUTH
	}
	c.lastActive.Store(c.created.UnixNano())
	return c
}

// serve reads requests, runs them in order, and writes their replies once
// per batch: every request that arrived in one read is answered by one
// write.
func (c *conn) serve() {
	defer c.close()
	for {
		args, err := c.rd.next()
		switch {
		case err == nil:
			if len(args) > 0 && !c.run(args) {
				c.flush()
				return
			}
			if c.closing {
				c.flush()
				return
			}
			if c.out.Len() >= flushAt && !c.flush() {
				return
			}
		case err == errIncomplete:
			if !c.flush() || c.srv.closing.Load() {
				return
			}
			c.rd.shrink()
			if c.rd.fill() != nil {
				return
			}
			c.lastActive.Store(time.Now().UnixNano())
		default:
			// A protocol error: answer it and close, as Redis does.
			c.out.Err(err.Error())
			c.flush()
			c.srv.log.Debug("protocol error", "client", c.addr, "err", err)
			return
		}
	}
}

// run executes one request. A handler that panics is a bug, but it must
// not take the whole server down with it (SPEC §7): its partial reply is
// dropped, the client gets an error, the panic is logged with its stack,
// and run reports false so the connection is closed.
func (c *conn) run(args [][]byte) (ok bool) {
	c.batchFor(args)
	mark := c.out.Len()
	defer func() {
		if p := recover(); p != nil {
			c.panicked(args, mark, p)
			ok = false
		}
	}()
	c.lastEnd = c.exec(args)
	c.batched(mark)
	return true
}

// panicked answers a request whose handler panicked with p: its partial
// reply, from mark on, is dropped for an error, and the panic is logged
// with its stack.
func (c *conn) panicked(args [][]byte, mark int, p any) {
	c.out.truncate(mark)
	c.out.Err("internal error; closing the connection")
	c.batch.replied()
	c.srv.log.Error("panic serving a command", "client", c.addr,
		"command", cut128(args[0]), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// flush writes the replies gathered so far, once the writes they tell of
// are committed (endBatch).
func (c *conn) flush() bool {
	c.endBatch()
	c.lastEnd = time.Time{}
	if c.ps != nil {
		// A subscriber's replies keep their place among its messages
		// (pushqueue.go); the writer counts the bytes.
		ok := c.ps.q.flushReply(c.out.b)
		c.out.b = c.out.b[:0]
		if !ok {
			c.closing = true
		}
		return ok
	}
	if c.out.Len() == 0 {
		return true
	}
	n, err := c.nc.Write(c.out.b)
	c.srv.stats.netOutput.Add(int64(n))
	if cap(c.out.b) > 4*flushAt {
		c.out.b = nil
	} else {
		c.out.b = c.out.b[:0]
	}
	if err != nil {
		c.closing = true
		return false
	}
	return true
}

func (c *conn) close() {
	c.endBatch()
	c.endTx()
	c.endPushes()
	c.nc.Close()
	c.srv.forget(c)
}

// countingReader adds what it reads to INFO's total_net_input_bytes.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (cr countingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	cr.n.Add(int64(n))
	return n, err
}

var errReadAheadLimit = errors.New("read-ahead limit of a blocked client")

// watch lets a blocking command learn that its client went away: while the
// command waits, a second goroutine reads ahead on the connection (into
// the reader's buffer, never moving what is already there), and closes gone
// on end of file or a read error. Call stop before the connection reads
// again.
type watch struct {
	gone     chan struct{}
	done     chan struct{}
	stopping atomic.Bool
}

func (c *conn) watchGone() *watch {
	w := &watch{gone: make(chan struct{}), done: make(chan struct{})}
	c.srv.stats.blocked.Add(1)
	go func() {
		defer close(w.done)
		if c.rd.err != nil {
			// The connection already failed: the blocking request came
			// from what was buffered before the client went away.
			close(w.gone)
			return
		}
		for {
			if c.rd.buffered() >= maxReadAhead {
				// The client pipelines more behind a blocking request than
				// we buffer. Stopping to read would leave us blind to its
				// going away, so the connection is closed instead, as Redis
				// closes a client over its query buffer limit.
				c.srv.log.Warn("closing a blocked client over the read-ahead limit", "client", c.addr, "limit", maxReadAhead)
				c.rd.err = errReadAheadLimit
				close(w.gone)
				return
			}
			if err := c.rd.readAhead(); err != nil {
				var ne net.Error
				if w.stopping.Load() && errors.As(err, &ne) && ne.Timeout() {
					return // stop's deadline; the connection is fine
				}
				c.rd.err = err
				close(w.gone)
				return
			}
		}
	}()
	return w
}

// Gone is closed when the client has closed its connection.
func (w *watch) Gone() <-chan struct{} { return w.gone }

func (w *watch) stop(c *conn) {
	w.stopping.Store(true)
	c.nc.SetReadDeadline(time.Unix(1, 0))
	<-w.done
	c.nc.SetReadDeadline(time.Time{})
	c.srv.stats.blocked.Add(-1)
}

// readAhead reads once into free room after the buffered data, growing
// the buffer by a fresh allocation if needed; it never moves bytes that
// arguments being served point at.
func (rd *reader) readAhead() error {
	if rd.w == len(rd.buf) {
		nb := make([]byte, max(2*len(rd.buf), minRead))
		rd.w = copy(nb, rd.buf[rd.r:rd.w])
		rd.r = 0
		rd.buf = nb
	}
	n, err := rd.src.Read(rd.buf[rd.w:])
	rd.w += n
	if err != nil && n == 0 {
		return err
	}
	return nil
}
