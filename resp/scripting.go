package resp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

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

// scriptAborted is the panic that unwinds a script's transaction without
// its commit, when the server shuts down under it.
type scriptAborted struct{}

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
