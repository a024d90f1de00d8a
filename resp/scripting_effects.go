package resp

import (
	"strings"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/script"
)

// A script in a cluster (SPEC §13, LOCK-18): the leader runs it once for
// its effects, and what it wrote goes through the log as one
// transaction.

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
