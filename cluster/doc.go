// Package cluster is Raft under the keyspace (SPEC §10): three or five
// tenures replicating every keyspace write and every new epoch through
// hashicorp/raft, on the client port.
//
// It is for keeping the log and deciding what is committed and who leads.
// A Node owns the Raft instance, its log and stable store (raft-wal, which
// fsyncs every append before Raft acknowledges it, so a write is
// acknowledged once a majority has it on disk, whatever --fsync says), its
// snapshots (a Pebble snapshot of the whole keyspace), the FSM that hands
// each entry to be applied with its index and the leader's clock, and the
// peer transport that shares the client listener: a connection that opens
// with the peer preamble and proves the cluster key goes to Raft, every
// other one to the RESP server.
//
// Leadership drives the lock module: a node that becomes leader proposes
// an epoch entry and grants nothing until it is applied; a node that
// stops leading drops every lease and waiter at once (LOCK-14). Leases
// themselves are never replicated.
//
// It is not where commands are spelled, routed or run, and it does not
// import package resp. It defines what it needs of the rest (api.go): an
// Applier, which runs the commands of an Entry on this node's keyspace at
// an index and an instant (a resp.Server, through its command table), and
// Locks, the lock module's Pause and Resume; and what it offers the server
// (Propose, ReadBarrier, LocksReady, Status, Meet, Forget, ErrNotLeader).
// Package tenure wires the two together, once. Nor is it where keys are
// kept (kv): the FSM writes only the applied index, epoch entries and
// expiry sweeps to the keyspace itself.
//
// # Where things are
//
//	api.go        the seam: Applier, Locks, Status, ErrNotLeader; Propose, ReadBarrier, Status, Meet, Forget
//	node.go       Config, Open, Start, Close; leadership, the epoch entry, expiry sweeps
//	entry.go      the log's entries: Entry (commands), groups of them, epochs, sweeps, and their encoding
//	fsm.go        Raft's FSM (a BatchingFSM): entries applied in order, one settle a batch, snapshots, restore
//	group.go      group commit: the proposals that wait while groups are in flight go as one entry
//	lease.go      the leader's lease on granting (LOCK-14)
//	logstore.go   the log and stable store (raft-wal)
//	peers.go      --peers, and the node identity a data directory remembers
//	transport.go  the peer preamble and handshake on the client port
package cluster
