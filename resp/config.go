package resp

import (
	"log/slog"
	"math"
	"strings"
)

// CONFIG: the settings this server has. save and appendonly answer what
// redis-benchmark asks at start, so it prints no warning.

func (s *Server) configValues() [][2]string {
	host, port := "", ""
	if a := s.Addr(); a != nil {
		host, port, _ = splitHostPort(a.String())
	}
	l := s.store.EncodingLimits()
	save := ""
	if p := s.saveParam.Load(); p != nil {
		save = *p
	}
	level := "info"
	if s.cfg.LogLevel != nil {
		level = strings.ToLower(s.cfg.LogLevel.Level().String())
	}
	return append([][2]string{
		{"bind", host},
		{"port", port},
		{"dir", s.cfg.Dir},
		{"appendonly", "yes"},
		{"appendfsync", s.cfg.Fsync.String()},
		{"save", save},
		{"databases", "1"},
		{"maxclients", itoa(s.maxClients.Load())},
		{"proto-max-bulk-len", itoa(s.cfg.Limits.MaxBulkLen)},
		{"timeout", "0"},
		{"loglevel", level},
		{"busy-reply-threshold", itoa(s.scripts.threshold.Load())},
		{"lua-time-limit", itoa(s.scripts.threshold.Load())},
		{"hash-max-listpack-entries", itoa(l.HashMaxListpackEntries)},
		{"hash-max-ziplist-entries", itoa(l.HashMaxListpackEntries)},
		{"hash-max-listpack-value", itoa(l.HashMaxListpackValue)},
		{"hash-max-ziplist-value", itoa(l.HashMaxListpackValue)},
		{"set-max-intset-entries", itoa(l.SetMaxIntsetEntries)},
		{"notify-keyspace-events", notifyClass(s.pubsub.notify.Load()).String()},
		{"client-output-buffer-limit", s.pubsub.limits.Load().String()},
	}, s.collectionConfigValues()...)
}

// cmdConfigGet is CONFIG GET pattern [pattern ...], as Redis 7.2 answers
// it: a name without glob characters is looked up in any case and answered
// as the client spelled it; a pattern matches names in any case; each
// setting is answered once.
func cmdConfigGet(c *conn, args [][]byte) {
	values := c.srv.configValues()
	var out []string
	seen := map[string]bool{}
	for _, a := range args[2:] {
		p := cString(a, len(a))
		if !strings.ContainsAny(p, "[*?") {
			name := strings.ToLower(p)
			for _, v := range values {
				if v[0] == name && !seen[name] {
					seen[name] = true
					out = append(out, p, v[1])
				}
			}
			continue
		}
		for _, v := range values {
			if !seen[v[0]] && globMatch(p, v[0]) {
				seen[v[0]] = true
				out = append(out, v[0], v[1])
			}
		}
	}
	c.out.Map(len(out) / 2)
	for _, s := range out {
		c.out.BulkString(s)
	}
}

// cmdConfigSet is CONFIG SET name value [name value ...]: every pair is
// checked before any is applied, as Redis does.
func cmdConfigSet(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.syntaxError()
		return
	}
	var apply []func()
	seen := map[string]bool{}
	for i := 2; i < len(args); i += 2 {
		name, val := strings.ToLower(string(args[i])), string(args[i+1])
		failed := func(why string) {
			c.out.Err("CONFIG SET failed (possibly related to argument '" + cString(args[i], len(args[i])) + "') - " + why)
		}
		if seen[name] {
			failed("duplicate parameter")
			return
		}
		seen[name] = true
		switch name {
		case "maxclients":
			n, ok := parseInt(args[i+1])
			if !ok {
				failed("argument couldn't be parsed into an integer")
				return
			}
			if n < 1 || n > math.MaxUint32 {
				failed("argument must be between 1 and 4294967295 inclusive")
				return
			}
			apply = append(apply, func() { c.srv.maxClients.Store(n) })
		case "busy-reply-threshold", "lua-time-limit":
			set, why := c.srv.scripts.setThreshold(args[i+1])
			if why != "" {
				failed(why)
				return
			}
			apply = append(apply, set)
		case "notify-keyspace-events":
			f, ok := parseNotify(val)
			if !ok {
				failed("Invalid event class character. Use 'Ag$lshzxeKEtmdnL'.")
				return
			}
			apply = append(apply, func() { c.srv.setNotify(f) })
		case "client-output-buffer-limit":
			lim, why := parseObufLimits(c.srv.pubsub.limits.Load(), val)
			if why != "" {
				failed(why)
				return
			}
			apply = append(apply, func() { c.srv.pubsub.limits.Store(lim) })
		case "loglevel":
			var l slog.Level
			switch strings.ToLower(val) {
			case "debug":
				l = slog.LevelDebug
			case "info", "verbose", "notice":
				l = slog.LevelInfo
			case "warn", "warning":
				l = slog.LevelWarn
			case "error":
				l = slog.LevelError
			default:
				failed("argument(s) must be one of the following: debug, info, warn, error")
				return
			}
			if c.srv.cfg.LogLevel != nil {
				apply = append(apply, func() { c.srv.cfg.LogLevel.Set(l) })
			}
		case "save":
			// Accepted as Redis reads it, and kept: tenure has no
			// snapshots to schedule (see Server.saveParam).
			f := strings.Fields(val)
			if len(f)%2 != 0 {
				failed("Invalid save parameters")
				return
			}
			for _, n := range f {
				if v, ok := parseInt([]byte(n)); !ok || v < 0 {
					failed("Invalid save parameters")
					return
				}
			}
			v := strings.Join(f, " ")
			apply = append(apply, func() { c.srv.saveParam.Store(&v) })
		case "hash-max-listpack-entries", "hash-max-ziplist-entries", "hash-max-listpack-value", "hash-max-ziplist-value", "set-max-intset-entries":
			// The sizes OBJECT ENCODING answers by (kv.EncodingLimits).
			n, ok := parseInt(args[i+1])
			if !ok {
				failed("argument couldn't be parsed into an integer")
				return
			}
			if n < 0 {
				failed("argument must be between 0 and 9223372036854775807 inclusive")
				return
			}
			apply = append(apply, func() {
				l := c.srv.store.EncodingLimits()
				switch name {
				case "save":
					// Accepted as Redis reads it, and kept: tenure has no
					// snapshots to schedule (see Server.saveParam).
					f := strings.Fields(val)
					if len(f)%2 != 0 {
						failed("Invalid save parameters")
						return
					}
					for _, n := range f {
						if v, ok := parseInt([]byte(n)); !ok || v < 0 {
							failed("Invalid save parameters")
							return
						}
					}
					v := strings.Join(f, " ")
					apply = append(apply, func() { c.srv.saveParam.Store(&v) })
				case "hash-max-listpack-entries", "hash-max-ziplist-entries":
					l.HashMaxListpackEntries = n
				case "hash-max-listpack-value", "hash-max-ziplist-value":
					l.HashMaxListpackValue = n
				default:
					l.SetMaxIntsetEntries = n
				}
				c.srv.store.SetEncodingLimits(l)
			})
		default:
			set, why, known := c.srv.collectionConfigSet(name, args[i+1])
			if known {
				if why != "" {
					failed(why)
					return
				}
				apply = append(apply, set)
				break
			}
			c.out.Err("Unknown option or number of arguments for CONFIG SET - '" + cString(args[i], len(args[i])) + "'")
			return
		}
	}
	for _, f := range apply {
		f()
	}
	c.out.OK()
}

func cmdConfigResetStat(c *conn, args [][]byte) {
	st := &c.srv.stats
	st.connectionsTotal.Store(0)
	st.commandsTotal.Store(0)
	st.rejectedConns.Store(0)
	st.authFailures.Store(0)
	st.errorReplies.Store(0)
	st.errors.reset()
	st.netInput.Store(0)
	st.netOutput.Store(0)
	st.heapPeak.Store(0)
	c.srv.pubsub.cut.Store(0)
	c.store.ResetStats()
	for _, row := range c.srv.rows() {
		if row.metrics != nil {
			row.metrics.resetStat()
		}
	}
	c.out.OK()
}

func cmdConfigHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value> (maxclients, loglevel, busy-reply-threshold,",
		"    notify-keyspace-events, client-output-buffer-limit).",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"HELP", "    Print this help.",
	)
}
