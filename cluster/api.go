package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// The seam between Raft and the server it replicates. A Node asks two
// things of what it is started with (Start): an Applier, which applies the
// commands of each entry to this node's keyspace, and the lock module's
// Locks, which leadership pauses and resumes. It offers the server the
// methods below (Leader, Propose, ReadBarrier, LocksReady, Status, Meet,
// Forget), with Entry, Status and ErrNotLeader. Package cluster knows
// nothing of RESP: package tenure wires a resp.Server in as the Applier.

// Applier applies the commands entries of the log (see Entry) to this
// node's keyspace.
type Applier interface {
	// Apply runs the commands of es, in order, on the keyspace as one
	// transaction at the instant es[0].NowMs (every entry of es has it:
	// the leader's clock when it proposed them, so that every node judges
	// expiry alike), with index recorded as applied in the same batch
	// (kv.Store.ApplyAt). Raft calls it in log order, on every node; what
	// it returns for each entry of es on the node that proposed them is
	// what Propose returns there for that entry. An error is the
	// keyspace's, not a command's.
	Apply(index uint64, es []Entry) ([]any, error)
}

// Locks is the lock module as leadership drives it (LOCK-14): paused, with
// every lease and waiter dropped, whenever leadership changes; resumed on
// the new epoch once this node leads and that epoch's entry is applied.
// lockmod.Manager is one.
type Locks interface {
	Pause()
	Resume(epoch uint64)
}

// ErrNotLeader is the answer of a Node that does not lead to what only
// the leader does (Propose, ReadBarrier, Meet, Forget): the caller may ask
// the leader instead.
var ErrNotLeader = errors.New("not the leader")

// Status is one node's view of its cluster.
type Status struct {
	Self   string // this node's id
	Role   string // "leader", "follower", "candidate" or "shutdown"
	Leader Member
	Nodes  []Member // every voter, this node included, in id order
	Term   uint64
	Epoch  uint64
	// CommitIndex and AppliedIndex are Raft's; LastIndex is the last in
	// this node's log.
	CommitIndex, AppliedIndex, LastIndex uint64
}

// Member is one voter.
type Member struct {
	ID, Addr string
	// Applied is the index the node last told the leader it applied, -1
	// when unknown (the node is unreachable, or this is not the leader).
	Applied int64
}

// Followers are the voters other than the leader.
func (st Status) Followers() []Member {
	var out []Member
	for _, n := range st.Nodes {
		if n.ID != st.Leader.ID {
			out = append(out, n)
		}
	}
	return out
}

// Leader is the leader's client address ("" while none is known) and
// whether it is this node.
func (n *Node) Leader() (string, bool) {
	if n.raft.State() == raft.Leader {
		return n.cfg.Addr, true
	}
	addr, _ := n.raft.LeaderWithID()
	return string(addr), false
}

// LocksReady reports whether this node leads with its epoch applied, and
// a majority confirmed it leads within the last LeaderLeaseTimeout
// (lease.go).
func (n *Node) LocksReady() bool {
	return n.ready.Load() && n.raft.State() == raft.Leader && n.leaseHeld()
}

// Propose replicates e and returns what this node's Applier answered for
// it, once a majority has it on disk and it is applied here. With check
// not nil, Propose first waits until every entry proposed before is
// applied, then runs check, and proposes nothing (returning nil, nil)
// when check reports false (EXEC's WATCH): no other proposal falls in
// between. check may rewrite e (a script's effects): what it leaves there
// is proposed. ErrNotLeader: this node does not lead.
func (n *Node) Propose(ctx context.Context, e Entry, check func(e *Entry) (bool, error)) (any, error) {
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	if check == nil {
		return n.proposeGrouped(e)
	}
	n.proposeMu.Lock()
	if err := n.raft.Barrier(applyTimeout).Error(); err != nil {
		n.proposeMu.Unlock()
		return nil, proposeError(err)
	}
	ok, err := check(&e)
	if err != nil || !ok {
		n.proposeMu.Unlock()
		return nil, err
	}
	data := encodeCommands(e) // what check left in e
	f := n.raft.Apply(data, applyTimeout)
	n.proposeMu.Unlock()
	if err := f.Error(); err != nil {
		return nil, proposeError(err)
	}
	return applyResult(f.Response())
}

// proposeError tells a write that never reached the log (this node does
// not lead: the client may go to the one that does) from one whose fate
// is unknown.
func proposeError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return errors.New("leadership lost while the write was replicated: it may or may not be applied")
	}
	return err
}

// readError is a read's barrier failing: a node that no longer leads did
// nothing, and says so (the client asks the leader).
func readError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	}
	return err
}

// ReadBarrier confirms that this node leads (a round of heartbeats to a
// majority) and waits until it has applied what was committed when the
// read came in, which includes this term's epoch entry, so no write
// acknowledged before is missed (SPEC §10: linearizable reads).
//
// A round of heartbeats alone can be fooled: hashicorp/raft counts for it
// every successful answer a follower's goroutine reads once it began, an
// answer to a request sent before it included. A leader that was stopped
// (SIGSTOP, a paused VM) while a new one was elected finds answers from
// before its pause waiting when it runs again, and its round passes on
// them; the torture saw such a leader answer a GET with a value the new
// leader had overwritten. So the round counts only while the lease is held
// too, which no pause that long leaves (it ends LeaderLeaseTimeout after a
// majority last answered, on both clocks, and a new leader needs a longer
// silence); without it, a barrier entry confirms leadership, as only a
// leader can commit one.
func (n *Node) ReadBarrier(ctx context.Context) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	commit := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return proposeError(err)
	}
	if !n.leaseHeld() {
		if err := n.raft.Barrier(applyTimeout).Error(); err != nil {
			return readError(err)
		}
	}
	deadline := time.NewTimer(applyTimeout)
	defer deadline.Stop()
	for !n.ready.Load() || n.raft.AppliedIndex() < commit {
		select {
		case <-n.fsm.changed():
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errors.New("timed out waiting for the leader to apply its log")
		}
		if n.raft.State() != raft.Leader {
			return ErrNotLeader
		}
	}
	return nil
}

// Status is this node's view of the cluster.
func (n *Node) Status() Status {
	st := Status{
		Self:         n.cfg.NodeID,
		Role:         strings.ToLower(n.raft.State().String()),
		Term:         n.raft.CurrentTerm(),
		Epoch:        n.cfg.Store.Epoch(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.applied.Load(),
		LastIndex:    n.raft.LastIndex(),
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	if leaderID != "" {
		st.Leader = Member{ID: string(leaderID), Addr: string(leaderAddr), Applied: -1}
	}
	leading := n.raft.State() == raft.Leader
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			node := Member{ID: string(s.ID), Addr: string(s.Address), Applied: -1}
			switch {
			case node.ID == n.cfg.NodeID:
				node.Applied = int64(st.AppliedIndex)
			case leading:
				if v, ok := n.peerApplied.Load(node.ID); ok {
					node.Applied = v.(int64)
				}
			}
			if node.ID == st.Leader.ID {
				st.Leader.Applied = node.Applied
			}
			st.Nodes = append(st.Nodes, node)
		}
	}
	slices.SortFunc(st.Nodes, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return st
}

// Applies counts the entries this node applied since it started, those
// its keyspace already held not counted (tests: nothing is applied twice).
func (n *Node) Applies() int64 { return n.fsm.applies.Load() }

// AppliedIndex is the index of the last entry this node applied.
func (n *Node) AppliedIndex() uint64 { return n.fsm.applied.Load() }

// PeersRefused counts peer connections refused for a wrong key.
func (n *Node) PeersRefused() int64 { return n.peersRefused.Load() }

// pollEvery is how often the leader reads its peers' applied indices,
// for INFO's lag and CLUSTER SHARDS' health.
const pollEvery = time.Second

// pollPeers reads, on the leader, each peer's applied index.
func (n *Node) pollPeers() {
	if n.raft.State() != raft.Leader {
		return
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == n.cfg.NodeID {
			continue
		}
		idx, err := peerApplied(string(s.Address), n.cfg.NodeID, n.cfg.Key, 300*time.Millisecond)
		if err != nil {
			n.peerApplied.Store(string(s.ID), int64(-1))
			continue
		}
		n.peerApplied.Store(string(s.ID), int64(idx))
	}
}

// Meet adds the node listening at addr as a voter. It asks the node its
// id first, over the peer handshake: an address nobody answers at, or
// that is not a tenure node with this cluster's key, changes nothing.
func (n *Node) Meet(ctx context.Context, addr string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	id, err := peerID(addr, n.cfg.NodeID, n.cfg.Key, 2*time.Second)
	if err != nil {
		return fmt.Errorf("meet %s: %w", addr, err)
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id && string(s.Address) != addr {
			return fmt.Errorf("meet %s: node id %s is already a member, at %s", addr, id, s.Address)
		}
	}
	return proposeError(n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, applyTimeout).Error())
}

// Forget removes the node id from the voters.
func (n *Node) Forget(ctx context.Context, id string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	known := slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return string(s.ID) == id })
	if !known {
		return fmt.Errorf("Unknown node %s", id)
	}
	return proposeError(n.raft.RemoveServer(raft.ServerID(id), 0, applyTimeout).Error())
}
