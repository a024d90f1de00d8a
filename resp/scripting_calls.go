package resp

import (
	"math"
	"strconv"
	"strings"

	"github.com/tenure-db/tenure/script"
)

// The bridge between a script and the server: the Lua engine, a script's
// redis.call and redis.pcall run through the command table with the
// caller's role, and a script's reply spelled in the connection's
// protocol.

func (s *Server) newScriptEngine() *script.Engine {
	major, minor, patch := 0, 0, 0
	parts := strings.SplitN(RedisVersion, ".", 3)
	for i, p := range parts {
		n, _ := strconv.Atoi(p)
		switch i {
		case 0:
			major = n
		case 1:
			minor = n
		case 2:
			patch = n
		}
	}
	return script.New(script.Options{
		Version:    RedisVersion,
		VersionNum: major<<16 | minor<<8 | patch,
		Log: func(level int, msg string) {
			switch level {
			case script.LogWarning:
				s.log.Warn(msg, "source", "script")
			case script.LogNotice:
				s.log.Info(msg, "source", "script")
			default:
				s.log.Debug(msg, "source", "script")
			}
		},
	})
}

// scriptCaller runs a script's redis.call through the command table, as
// the script's caller may.
type scriptCaller struct {
	c        *conn
	run      *scriptRun
	readOnly bool
	nowMs    int64
}

// resolve finds args' row as dispatch would, or Redis's error for a
// script.
func (sc *scriptCaller) resolve(args [][]byte) (*command, string) {
	cmd := lookup(sc.c.srv.table, args[0])
	if cmd == nil {
		return nil, "Unknown Redis command called from script"
	}
	if !arityOK(cmd.Arity, len(args)) {
		return nil, "Wrong number of args calling Redis command from script"
	}
	if cmd.Flags&FlagNoScript != 0 {
		return nil, "This Redis command is not allowed from script"
	}
	if cmd.Subcommands != nil && len(args) > 1 {
		if cmd = lookup(cmd.Subcommands, args[1]); cmd == nil {
			return nil, "Unknown Redis command called from script"
		}
		if !arityOK(cmd.Arity, len(args)) {
			return nil, "Wrong number of args calling Redis command from script"
		}
	}
	// A lock command is refused too (SPEC §13): MULTI is how a renewal
	// and a fenced write go together.
	// A blocking pop runs, never blocking (resp/blocking.go), as Redis
	// runs it in a script.
	if cmd.Handler == nil || cmd.Effect&(effLocks|effScript) != 0 ||
		cmd.Flags&(FlagNoScript|FlagNotQueued|FlagNoMulti) != 0 {
		return nil, "This Redis command is not allowed from script"
	}
	if sc.c.srv.cluster != nil && cmd.Flags&flagNodeAnswer != 0 {
		// The leader's answer would decide writes the followers apply
		// (RANDOMKEY then DEL): kept refused, as before effects.
		return nil, "This Redis command is not allowed from script in a cluster: its answer differs from node to node"
	}
	return cmd, ""
}

func (sc *scriptCaller) Permitted(args [][]byte) (allowed, known bool) {
	cmd := lookup(sc.c.srv.table, args[0])
	if cmd == nil {
		return false, false
	}
	if cmd.Subcommands != nil && len(args) > 1 {
		if sub := lookup(cmd.Subcommands, args[1]); sub != nil {
			cmd = sub
		}
	}
	return sc.c.role >= cmd.Role, true
}

func (sc *scriptCaller) Call(args [][]byte, resp int) (r script.Reply) {
	c := sc.c
	cmd, why := sc.resolve(args)
	switch {
	case cmd == nil:
		return script.ErrReply("ERR " + why)
	case c.role < cmd.Role: // SPEC §5, §13: the caller's role, inside the script too
		return script.ErrReply("NOPERM this user has no permissions to run the '" + cmd.Name + "' command")
	case cmd.writes() && sc.readOnly:
		return script.ErrReply("ERR Write commands are not allowed from read-only scripts.")
	}
	if cmd.writes() {
		sc.run.wrote.Store(true)
	}
	if e := c.effects; e != nil && cmd.replicated() {
		// Recorded once it has run: SPOP's members are known then.
		defer func() { e.record(cmd, args, r) }()
	}
	if cmd.Name == "time" {
		// The script's instant, the same on every node of a cluster.
		return script.Reply{Kind: script.Array, Elems: []script.Reply{
			{Kind: script.Bulk, Str: itoa(sc.nowMs / 1000)},
			{Kind: script.Bulk, Str: itoa(sc.nowMs % 1000 * 1000)},
		}}
	}
	// The command replies into the connection's buffer, in the
	// script's protocol, and the reply is read back from there.
	mark, resp3, v := c.out.Len(), c.out.resp3, c.out.v
	c.out.resp3, c.out.v = resp == 3, nil
	defer func() {
		c.out.b = c.out.b[:mark]
		c.out.resp3, c.out.v = resp3, v
	}()
	cmd.Handler(c, args)
	c.feedMonitors(cmd, args, "lua")
	r, _, err := script.ParseRESP(c.out.b[mark:])
	if err != nil {
		return script.ErrReply("ERR " + err.Error())
	}
	return r
}

// writeScriptReply answers a script's result in the connection's protocol.
func (c *conn) writeScriptReply(r script.Reply) {
	o := &c.out
	switch r.Kind {
	case script.Null, script.NullBulk:
		o.Null()
	case script.NullArray:
		o.NullArray()
	case script.Status:
		o.Status(r.Str)
	case script.Error:
		code, msg, _ := strings.Cut(r.Str, " ")
		o.Error(code, msg)
	case script.Int:
		o.Int(r.Int)
	case script.Bulk:
		o.BulkString(r.Str)
	case script.Array, script.Set, script.Map:
		switch r.Kind {
		case script.Array:
			o.Array(len(r.Elems))
		case script.Set:
			o.Set(len(r.Elems))
		default:
			o.Map(len(r.Elems) / 2)
		}
		for _, e := range r.Elems {
			c.writeScriptReply(e)
		}
	case script.Double:
		s := formatDouble(r.Float)
		switch {
		case o.v != nil:
			o.v.add(r.Float)
		case o.resp3:
			o.b = append(append(append(o.b, ','), s...), '\r', '\n')
		default:
			o.BulkString(s)
		}
	case script.Bool:
		switch {
		case o.resp3 && o.v == nil:
			if r.Int != 0 {
				o.b = append(o.b, "#t\r\n"...)
			} else {
				o.b = append(o.b, "#f\r\n"...)
			}
		default:
			o.Int(r.Int)
		}
	case script.BigNum:
		if o.resp3 && o.v == nil {
			o.b = appendLine(append(o.b, '('), r.Str)
			o.b = append(o.b, '\r', '\n')
		} else {
			o.BulkString(r.Str)
		}
	case script.Verbatim:
		if o.resp3 && o.v == nil {
			o.b = appendHeader(o.b, '=', len(r.Str)+4)
			o.b = append(append(append(o.b, r.Format...), ':'), r.Str...)
			o.b = append(o.b, '\r', '\n')
		} else {
			o.BulkString(r.Str)
		}
	default:
		o.Null()
	}
}

// formatDouble spells a double as Redis's addReplyDouble.
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
