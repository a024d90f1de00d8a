package resp

import (
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/kv"
)

// Entries of a cluster's log, applied (SPEC §10). A Server is its node's
// cluster.Applier: Raft hands Apply each commands entry, in log order, on
// every node, and Apply runs the entry's commands through the same table
// and handlers as a client's requests, by call (dispatch.go): admitted as
// admin, never queued and never routed, for the entry was routed once,
// when the leader proposed it (routing.go).

var _ cluster.Applier = (*Server)(nil)

// applied is Apply's answer: the reply as bytes, or as Go values for an
// entry proposed by Server.Do; parts are b cut at each command's end.
type applied struct {
	b     []byte
	v     *values
	parts [][]byte
}

// Apply runs es on this server's keyspace as one transaction at
// es[0].NowMs, recording index as applied in the same batch
// (kv.Store.ApplyAt): kv judges expiry at that instant, and a relative
// expiry (EXPIRE k 10, SET … EX 10) counts from it (conn.nowMs), so every
// node sets the same deadline however late it applies the entry. Each
// entry of es is one proposal (a group of them shares the log's entry:
// cluster's group.go), answered apart, in its own protocol. A
// transaction's queue (e.Exec) runs as EXEC runs it; one command whose
// handler panics ends its entry there, as it ends a connection.
func (s *Server) Apply(index uint64, es []cluster.Entry) ([]any, error) {
	out := make([]any, len(es))
	callers := make([]*conn, len(es))
	_, err := s.store.ApplyAt(index, es[0].NowMs, false, func(tx *kv.Store) {
		for i, e := range es {
			c := s.caller("raft-log", RoleAdmin, e.Proto)
			callers[i] = c
			c.entryNowMs = e.NowMs
			c.store = tx
			var parts [][]byte
			if e.Exec {
				c.tx.executing = true
				c.out.Array(len(e.Cmds))
			}
			for _, q := range e.Cmds {
				mark := c.out.Len()
				ok := c.call(q)
				parts = append(parts, c.out.b[mark:])
				if !ok {
					break
				}
			}
			out[i] = applied{b: c.out.b, v: c.out.v, parts: parts}
		}
	})
	for _, c := range callers {
		if c != nil {
			c.store = s.store
		}
	}
	if err != nil {
		return nil, err
	}
	for _, c := range callers {
		if c != nil {
			c.serveReady() // blocking.go: wake the leader's clients blocked on what it pushed
		}
	}
	return out, nil
}

// caller is a conn of no socket on which rows run by call (dispatch.go),
// their replies recorded: in RESP (protocol 2 or 3) in c.out.b, or as Go
// values in c.out.v for proto 0. It acts on the server's store with role
// until its store is set to a transaction's view.
func (s *Server) caller(addr string, role Role, proto int) *conn {
	c := &conn{
		srv:     s,
		rd:      &reader{limits: s.cfg.Limits},
		addr:    addr,
		created: time.Now(),
		role:    role,
		user:    "default",
		store:   s.store,
	}
	if proto == 0 {
		c.out.v = &values{}
	}
	c.out.resp3 = proto == 3
	return c
}
