// Package cluster is Raft under the keyspace (SPEC §10): three or five
// tenures replicating every keyspace write and every new epoch through
// hashicorp/raft, on the client port.
//
// A Node owns the Raft instance, its log and stable store (raft-wal,
// which fsyncs every append before Raft acknowledges it, so a write is
// acknowledged once a majority has it on disk, whatever --fsync says), its
// snapshots (a Pebble snapshot of the whole keyspace), the FSM that
// applies each entry to the local keyspace through resp's command table
// (resp.Server.ApplyEntry) with the applied index in the same batch, and
// the peer transport that shares the client listener: a connection that
// opens with the peer preamble and proves the cluster key goes to Raft,
// every other one to the RESP server.
//
// Leadership drives the lock module: a node that becomes leader proposes
// an epoch entry and grants nothing until it is applied; a node that
// stops leading drops every lease and waiter at once (LOCK-14). Leases
// themselves are never replicated.
//
// It is not where commands are spelled or routed (resp/cluster.go asks a
// Node through resp.Cluster) nor where keys are kept (kv).
package cluster
