package resp

import (
	"time"

	"github.com/tenure-db/tenure/lockmod"
)

// What the dashboard (package dashboard, SPEC §14) reads of a server,
// besides LockStats, Events and EventsSince: the keys of a lock, a key's
// holders and line, and the node's place in its cluster. Never a lease id.

// ListLock walks the held and waited-for keys of lock, as LOCK.LIST does.
func (s *Server) ListLock(lock string, cursor uint64, count int) (next uint64, entries []lockmod.ListEntry) {
	return s.locks.List(lock, cursor, count)
}

// KeyHolders lists every live lease of (lock, key), as LOCK.HOLDERS does.
func (s *Server) KeyHolders(lock, key string) []lockmod.Holder { return s.locks.Holders(lock, key) }

// KeyLine lists who waits in line for (lock, key), first first.
func (s *Server) KeyLine(lock, key string) []lockmod.Waiter { return s.locks.Line(lock, key) }

// NodeStatus is this node as the dashboard shows it.
type NodeStatus struct {
	Role     string // "single", or in a cluster Raft's: "leader", "follower", "candidate", "shutdown"
	Epoch    uint64
	Leases   int64
	Waiters  int64
	Keys     int64
	Uptime   time.Duration
	Version  string
	Self     string       // this node's id in a cluster
	Leader   string       // the leader's id, "" while none is known
	LeaderAt string       // the leader's client address
	Peers    []PeerStatus // every voter, this node included; none for a single server
}

// PeerStatus is one voter of the cluster, as the leader sees it.
type PeerStatus struct {
	ID, Addr string
	Applied  int64 // the index it last told the leader it applied; -1 unknown
	Lag      int64 // entries behind the leader's commit index; -1 unknown
}

// Node describes this node now.
func (s *Server) Node() NodeStatus {
	st := s.locks.Stats()
	n := NodeStatus{Role: "single", Epoch: st.Epoch, Leases: st.Leases, Waiters: st.Waiters,
		Keys: s.store.Stats().Keys, Uptime: time.Since(s.start), Version: Version}
	if s.cluster == nil {
		return n
	}
	cs := s.cluster.Status()
	n.Role, n.Self, n.Leader, n.LeaderAt = cs.Role, cs.Self, cs.Leader.ID, cs.Leader.Addr
	if cs.Epoch > n.Epoch {
		n.Epoch = cs.Epoch
	}
	for _, m := range cs.Nodes {
		p := PeerStatus{ID: m.ID, Addr: m.Addr, Applied: m.Applied, Lag: -1}
		if m.Applied >= 0 {
			p.Lag = max(0, int64(cs.CommitIndex)-m.Applied)
		}
		n.Peers = append(n.Peers, p)
	}
	return n
}
