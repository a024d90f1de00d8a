package resp

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/script"
)

// Scripts (SPEC §13): EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as
// Redis 7 runs them, on package script's Lua engine.
//
// LOCK-18, a script is atomic: it runs inside one kv transaction
// (kv.Store.Tx, as EXEC does), so every stripe is held from its first
// command to its commit and its writes reach Pebble in one batch: one WAL
// write, and with --fsync always one fsync. A script that fails half-way
// keeps what it wrote before the failure, as in Redis; a script stopped
// by the server's shutdown commits nothing. While a script runs, every
// other client's command waits for it (dispatch calls scriptBusy), and
// once it has run busy-reply-threshold is answered -BUSY instead, but for
// the commands Redis lets through then (SCRIPT KILL, SHUTDOWN NOSAVE,
// AUTH, HELLO, MULTI, …).
//
// Inside MULTI, or applying a cluster's log entry, the connection's store
// is already a transaction's view: the script runs in that transaction.
//
// In a cluster a script replicates its effects, as Redis 7 does: the
// leader runs it once, inside Propose's check (every entry proposed before
// applied, none after in between), in a transaction that is then thrown
// away; the writes it made, in order, a write drawn at random replaced by
// what it did (SPOP by SREM), go through the log as one EXEC entry stamped
// with the instant the script ran at (routeScript). No follower runs a
// script: one that never ends stops only the leader's proposals, and
// SCRIPT KILL ends it whatever it wrote, for nothing of it is committed.
// EVAL_RO runs on the leader like every read.

// defaultBusyThreshold is Redis's busy-reply-threshold.
const defaultBusyThreshold = 5000 * time.Millisecond

const (
	errNoScript   = "No matching script. Please use EVAL."
	errBusyScript = "Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
)

// scripts is a server's script cache, its Lua engine and the script
// running.
type scripts struct {
	// mu makes scripts run one at a time (the engine is one
	// interpreter) and guards engine. It is taken with every stripe of
	// the keyspace already held, never before.
	mu     sync.Mutex
	engine *script.Engine

	cacheMu sync.Mutex                // guards cache; never held while a script runs
	cache   map[string]*script.Script // by lowercase hex SHA1

	running   atomic.Pointer[scriptRun]
	threshold atomic.Int64 // busy-reply-threshold, in ms; 0: never busy
}

// scriptRun is the script running now.
type scriptRun struct {
	conn    *conn
	start   time.Time
	done    chan struct{}
	cancel  context.CancelFunc
	wrote   atomic.Bool // it ran a write: SCRIPT KILL refuses then
	applied bool        // it is an entry of the cluster's log: never killed
	effects bool        // run for its effects on a cluster's leader: its writes are thrown away, so SCRIPT KILL may always end it
}

func (s *scripts) init() {
	s.threshold.Store(defaultBusyThreshold.Milliseconds())
}

// abort stops the script running, if any, for the server's shutdown: the
// script then commits nothing.
func (s *scripts) abort() {
	if r := s.running.Load(); r != nil {
		r.cancel()
	}
}

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

// scriptAborted is the panic that unwinds a script's transaction without
// its commit, when the server shuts down under it.
type scriptAborted struct{}

// evalDocs are the COMMAND DOCS of EVAL and its kin.
func evalDocs(since, first string) func(*command) {
	return docs(since, "Depends on the script that is executed.", argString(first), argInt("numkeys"),
		arg{Name: "key", Type: "key", Optional: true, Multiple: true}, arg{Name: "arg", Type: "string", Optional: true, Multiple: true})
}

func cmdEval(c *conn, args [][]byte)      { c.eval(args, false, false) }
func cmdEvalRO(c *conn, args [][]byte)    { c.eval(args, false, true) }
func cmdEvalSHA(c *conn, args [][]byte)   { c.eval(args, true, false) }
func cmdEvalSHARO(c *conn, args [][]byte) { c.eval(args, true, true) }

// evalKeys reads EVAL's numkeys and splits the rest into KEYS and ARGV,
// answering Redis's error when it cannot.
func (c *conn) evalKeys(args [][]byte) (keys, argv [][]byte, ok bool) {
	n, isInt := parseInt(args[2])
	switch {
	case !isInt:
		c.out.Err(errNotInteger)
	case n < 0:
		c.out.Err("Number of keys can't be negative")
	case n > int64(len(args)-3):
		c.out.Err("Number of keys can't be greater than number of args")
	default:
		return args[3 : 3+n], args[3+n:], true
	}
	return nil, nil, false
}

// script finds the script of EVAL's body or EVALSHA's sha, compiling and
// caching a new body; nil when it answered an error.
func (c *conn) script(arg []byte, bySHA bool) *script.Script {
	s := &c.srv.scripts
	sha := strings.ToLower(string(arg))
	if !bySHA {
		sha = script.SHA1Hex(arg)
	}
	s.cacheMu.Lock()
	sc := s.cache[sha]
	s.cacheMu.Unlock()
	if sc != nil {
		return sc
	}
	if bySHA {
		c.out.Error("NOSCRIPT", errNoScript)
		return nil
	}
	sc, err := script.Compile(arg)
	if err != nil {
		c.out.Err(err.Error())
		return nil
	}
	s.cacheMu.Lock()
	if s.cache == nil {
		s.cache = map[string]*script.Script{}
	}
	s.cache[sha] = sc
	s.cacheMu.Unlock()
	return sc
}

func (c *conn) eval(args [][]byte, bySHA, readOnly bool) {
	keys, argv, ok := c.evalKeys(args)
	if !ok {
		return
	}
	if bySHA && c.applyingEntry() {
		// An EVALSHA queued in a cluster's MULTI: the nodes' caches
		// differ, so no node runs it, and every node answers alike.
		c.out.Err("EVALSHA inside MULTI is not replicated in a cluster: use EVAL")
		return
	}
	sc := c.script(args[1], bySHA)
	if sc == nil {
		return
	}
	if sc.Flags().NoWrites {
		readOnly = true
	}
	if c.store != c.srv.store {
		// Inside EXEC, or applying a cluster's entry: already one
		// transaction, its stripes held.
		c.runScript(c.store, sc, keys, argv, readOnly)
		return
	}
	mark := c.out.Len()
	var aborted bool
	_, err := func() (ran bool, err error) {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(scriptAborted); !ok {
					panic(p)
				}
				aborted = true
			}
		}()
		return c.srv.store.Tx(nil, func(tx *kv.Store) {
			c.store = tx
			defer func() { c.store = c.srv.store }()
			c.runScript(tx, sc, keys, argv, readOnly)
		})
	}()
	switch {
	case aborted:
		c.out.truncate(mark)
		c.out.Err("Script killed by a server shutdown: nothing of it was written")
	case err != nil:
		// The commit failed: nothing the reply tells of happened.
		c.out.truncate(mark)
		c.storeError(err)
	}
}

// runScript runs sc on store, a transaction's view, and answers its
// result.
func (c *conn) runScript(store *kv.Store, sc *script.Script, keys, argv [][]byte, readOnly bool) {
	s := &c.srv.scripts
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine == nil {
		s.engine = c.srv.newScriptEngine()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &scriptRun{conn: c, start: time.Now(), done: make(chan struct{}), cancel: cancel, applied: c.applyingEntry(), effects: c.effects != nil}
	s.running.Store(r)
	defer func() {
		s.running.Store(nil)
		close(r.done)
	}()
	var effectsBefore int
	if c.effects != nil {
		effectsBefore = len(c.effects.cmds)
	}
	now := store.NowMs()
	caller := &scriptCaller{c: c, run: r, readOnly: readOnly, nowMs: now}
	reply := s.engine.Run(ctx, sc, keys, argv, caller, now)
	if ctx.Err() != nil && c.srv.closing.Load() && !c.applyingEntry() {
		panic(scriptAborted{})
	}
	if e := c.effects; e != nil && ctx.Err() != nil {
		// SCRIPT KILL: nothing of it was written, and nothing of it
		// replicates.
		e.cmds = e.cmds[:effectsBefore]
	}
	c.writeScriptReply(reply)
}

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

func cmdScriptLoad(c *conn, args [][]byte) {
	sc := c.script(args[2], false)
	if sc != nil {
		c.out.BulkString(sc.SHA)
	}
}

// cached is how many scripts the cache holds, for INFO.
func (s *scripts) cached() int64 {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return int64(len(s.cache))
}

func cmdScriptExists(c *conn, args [][]byte) {
	s := &c.srv.scripts
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	c.out.Array(len(args) - 2)
	for _, a := range args[2:] {
		c.out.Bool(s.cache[strings.ToLower(string(a))] != nil)
	}
}

func cmdScriptFlush(c *conn, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async")) {
		c.out.Err("SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	s := &c.srv.scripts
	s.cacheMu.Lock()
	s.cache = nil
	s.cacheMu.Unlock()
	s.mu.Lock()
	if s.engine != nil {
		s.engine.Close()
		s.engine = nil // a new interpreter at the next script
	}
	s.mu.Unlock()
	c.out.OK()
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

func cmdScriptHelp(c *conn, args [][]byte) {
	c.out.BulkStrings(
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache.",
		"KILL", "    Kill the currently executing Lua script.",
		"LOAD <script>", "    Load a script into the scripts cache without executing it.",
		"HELP", "    Print this help.",
	)
}

// busyThreshold is CONFIG SET busy-reply-threshold (alias lua-time-limit).
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

// routeScript is route's case for EVAL and EVALSHA on a cluster's leader
// (SPEC §13, LOCK-18): the script runs here, once, for its effects
// (runForEffects), inside Propose's check, and what it wrote goes through
// the log as one transaction: every node applies the same writes
// atomically, and the client is answered the script's reply from this
// run. A script that wrote nothing (it read, failed first, or SCRIPT KILL
// ended it) proposes nothing; its reply stands once a read barrier
// confirms this node still led. EVAL_RO and EVALSHA_RO read, and route
// gives them the leader's read barrier as any read.
func (c *conn) routeScript(args [][]byte) {
	keys, argv, ok := c.evalKeys(args)
	if !ok {
		return
	}
	sc := c.script(args[1], strings.EqualFold(string(args[0]), "evalsha"))
	if sc == nil {
		return
	}
	mark := c.out.Len()
	var ran bool
	decide := func(e *cluster.Entry) (bool, error) {
		ran = true
		cmds, nowMs, err := c.runForEffects(sc, keys, argv, sc.Flags().NoWrites)
		if err != nil || len(cmds) == 0 {
			return false, err
		}
		e.Cmds, e.NowMs = cmds, nowMs
		return true, nil
	}
	r, err := c.srv.cluster.Propose(c.context(), c.entry(cluster.Entry{Exec: true, Proto: 2}), decide)
	if err == nil && r == nil && ran {
		err = c.srv.cluster.ReadBarrier(c.context()) // it only read: was this still the leader?
	}
	if err != nil {
		c.out.truncate(mark)
		c.clusterError(nil, args, err)
	}
}

// scriptEffects is what a script run for its effects wrote, in order, as
// the commands that redo it, and the instant it ran at.
type scriptEffects struct {
	cmds  [][][]byte
	nowMs int64
}

// record adds a write a script's redis.call ran, given its reply: as it
// was called, or, when its row's outcome is drawn at random, as the row
// says it is redone.
func (e *scriptEffects) record(cmd *command, args [][]byte, reply script.Reply) {
	if cmd.drawn != nil {
		e.cmds = append(e.cmds, cmd.drawn(args, reply)...)
		return
	}
	q := make([][]byte, len(args))
	for i, a := range args {
		q[i] = append([]byte(nil), a...)
	}
	e.cmds = append(e.cmds, q)
}

// effectsDiscarded unwinds a transaction run for its effects without its
// commit.
type effectsDiscarded struct{}

// runForEffects runs sc on the leader's store for its effects (see
// effects), answers its reply, and returns the writes it made and the
// instant it ran at: none when SCRIPT KILL or the shutdown stopped it.
func (c *conn) runForEffects(sc *script.Script, keys, argv [][]byte, readOnly bool) (cmds [][][]byte, nowMs int64, err error) {
	_, cmds, nowMs, err = c.effectsOf(nil, func(tx *kv.Store) { c.runScript(tx, sc, keys, argv, readOnly) })
	return cmds, nowMs, err
}

// effectsOf runs fn in a transaction on the leader's store that is then
// thrown away, recording the writes fn's commands make (scriptCaller.Call,
// proposeExec), and returns them with the instant they ran at. fn's
// writes are visible to its own later reads, and to nobody else: other
// clients wait for it or are answered -BUSY (scriptBusy), as on a single
// server. With w not nil and broken, fn does not run (ran false).
func (c *conn) effectsOf(w *kv.Watch, fn func(tx *kv.Store)) (ran bool, cmds [][][]byte, nowMs int64, err error) {
	mark := c.out.Len()
	var aborted bool
	func() {
		defer func() {
			switch p := recover(); p.(type) {
			case nil:
			case effectsDiscarded:
				ran = true
			case scriptAborted:
				aborted = true
			default:
				panic(p)
			}
		}()
		_, err = c.srv.store.Tx(w, func(tx *kv.Store) {
			c.store, c.effects = tx, &scriptEffects{nowMs: tx.NowMs()}
			defer func() { c.store = c.srv.store }()
			fn(tx)
			panic(effectsDiscarded{})
		})
	}()
	e := c.effects
	c.effects = nil
	c.readyKeys = nil // what it pushed was thrown away: nobody is woken by it
	switch {
	case aborted:
		c.out.truncate(mark)
		c.out.Err("Script killed by a server shutdown: nothing of it was written")
		return true, nil, 0, nil
	case err != nil || !ran:
		c.out.truncate(mark)
		return false, nil, 0, err
	}
	return true, e.cmds, e.nowMs, nil
}

// spopEffect is SPOP's effect in a script (the row's drawn): SREM of the
// members it popped, as Redis replicates it; nothing when it popped none.
func spopEffect(args [][]byte, reply script.Reply) [][][]byte {
	members := []script.Reply{reply}
	if reply.Kind == script.Array || reply.Kind == script.Set {
		members = reply.Elems
	}
	q := [][]byte{[]byte("srem"), append([]byte(nil), args[1]...)}
	for _, m := range members {
		if m.Kind == script.Bulk {
			q = append(q, []byte(m.Str))
		}
	}
	if len(q) == 2 {
		return nil
	}
	return [][][]byte{q}
}

// drawnAs sets a row's drawn (see command).
func drawnAs(f func(args [][]byte, reply script.Reply) [][][]byte) func(*command) {
	return func(c *command) { c.drawn = f }
}
