package resp

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/script"
)

// A request in a cluster (SPEC §10). Package cluster keeps the Raft log
// and implements Cluster; this file is what the RESP side does with a
// client's request there, from its row's effect alone (table.go): -MOVED
// to the leader, a write through the log, a read confirmed by the leader.
// How an entry of the log is applied on every node is apply.go's.

// Cluster is what a Server in a cluster asks of its node (a
// *cluster.Node; package cluster documents each method).
type Cluster interface {
	// Leader is the client address of the node that leads, "" while none
	// is known, and whether that node is this one.
	Leader() (addr string, self bool)
	// Propose replicates e and returns what this node's Server.Apply
	// answered for it; with check, EXEC's WATCH is decided between the
	// entries before and e, and a script run for its effects, which check
	// leaves in e. cluster.ErrNotLeader: this node does not lead.
	Propose(ctx context.Context, e cluster.Entry, check func(e *cluster.Entry) (bool, error)) (any, error)
	// ReadBarrier returns once this node has confirmed it still leads and
	// has applied everything committed before the call.
	ReadBarrier(ctx context.Context) error
	// LocksReady reports whether this node leads and its epoch entry is
	// applied: only then may LOCK.* run (LOCK-14).
	LocksReady() bool
	// Status describes the cluster as this node sees it, for CLUSTER,
	// ROLE and INFO.
	Status() cluster.Status
	// Meet adds the node listening at addr as a voter; Forget removes
	// the node id. Both only on the leader.
	Meet(ctx context.Context, addr string) error
	Forget(ctx context.Context, id string) error
}

// route is dispatch's hook in a cluster, before a handler runs, and it
// reads only the row's effect (table.go): it answers the request itself
// (and reports true) when the request is for the leader and this node is
// not it, when it is a write that goes through the log, or when LOCK.*
// must wait for the epoch; a read on the leader it lets through once the
// leader has confirmed it leads. A node-local row (SPEC §10: PING, AUTH,
// HELLO, QUIT, INFO, ROLE, COMMAND, CLIENT, CLUSTER) runs where it is.
func (c *conn) route(cmd *command, args [][]byte) bool {
	if cmd.Effect&effLocal != 0 || c.effects != nil && cmd.Effect&effLocks == 0 {
		// c.effects: a queue the leader runs for its effects
		// (proposeExecEffects), whose writes are recorded, not proposed.
		return false
	}
	cl := c.srv.cluster
	addr, self := cl.Leader()
	if !self {
		c.redirect(cmd, args, addr)
		if cmd.Flags&flagPush != 0 {
			// A subscriber on a node that does not lead would wait for
			// messages that never come here (SPEC §13): closing after the
			// -MOVED makes its client reconnect where its cluster state
			// now points, as it does when a leader drops its subscribers.
			c.closing = true
		}
		return true
	}
	switch {
	case cmd.Effect&effLocks != 0:
		if !cl.LocksReady() {
			c.out.Error("TRYAGAIN", "this leader's new epoch is not applied yet, or a majority has not confirmed it leads")
			return true
		}
		return false
	case cmd.Effect&effQueue != 0:
		if !c.tx.queueing || c.tx.discarded {
			return false // EXEC's own errors
		}
		c.proposeExec()
		return true
	case cmd.Effect == effScript:
		c.routeScript(args) // scripting.go
		return true
	case cmd.Effect&effBlock != 0:
		return false // its handler proposes each attempt (blocking.go)
	case cmd.replicated():
		c.propose(cluster.Entry{Cmds: [][][]byte{args}}, nil)
		return true
	case cmd.readsKeys():
		if err := cl.ReadBarrier(c.context()); err != nil {
			c.clusterError(cmd, args, err)
			return true
		}
	}
	return false
}

// proposeExec proposes a transaction's queue as one entry. Its WATCH is
// decided here, on the leader, once every write proposed before it has
// applied: the entry itself is applied unconditionally on every node.
// LOCK.* in the queue act on the leader's lock module at once, as in a
// single server (transactions.go), in the same window: after every write
// proposed before has applied and before any proposed after, so
// MULTI; LOCK.RENEW id; SET k v FENCE f; EXEC keeps its meaning.
//
// A queue holding a script runs for its effects instead
// (proposeExecEffects): no node but the leader runs a script.
func (c *conn) proposeExec() {
	queued := c.tx.queued
	c.tx.queueing, c.tx.queued = false, nil // what runs now runs, as in cmdExec
	isLock := make([]bool, len(queued))
	var writes [][][]byte
	for i, q := range queued {
		cmd := lookup(c.srv.table, q[0])
		switch {
		case cmd != nil && cmd.Effect&effScript != 0:
			c.proposeExecEffects(queued)
			return
		case cmd != nil && cmd.Effect&effLocks != 0:
			isLock[i] = true
		default:
			writes = append(writes, q)
		}
	}
	var lockReplies [][]byte
	runLocks := func() {
		c.tx.executing = true
		defer func() { c.tx.executing = false }()
		for i, q := range queued {
			if isLock[i] {
				mark := c.out.Len()
				c.exec(q)
				lockReplies = append(lockReplies, append([]byte(nil), c.out.b[mark:]...))
				c.out.truncate(mark)
			}
		}
	}
	watched := c.tx.watch.Len() > 0
	check := func(*cluster.Entry) (bool, error) {
		if watched {
			broken, err := c.srv.store.WatchBroken(&c.tx.watch)
			if err != nil || broken {
				return false, err
			}
		}
		runLocks()
		return true, nil
	}
	defer c.endTx()
	if len(writes) == len(queued) && !watched {
		check = nil
	}
	if len(writes) == 0 {
		if ok, err := check(nil); err != nil {
			c.storeError(err)
			return
		} else if !ok {
			c.out.NullArray()
			return
		}
		c.out.Array(len(queued))
		for _, r := range lockReplies {
			c.out.b = append(c.out.b, r...)
		}
		return
	}
	r, err := c.srv.cluster.Propose(c.context(), c.entry(cluster.Entry{Exec: true, Cmds: writes}), check)
	switch {
	case err != nil:
		c.clusterError(nil, queued[0], err)
		return
	case r == nil:
		c.out.NullArray()
		return
	}
	parts := r.(applied).parts
	c.out.Array(len(queued))
	for i := range queued {
		if isLock[i] {
			c.out.b, lockReplies = append(c.out.b, lockReplies[0]...), lockReplies[1:]
		} else if len(parts) > 0 {
			c.out.b, parts = append(c.out.b, parts[0]...), parts[1:]
		} else {
			c.out.Err("not run: a command before it failed") // its handler panicked on the log
		}
	}
}

// proposeExecEffects is proposeExec for a queue that holds a script
// (SPEC §13, LOCK-18): inside Propose's check the leader runs the whole
// queue as EXEC does, WATCH included, in a transaction that is thrown
// away (effectsOf), recording each write, a script's by its calls; those
// writes go through the log as one EXEC entry stamped with the instant
// the queue ran at, and the client is answered the replies of the
// leader's run.
func (c *conn) proposeExecEffects(queued [][][]byte) {
	defer c.endTx()
	var w *kv.Watch
	if c.tx.watch.Len() > 0 {
		w = &c.tx.watch
	}
	mark := c.out.Len()
	var ran bool
	decide := func(e *cluster.Entry) (bool, error) {
		var cmds [][][]byte
		var err error
		ran, cmds, e.NowMs, err = c.effectsOf(w, func(*kv.Store) {
			c.tx.executing = true
			defer func() { c.tx.executing = false }()
			c.out.Array(len(queued))
			for _, q := range queued {
				cmd := lookup(c.srv.table, q[0])
				at := c.out.Len()
				c.exec(q)
				if cmd != nil && cmd.Effect&effScript == 0 && cmd.replicated() {
					var reply script.Reply
					if cmd.drawn != nil {
						reply, _, _ = script.ParseRESP(c.out.b[at:])
					}
					c.effects.record(cmd, q, reply)
				}
			}
		})
		if err != nil || len(cmds) == 0 {
			return false, err
		}
		e.Cmds = cmds
		return true, nil
	}
	r, err := c.srv.cluster.Propose(c.context(), c.entry(cluster.Entry{Exec: true, Proto: 2}), decide)
	if err == nil && r == nil && ran {
		err = c.srv.cluster.ReadBarrier(c.context())
	}
	switch {
	case err != nil:
		c.out.truncate(mark)
		c.clusterError(nil, queued[0], err)
	case !ran:
		c.out.NullArray() // a WATCHed key changed: EXEC runs nothing
	}
}

// entry stamps e with the leader's clock and the reply's protocol.
func (c *conn) entry(e cluster.Entry) cluster.Entry {
	e.NowMs = time.Now().UnixMilli()
	e.Proto = c.out.Proto()
	if c.out.v != nil {
		e.Proto = 0
	}
	return e
}

// propose sends e through the log and writes the reply its application
// here gave.
func (c *conn) propose(e cluster.Entry, check func(*cluster.Entry) (bool, error)) {
	r, err := c.srv.cluster.Propose(c.context(), c.entry(e), check)
	switch {
	case err != nil:
		c.clusterError(nil, e.Cmds[0], err)
	case r == nil:
		c.out.NullArray() // a WATCHed key changed: EXEC runs nothing
	default:
		a := r.(applied)
		if c.out.v != nil {
			*c.out.v = *a.v
		} else {
			c.out.b = append(c.out.b, a.b...)
		}
	}
}

// clusterError answers a proposal or a read barrier that failed: a node
// that no longer leads redirects; an entry whose fate is unknown (the
// leader lost its majority while the entry was on its way) says so, and
// is no error a client retries on its own.
func (c *conn) clusterError(cmd *command, args [][]byte, err error) {
	if errors.Is(err, cluster.ErrNotLeader) {
		if cmd == nil {
			cmd = lookup(c.srv.table, args[0])
		}
		addr, _ := c.srv.cluster.Leader()
		c.redirect(cmd, args, addr)
		return
	}
	c.out.Err("cluster: " + err.Error())
}

// redirect is a follower's answer: -MOVED to the leader, or
// -CLUSTERDOWN while none is known.
func (c *conn) redirect(cmd *command, args [][]byte, leader string) {
	if leader == "" {
		c.out.Error("CLUSTERDOWN", "no leader")
		return
	}
	c.out.Error("MOVED", itoa(int64(commandSlot(cmd, args)))+" "+leader)
}

// context is what a proposal waits under: the request's in process, else
// one that ends with the server.
func (c *conn) context() context.Context {
	if c.ctx != nil {
		return c.ctx
	}
	return context.Background()
}

// commandSlot is the hash slot of a request's first key, as Redis Cluster
// computes it; 0 for a command without a key.
func commandSlot(cmd *command, args [][]byte) int {
	if cmd == nil {
		return 0
	}
	if cmd.Subcommands != nil && len(args) > 1 {
		if sub := lookup(cmd.Subcommands, args[1]); sub != nil {
			cmd = sub
		}
	}
	if cmd.FirstKey <= 0 || cmd.FirstKey >= len(args) {
		return 0
	}
	return KeySlot(args[cmd.FirstKey])
}

// KeySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key,
// or of its hash tag (the part between the first { and the next } when
// not empty), mod 16384.
func KeySlot(key []byte) int {
	if i := strings.IndexByte(string(key), '{'); i >= 0 {
		if j := strings.IndexByte(string(key[i+1:]), '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) & 16383)
}

func crc16(b []byte) uint16 {
	var crc uint16
	for _, x := range b {
		crc ^= uint16(x) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
