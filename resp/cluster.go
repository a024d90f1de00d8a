package resp

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/tenure-db/tenure/kv"
)

// A server in a cluster (SPEC §10). Package cluster keeps the Raft log and
// implements Cluster; this file is what the RESP side does with it: the
// routing of each request (-MOVED to the leader, a write through the log,
// a read confirmed by the leader), and the entry point by which the log
// applies a write on every node (ApplyEntry), through the same table and
// handlers as a request from a socket.

// Cluster is what a Server in a cluster asks of its node.
type Cluster interface {
	// Leader is the client address of the node that leads, "" while none
	// is known, and whether that node is this one.
	Leader() (addr string, self bool)
	// Propose replicates e and returns what this node's ApplyEntry
	// answered for it, once a majority has it on disk and it is applied
	// here. With check not nil, Propose first waits until every entry
	// proposed before is applied, then runs check, and proposes nothing
	// when check reports false (EXEC's WATCH): no other proposal falls in
	// between. ErrNotLeader: this node does not lead.
	Propose(ctx context.Context, e Entry, check func() (bool, error)) (any, error)
	// ReadBarrier returns once this node has confirmed it still leads and
	// has applied everything committed before the call (a linearizable
	// read may then read the local keyspace).
	ReadBarrier(ctx context.Context) error
	// LocksReady reports whether this node leads and its epoch entry is
	// applied: only then may LOCK.* run (LOCK-14).
	LocksReady() bool
	// Status describes the cluster as this node sees it, for CLUSTER,
	// ROLE and INFO.
	Status() ClusterStatus
	// Meet adds the node listening at addr as a voter; Forget removes
	// the node id. Both only on the leader.
	Meet(ctx context.Context, addr string) error
	Forget(ctx context.Context, id string) error
}

// ErrNotLeader is Propose's answer on a node that does not lead.
var ErrNotLeader = errors.New("not the leader")

// Entry is a keyspace write as the log carries it: the leader's clock
// when it was proposed (so that every node judges expiry alike), and the
// commands, one or a transaction's queue (Exec). Proto is the protocol of
// the reply wanted (2 or 3); 0 asks for Go values (Server.Do).
type Entry struct {
	NowMs int64
	Proto int
	Exec  bool
	Cmds  [][][]byte
}

// ClusterStatus is one node's view of its cluster.
type ClusterStatus struct {
	Self   string // this node's id
	Role   string // "leader", "follower", "candidate" or "shutdown"
	Leader ClusterNode
	Nodes  []ClusterNode // every voter, this node included, in id order
	Term   uint64
	Epoch  uint64
	// CommitIndex and AppliedIndex are Raft's; LastIndex is the last in
	// this node's log.
	CommitIndex, AppliedIndex, LastIndex uint64
}

// ClusterNode is one voter.
type ClusterNode struct {
	ID, Addr string
	// Applied is the index the node last told the leader it applied, -1
	// when unknown (the node is unreachable, or this is not the leader).
	Applied int64
}

// applied is ApplyEntry's answer: the reply as bytes, or as Go values for
// an entry proposed by Server.Do; parts are b cut at each command's end.
type applied struct {
	b     []byte
	v     *values
	parts [][]byte
}

// ApplyEntry runs e on this server's keyspace as one transaction at
// e.NowMs, recording index as applied in the same batch (kv.ApplyAt). The
// log calls it in order, on every node. Its commands run through the
// table and handlers as a connection admitted as admin would run them.
func (s *Server) ApplyEntry(index uint64, e Entry) (any, error) {
	c := &conn{
		srv:      s,
		rd:       &reader{limits: s.cfg.Limits},
		addr:     "raft-log",
		created:  time.Now(),
		role:     RoleAdmin,
		user:     "default",
		store:    s.store,
		applying: true,
	}
	if e.Proto == 0 {
		c.out.v = &values{}
	}
	c.out.resp3 = e.Proto == 3
	var parts [][]byte
	_, err := s.store.ApplyAt(index, e.NowMs, false, func(tx *kv.Store) {
		c.store = tx
		if e.Exec {
			c.tx.executing = true
			c.out.Array(len(e.Cmds))
		}
		for _, q := range e.Cmds {
			mark := c.out.Len()
			ok := c.run(q)
			parts = append(parts, c.out.b[mark:])
			if !ok {
				break
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return applied{b: c.out.b, v: c.out.v, parts: parts}, nil
}

// clusterLocal are the commands every node answers itself (SPEC §10).
var clusterLocal = map[string]bool{
	"ping": true, "auth": true, "hello": true, "quit": true, "info": true,
	"role": true, "command": true, "client": true, "cluster": true,
}

// route is dispatch's hook in a cluster, before a handler runs: it
// answers the request itself (and reports true) when the request is for
// the leader and this node is not it, when it is a write that goes
// through the log, or when LOCK.* must wait for the epoch; a read on the
// leader it lets through once the leader has confirmed it leads.
func (c *conn) route(cmd *command, args [][]byte) bool {
	top := strings.ToLower(string(args[0]))
	if clusterLocal[top] {
		return false
	}
	cl := c.srv.cluster
	addr, self := cl.Leader()
	if !self {
		c.redirect(cmd, args, addr)
		return true
	}
	switch {
	case cmd.Group == "module":
		if !cl.LocksReady() {
			c.out.Error("TRYAGAIN", "this leader's new epoch is not applied yet, or a majority has not confirmed it leads")
			return true
		}
		return false
	case cmd.Group == "scripting":
		return c.routeScript(cmd, args) // resp/scripting.go
	case top == "exec":
		if !c.tx.queueing || c.tx.discarded {
			return false // EXEC's own errors
		}
		c.proposeExec()
		return true
	case replicated(cmd):
		c.propose(Entry{Cmds: [][][]byte{args}}, nil)
		return true
	case cmd.Group == "string" || cmd.Group == "bitmap" || cmd.Group == "generic" || top == "dbsize":
		if err := cl.ReadBarrier(c.context()); err != nil {
			c.clusterError(cmd, args, err)
			return true
		}
	}
	return false
}

// replicated says whether cmd writes the keyspace, and so goes through
// the log.
func replicated(cmd *command) bool {
	switch cmd.Group {
	case "string", "bitmap", "generic":
		return cmd.Role >= RoleWrite
	}
	return cmd.Name == "flushall" || cmd.Name == "flushdb"
}

// proposeExec proposes a transaction's queue as one entry. Its WATCH is
// decided here, on the leader, once every write proposed before it has
// applied: the entry itself is applied unconditionally on every node.
// LOCK.* in the queue act on the leader's lock module at once, as in a
// single server (transactions.go), in the same window: after every write
// proposed before has applied and before any proposed after, so
// MULTI; LOCK.RENEW id; SET k v FENCE f; EXEC keeps its meaning.
func (c *conn) proposeExec() {
	queued := c.tx.queued
	c.tx.queueing, c.tx.queued = false, nil // what runs now runs, as in cmdExec
	isLock := make([]bool, len(queued))
	var writes [][][]byte
	for i, q := range queued {
		if cmd := lookup(c.srv.table, q[0]); cmd != nil && cmd.Group == "module" {
			isLock[i] = true
		} else {
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
	check := func() (bool, error) {
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
		if ok, err := check(); err != nil {
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
	r, err := c.srv.cluster.Propose(c.context(), c.entry(Entry{Exec: true, Cmds: writes}), check)
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

// entry stamps e with the leader's clock and the reply's protocol.
func (c *conn) entry(e Entry) Entry {
	e.NowMs = time.Now().UnixMilli()
	e.Proto = c.out.Proto()
	if c.out.v != nil {
		e.Proto = 0
	}
	return e
}

// propose sends e through the log and writes the reply its application
// here gave.
func (c *conn) propose(e Entry, check func() (bool, error)) {
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
	if errors.Is(err, ErrNotLeader) {
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
