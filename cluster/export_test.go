package cluster

// HoldEpochEntries makes the node, when it next comes to lead, wait before
// it proposes its epoch entry, until release is called.
func (n *Node) HoldEpochEntries() (release func()) {
	gate := make(chan struct{})
	n.epochGate.Store(&gate)
	return func() { close(gate) }
}
