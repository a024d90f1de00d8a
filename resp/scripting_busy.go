package resp

import (
	"strings"
	"time"
)

// A script that runs long (SPEC §13): every other client's command waits
// for it, and once it has run busy-reply-threshold is answered -BUSY,
// but for what Redis lets through then; SCRIPT KILL ends it if it has
// written nothing.

// defaultBusyThreshold is Redis's busy-reply-threshold.
const defaultBusyThreshold = 5000 * time.Millisecond

// errBusyScript answers a command that meets a script running past
// busy-reply-threshold.
const errBusyScript = "Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

// scriptBusy is dispatch's hook: while another client's script runs, a
// command waits for it to end; once the script has run past
// busy-reply-threshold, it is answered -BUSY instead (and scriptBusy
// reports true), unless Redis lets it run during a busy script.
func (c *conn) scriptBusy(cmd *command, args [][]byte) bool {
	s := &c.srv.scripts
	for {
		r := s.running.Load()
		if r == nil || r.conn == c || allowedWhileBusy(cmd, args) {
			return false
		}
		threshold := time.Duration(s.threshold.Load()) * time.Millisecond
		if threshold <= 0 {
			<-r.done
			continue
		}
		wait := time.Until(r.start.Add(threshold))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.done:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		select {
		case <-r.done:
			continue
		default:
		}
		if cmd.Effect&effQueue != 0 && c.tx.queueing {
			// EXEC itself met the script: as Redis, the transaction is
			// discarded whole, and EXEC says why.
			c.endTx()
			c.out.Error("EXECABORT", "Transaction discarded because of: BUSY "+errBusyScript)
			return true
		}
		c.out.Error("BUSY", errBusyScript)
		c.tx.refused() // as Redis: a MULTI that met -BUSY answers EXECABORT
		return true
	}
}

// allowedWhileBusy are the commands Redis 7 flags allow-busy.
func allowedWhileBusy(cmd *command, args [][]byte) bool {
	switch cmd.Name {
	case "auth", "hello", "quit", "reset", "multi", "discard", "watch", "unwatch", "script|kill":
		return true
	case "shutdown":
		for _, a := range args[1:] {
			if strings.EqualFold(string(a), "nosave") {
				return true
			}
		}
	}
	return false
}

// setThreshold is CONFIG SET busy-reply-threshold (alias lua-time-limit).
func (s *scripts) setThreshold(val []byte) (apply func(), why string) {
	n, ok := parseInt(val)
	if !ok {
		return nil, "argument couldn't be parsed into an integer"
	}
	if n < 0 {
		return nil, "argument must be between 0 and 9223372036854775807 inclusive"
	}
	return func() { s.threshold.Store(n) }, ""
}

func cmdScriptKill(c *conn, args [][]byte) {
	r := c.srv.scripts.running.Load()
	switch {
	case r == nil || r.conn == c:
		c.out.Error("NOTBUSY", "No scripts in execution right now.")
	case r.applied:
		c.out.Error("UNKILLABLE", "The busy script was sent by a master instance in the context of replication and cannot be killed.")
	case r.wrote.Load() && !r.effects:
		c.out.Error("UNKILLABLE", "Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	default:
		r.cancel()
		c.out.OK()
	}
}
