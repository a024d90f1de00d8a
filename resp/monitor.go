package resp

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR: every command the server runs, as a line pushed to each
// connection that asked, in Redis's format (replicationFeedMonitors):
//
//	+1733356800.123456 [0 127.0.0.1:50412] "set" "k" "v"
//
// The peer is the client's address, "lua" for a command a script called,
// "in-process" for one run through Server.Do. A command is shown once it
// has run (EVAL and EVALSHA before, so that their scripts' commands follow
// them); not one refused before it ran, one queued in MULTI (EXEC runs and
// shows it), an entry of a cluster's log applied on a node (its client's
// node showed it), or one that needs the admin role, as Redis hides its
// admin commands. Passwords and lease ids are shown as "(redacted)".
//
// A monitor's lines go through a push queue, as a subscriber's messages
// do (pushqueue.go), and a monitor that does not read is cut off at the
// pubsub class's client-output-buffer-limit. (Redis counts a monitor in
// the normal class, which has no limit by default.)

// monitors are the connections in MONITOR mode.
type monitors struct {
	mu    sync.RWMutex
	conns map[*conn]struct{}
	n     atomic.Int32 // len(conns): a command run with no monitor reads it and no more
}

// cmdMonitor is MONITOR. A second MONITOR on the same connection is not
// answered, as in Redis.
func cmdMonitor(c *conn, args [][]byte) {
	switch {
	case c.nc == nil || c.tx.executing:
		c.out.Err("MONITOR isn't allowed for DENY BLOCKING client")
		return
	case c.monitoring:
		return
	}
	q := c.pubsubState().q
	m := &c.srv.monitors
	m.mu.Lock()
	if m.conns == nil {
		m.conns = map[*conn]struct{}{}
	}
	m.conns[c] = struct{}{}
	m.n.Add(1)
	q.hold() // the lines of commands run from now on follow this reply
	m.mu.Unlock()
	c.mu.Lock() // CLIENT LIST reads it from other connections
	c.monitoring = true
	c.mu.Unlock()
	c.out.OK()
}

// stopMonitoring takes c off the monitors: RESET, or c closing.
func (c *conn) stopMonitoring() {
	if !c.monitoring { // written only by c's own goroutine
		return
	}
	m := &c.srv.monitors
	m.mu.Lock()
	delete(m.conns, c)
	m.n.Add(-1)
	m.mu.Unlock()
	c.mu.Lock()
	c.monitoring = false
	c.mu.Unlock()
}

// feedMonitors shows args, which c ran by cmd's row, to the monitors.
func (c *conn) feedMonitors(cmd *command, args [][]byte, peer string) {
	m := &c.srv.monitors
	if m.n.Load() == 0 || cmd.Role == RoleAdmin || c.applyingEntry() {
		return
	}
	line := monitorLine(time.Now(), peer, args, redacted(cmd, args))
	lim := c.srv.pubsub.limits.Load()
	m.mu.RLock()
	defer m.mu.RUnlock()
	for mc := range m.conns {
		if mc == c {
			// Its own command: the line follows its reply, as in Redis.
			c.out.b = append(c.out.b, line...)
			continue
		}
		if mc.ps.q.deliver(line, lim, time.Now) {
			continue
		}
		c.srv.pubsub.cut.Add(1)
		c.srv.log.Warn("closing a monitor over client-output-buffer-limit pubsub", "client", mc.addr)
		go mc.nc.Close() // as deliver does a subscriber (pubsub.go)
	}
}

// redacted is the arguments of args a monitor must not see (bit i: args[i]):
// AUTH's, HELLO's and MIGRATE's after AUTH or AUTH2, and the lease id of
// LOCK.RENEW and LOCK.RELEASE (a lease id is its holder's bearer token).
func redacted(cmd *command, args [][]byte) (mask uint64) {
	switch cmd.Name {
	case "auth":
		return ^uint64(1)
	case "hello":
		for i := 2; i+2 < len(args) && i < 61; i++ {
			if option(args[i]) == "auth" {
				mask |= 3 << (i + 1)
			}
		}
		return mask
	case "lock.renew", "lock.release":
		return 1 << 1
	case "migrate":
		for i := 6; i < len(args) && i < 62; i++ {
			switch option(args[i]) {
			case "auth":
				mask |= 1 << (i + 1)
			case "auth2":
				mask |= 3 << (i + 1)
			case "keys":
				return mask
			}
		}
		return mask
	}
	return 0
}

// monitorLine is one command as Redis's MONITOR shows it: a status reply
// of the time, the database and peer, and each argument quoted as
// sdscatrepr quotes it.
func monitorLine(at time.Time, peer string, args [][]byte, mask uint64) []byte {
	b := make([]byte, 0, 64+len(peer)+16*len(args))
	b = append(b, '+')
	b = strconv.AppendInt(b, at.Unix(), 10)
	b = append(b, '.')
	us := at.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(us), 10)
	b = append(b, " [0 "...)
	b = append(b, peer...)
	b = append(b, "] "...)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if i < 64 && mask&(1<<i) != 0 {
			a = []byte("(redacted)")
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// appendRepr appends s in double quotes, escaped as Redis's sdscatrepr
// escapes it: \\ \" \n \r \t \a \b, and \xNN for any other byte that is
// not printable ASCII.
func appendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}
