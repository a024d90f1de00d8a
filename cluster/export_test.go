package cluster

import "bytes"

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
