package cluster

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// Group commit of proposals. Each connection proposes one write and waits
// for it, so a leader serving many connections would otherwise hand Raft
// one small entry per write: Raft takes what is queued in a turn into one
// append (BatchApplyCh), but its turns are short, so the entries come in
// small batches, and each entry still costs its own encoding, its own
// record in every node's log and its own transaction in every keyspace.
// Instead the writes that arrive while groupsInFlight groups are on their
// way wait here and go together as one entry (kindGroup), which every
// node applies as one transaction (Applier.Apply); the log's fsync on
// every node, the keyspace's commit and the replication round are shared
// by the whole group, and each proposer is answered when the group is
// applied, with its own reply. A lone writer's write goes at once, alone,
// as before. Measured: BenchmarkClusterSet, and make bench -cluster's
// SET row (bench/README.md).

const (
	// groupsInFlight is how many group entries may be between Raft's
	// Apply and their application on the leader at once.
	groupsInFlight = 2
	// maxGroup and maxGroupBytes bound one group entry: proposals, and
	// the bytes of their arguments.
	maxGroup      = 512
	maxGroupBytes = 1 << 20
)

// proposal is one Propose waiting in or for a group.
type proposal struct {
	e    Entry
	size int
	res  any
	err  error
	done chan struct{}
}

// grouper is what forms the groups (Node.group).
type grouper struct {
	pending  []*proposal
	inflight int
}

// proposeGrouped is Propose without a check: e waits for a group, and
// the caller is answered once that group is applied here.
func (n *Node) proposeGrouped(e Entry) (any, error) {
	p := &proposal{e: e, done: make(chan struct{})}
	for _, args := range e.Cmds {
		for _, a := range args {
			p.size += len(a)
		}
	}
	n.groupMu.Lock()
	n.group.pending = append(n.group.pending, p)
	next := n.takeGroup()
	n.groupMu.Unlock()
	if next != nil {
		n.flushGroup(next) // p is in it: this goroutine waits for it anyway
	}
	<-p.done
	return p.res, p.err
}

// takeGroup takes the next group from the pending proposals, nil when
// none waits or groupsInFlight are on their way. The caller holds
// groupMu and must flush what it gets.
func (n *Node) takeGroup() []*proposal {
	g := &n.group
	if len(g.pending) == 0 || g.inflight >= groupsInFlight {
		return nil
	}
	k, size := 0, 0
	for k < len(g.pending) && k < maxGroup && (k == 0 || size+g.pending[k].size <= maxGroupBytes) {
		size += g.pending[k].size
		k++
	}
	out := g.pending[:k:k]
	g.pending = g.pending[k:]
	if len(g.pending) == 0 {
		g.pending = nil
	}
	g.inflight++
	return out
}

// flushGroup proposes ps as one entry, answers each of them, and starts
// the next group if proposals wait for one.
func (n *Node) flushGroup(ps []*proposal) {
	var data []byte
	if len(ps) == 1 {
		data = encodeCommands(ps[0].e)
	} else {
		es := make([]Entry, len(ps))
		for i, p := range ps {
			es[i] = p.e
		}
		data = encodeGroup(time.Now().UnixMilli(), es)
	}
	n.proposeMu.Lock()
	f := n.raft.Apply(data, applyTimeout)
	n.proposeMu.Unlock()
	answer(ps, f)

	n.groupMu.Lock()
	n.group.inflight--
	next := n.takeGroup()
	n.groupMu.Unlock()
	if next != nil {
		go n.flushGroup(next)
	}
}

// answer gives each proposal of a group its reply once f is done.
func answer(ps []*proposal, f raft.ApplyFuture) {
	defer func() {
		for _, p := range ps {
			close(p.done)
		}
	}()
	if err := f.Error(); err != nil {
		err = proposeError(err)
		for _, p := range ps {
			p.err = err
		}
		return
	}
	r := f.Response()
	rs, grouped := r.(groupApplied)
	for i, p := range ps {
		if grouped {
			r = rs[i]
		}
		p.res, p.err = applyResult(r)
	}
}

// applyResult is Propose's answer for what the fsm returned for one
// proposal.
func applyResult(r any) (any, error) {
	switch r := r.(type) {
	case error:
		return nil, r
	case nil:
		return nil, errors.New("entry skipped as applied before")
	case groupApplied:
		return nil, errors.New("cluster: a group's result for one proposal")
	default:
		return r, nil
	}
}
