package resp

import (
	"bytes"
	"strings"
	"time"
)

// Dispatch: a request's name is looked up in the command table, its arity
// and the connection's role are checked here, once, and only then does the
// handler run. Handlers never check either.
//
// A row runs by one of two paths. dispatch is a client's request (from a
// socket, or Server.Do): inside MULTI it is queued, and in a cluster it is
// routed (routing.go) before its handler runs. call is a row run for a
// caller that has already done both for the whole it belongs to: an entry
// of the log (Server.Apply), and a script's redis.call.

// exec runs one request and counts it, by the row that answered and by
// its reply's code word (see metrics.done), and returns when it ended. It
// is timed from c.lastEnd when run set it, the end of the request before
// it in the same read batch: a pipeline's requests read the clock once
// each, not twice.
func (c *conn) exec(args [][]byte) (end time.Time) {
	start := c.lastEnd
	if start.IsZero() {
		start = time.Now()
	}
	c.lastEnd = time.Time{} // requests that EXEC runs time themselves
	mark := c.out.Len()
	c.srv.stats.commandsTotal.Add(1)
	skip := c.replyMode == replySkip // armed by the CLIENT REPLY SKIP before
	if skip {
		c.replyMode = replyOn
	}
	cmd := c.dispatch(args)
	c.serveReady() // blocking.go: clients blocked on what it pushed
	end = c.counted(cmd, start, mark)
	// CLIENT REPLY OFF or SKIP: the reply is dropped, but for the
	// confirmations of (un)subscribing, which Redis pushes regardless.
	if (skip || c.replyMode == replyOff) && (cmd == nil || cmd.Flags&flagPush == 0) {
		c.out.truncate(mark)
	}
	if c.ps != nil {
		c.ps.q.resp3.Store(c.out.resp3) // HELLO may have switched it
	}
	return end
}

// counted counts a request that started at start and whose reply begins
// at mark, by the row that answered (nil: none did) and by its reply's
// code word, and returns when it ended.
func (c *conn) counted(cmd *command, start time.Time, mark int) (end time.Time) {
	reply := c.out.b[mark:]
	if len(reply) > 0 && reply[0] == '-' {
		c.srv.stats.errorReplies.Add(1)
		c.srv.stats.errors.add(reply)
	}
	end = time.Now()
	c.srv.metrics.doneAt(cmd, start, end, reply)
	return end
}

// dispatch looks a request up in the command table and checks arity and
// role once, here, before its handler runs; inside MULTI it queues the
// request instead (see transactions.go). It returns the row that answered,
// nil for an unknown command.
func (c *conn) dispatch(args [][]byte) *command {
	cmd, ok := c.admit(args)
	switch {
	case !ok:
		c.tx.refused() // Redis: a request refused while queueing discards the transaction
	case c.subscribedRESP2() && cmd.Flags&(flagPush|flagSubscribed) == 0:
		// RESP2's subscribed mode (pubsub.go), as Redis 7 refuses.
		c.out.Err("Can't execute '" + cmd.Name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		cmd.rejected()
		c.tx.refused()
	case c.monitoring && cmd.Effect&(effRead|effWrite|effScript|effQueue) != 0:
		// Redis refuses a monitor, which it counts as a replica, any
		// command that reads or writes (monitor.go).
		c.out.Err("Replica can't interact with the keyspace")
		cmd.rejected()
		c.tx.refused()
	case c.scriptBusy(cmd, args):
		// resp/scripting.go: another client's script ran past busy-reply-threshold
	case c.tx.queueing && cmd.Flags&FlagNoMulti != 0:
		c.out.Err("Command not allowed inside a transaction")
		cmd.rejected()
		c.tx.refused()
	case c.tx.queueing && cmd.Flags&FlagNotQueued == 0:
		if !c.tx.queue(args) {
			c.out.Err("the transaction is over " + itoa(maxQueuedBytes) + " bytes")
			c.tx.refused()
			break
		}
		c.out.Status("QUEUED")
	default:
		c.lastCmd.Store(cmd)
		if cmd.Effect&effScript != 0 {
			c.feedMonitors(cmd, args, c.addr) // before the commands its script calls
		} else {
			defer c.feedMonitors(cmd, args, c.addr)
		}
		if c.srv.cluster != nil && c.route(cmd, args) {
			break // routing.go: redirected, or through the log
		}
		cmd.Handler(c, args)
	}
	return cmd
}

// call runs the row args names on c, a caller (Server.caller), with the
// same admission as dispatch (arity, and c's role: a script runs as its
// caller's role, an entry of the log as admin) and the same count in the
// metrics, but never queued in MULTI and never routed: whoever calls it
// decided where the whole runs. Its reply is appended to what c recorded.
// A handler that panics is answered as run answers it, and call reports
// false: the caller should stop there.
func (c *conn) call(args [][]byte) (ok bool) {
	mark := c.out.Len()
	defer func() {
		if p := recover(); p != nil {
			c.panicked(args, mark, p)
			ok = false
		}
	}()
	start := time.Now()
	c.srv.stats.commandsTotal.Add(1)
	cmd, admitted := c.admit(args)
	if admitted {
		c.lastCmd.Store(cmd)
		cmd.Handler(c, args)
	}
	c.counted(cmd, start, mark)
	return true
}

// admit finds a request's row and checks its arity and the connection's
// role, answering the error when one fails: then ok is false.
func (c *conn) admit(args [][]byte) (cmd *command, ok bool) {
	cmd, c.looked = c.looked, nil
	if cmd == nil {
		cmd = lookup(c.srv.table, args[0])
	}
	if cmd == nil {
		c.out.Err(unknownCommand(args))
		return nil, false
	}
	if !arityOK(cmd.Arity, len(args)) {
		c.wrongArity(cmd.Name)
		return cmd.rejected(), false
	}
	// A container with arity -1 (COMMAND) runs its own handler when no
	// subcommand is named, as Redis does.
	if cmd.Subcommands != nil && len(args) > 1 {
		sub := lookup(cmd.Subcommands, args[1])
		if sub == nil {
			c.out.Err("unknown subcommand '" + cut128(args[1]) + "'. Try " + strings.ToUpper(cmd.Name) + " HELP.")
			return cmd.rejected(), false
		}
		if !arityOK(sub.Arity, len(args)) {
			c.wrongArity(sub.Name)
			return sub.rejected(), false
		}
		cmd = sub
	}
	// Before AUTH only FlagNoAuth commands run, whatever a row's Role says,
	// so a row added without thought is closed, not open.
	switch {
	case c.role == RoleNone && cmd.Flags&FlagNoAuth == 0:
		c.out.Error("NOAUTH", "Authentication required.")
		return cmd.rejected(), false
	case c.role != RoleNone && c.role < cmd.Role:
		c.out.Error("NOPERM", "this user has no permissions to run the '"+cmd.Name+"' command")
		return cmd.rejected(), false
	}
	return cmd, true
}

func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// unknownCommand is Redis's text, args quoted and cut to about 128 bytes.
// Like Redis's "%.128s" it counts bytes, not characters.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		n := 128 - b.Len()
		b.WriteByte('\'')
		b.WriteString(cString(a, n))
		b.WriteString("' ")
	}
	return "unknown command '" + cut128(args[0]) + "', with args beginning with: " + b.String()
}

// cut128 is an argument as Redis's "%.128s" prints it.
func cut128(b []byte) string { return cString(b, 128) }

// cString is b as C's "%.*s" prints it: up to the first NUL, at most n
// bytes.
func cString(b []byte, n int) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b[:min(len(b), n)])
}

// wrongArity is Redis's text for a request with too few or too many
// arguments, spelled here only.
func (c *conn) wrongArity(name string) {
	c.out.Err("wrong number of arguments for '" + name + "' command")
}

func (c *conn) syntaxError() { c.out.Err(errSyntax) }

// lookup finds a command by name, in any case, without allocating.
func lookup(table map[string]*command, name []byte) *command {
	if c, ok := table[string(name)]; ok {
		return c
	}
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return table[string(buf[:len(name)])]
}
