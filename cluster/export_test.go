package cluster

import (
	"bytes"
	"errors"

	"github.com/hashicorp/raft"
)

// HoldEpochEntries makes the node, when it next comes to lead, wait before
// it proposes its epoch entry, until release is called.
func (n *Node) HoldEpochEntries() (release func()) {
	gate := make(chan struct{})
	n.epochGate.Store(&gate)
	return func() { close(gate) }
}

// LapseLease ends the node's lease on granting now, as a freeze longer
// than the lease would, and holds back its confirmations until resume is
// called.
func (n *Node) LapseLease() (resume func()) {
	n.confirmHeld.Store(true)
	n.leaseUntil.Store(0)
	n.leaseUntilWall.Store(0)
	return func() { n.confirmHeld.Store(false) }
}

// KeyspaceSnapshot is every record of the node's keyspace as a snapshot
// would send it (the applied index and the epoch among them), for tests
// that compare what two nodes applied.
func (n *Node) KeyspaceSnapshot() ([]byte, error) {
	snap, err := n.cfg.Store.Snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	var b bytes.Buffer
	if _, err := snap.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TransferLeadership makes the node, if it leads, hand leadership to a
// follower and go on as one.
func (n *Node) TransferLeadership() error { return n.raft.LeadershipTransfer().Error() }

// Pipelines says whether the node's Raft transport would replicate over a
// pipeline (hashicorp/raft asks AppendEntriesPipeline, and replicates one
// AppendEntries at a time when it answers ErrPipelineReplicationNotSupported).
func (n *Node) Pipelines() bool {
	p, err := n.trans.AppendEntriesPipeline("nobody", "127.0.0.1:1")
	if p != nil {
		p.Close()
	}
	return !errors.Is(err, raft.ErrPipelineReplicationNotSupported)
}

// FailLogAppends makes the next k appends to the node's Raft log fail, as
// a full or failing disk would: a follower then answers the leader's
// AppendEntries with Success false, on a connection that stays up.
func (n *Node) FailLogAppends(k int64) { n.logs.failAppends.Store(k) }

// LogAppendsToFail is how many of those have not failed yet.
func (n *Node) LogAppendsToFail() int64 { return max(n.logs.failAppends.Load(), 0) }
