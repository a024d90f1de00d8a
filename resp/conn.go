package resp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// flushAt is how many reply bytes a batch may gather before they are
	// written, so a pipeline of large replies is not held in memory whole.
	flushAt = 64 << 10
	// maxReadAhead caps what a blocked connection's watcher buffers of the
	// requests its client pipelines behind the blocking one.
	maxReadAhead = 1 << 20
)

// Conn is one client connection: its reader, its replies, and what the
// client told us about itself. One goroutine runs it; only a blocking
// command adds a second, which watches for the client going away.
type Conn struct {
	srv     *Server
	nc      net.Conn
	rd      *reader
	out     Reply
	id      int64
	addr    string
	laddr   string
	created time.Time
	closing bool // set by QUIT, SHUTDOWN, or a write that failed

	role Role
	user string

	lastActive atomic.Int64 // unix nanoseconds
	lastCmd    atomic.Pointer[Command]

	mu      sync.Mutex // guards what CLIENT LIST reads from other goroutines
	name    string
	libName string
	libVer  string
}

func newConn(s *Server, nc net.Conn) *Conn {
	c := &Conn{
		srv:     s,
		nc:      nc,
		rd:      newReader(nc, s.cfg.Limits),
		id:      s.nextID.Add(1),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		created: time.Now(),
		role:    RoleAdmin, // SPEC §5: without a users file every connection is admin
		user:    "default",
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
func (c *Conn) serve() {
	defer c.close()
	for {
		args, err := c.rd.next()
		switch {
		case err == nil:
			if len(args) > 0 {
				c.exec(args)
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

func (c *Conn) flush() bool {
	if c.out.Len() == 0 {
		return true
	}
	_, err := c.nc.Write(c.out.b)
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

func (c *Conn) close() {
	c.nc.Close()
	c.srv.forget(c)
}

// exec looks a request up in the command table and checks arity and role
// once, here, before its handler runs.
func (c *Conn) exec(args [][]byte) {
	c.srv.stats.commandsTotal.Add(1)
	cmd := lookup(c.srv.table, args[0])
	if cmd == nil {
		c.out.Err(unknownCommand(args))
		return
	}
	if !arityOK(cmd.Arity, len(args)) {
		c.out.Err("wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	if cmd.Subcommands != nil {
		sub := lookup(cmd.Subcommands, args[1])
		if sub == nil {
			c.out.Err(fmt.Sprintf("unknown subcommand '%.128s'. Try %s HELP.", args[1], strings.ToUpper(cmd.Name)))
			return
		}
		if !arityOK(sub.Arity, len(args)) {
			c.out.Err("wrong number of arguments for '" + sub.Name + "' command")
			return
		}
		cmd = sub
	}
	if c.role < cmd.Role {
		if c.role == RoleNone {
			c.out.Error("NOAUTH", "Authentication required.")
		} else {
			c.out.Error("NOPERM", "this user has no permissions to run the '"+cmd.Name+"' command")
		}
		return
	}
	c.lastCmd.Store(cmd)
	cmd.Handler(c, args)
}

func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// unknownCommand is Redis's text, args quoted and cut to about 128 bytes.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	return fmt.Sprintf("unknown command '%.128s', with args beginning with: %s", args[0], b.String())
}

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

func (c *Conn) watchGone() *watch {
	w := &watch{gone: make(chan struct{}), done: make(chan struct{})}
	c.srv.stats.blocked.Add(1)
	go func() {
		defer close(w.done)
		for c.rd.err == nil {
			if c.rd.buffered() >= maxReadAhead {
				// The client pipelines a lot behind a blocking request;
				// stop reading rather than buffer without bound.
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

func (w *watch) stop(c *Conn) {
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
