package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/tenure-db/tenure/kv"
)

// DefaultElectionTimeout is --raft-election-timeout's default: a follower
// that hears nothing from the leader for between it and twice it stands
// for election. 300 ms keeps a failover on loopback under 1.5 s at p99
// (SPEC §10; 400 ms measured 1.6 s, two survivors often splitting their
// first vote), with heartbeats every 30 ms.
const DefaultElectionTimeout = 300 * time.Millisecond

// Config is what Open needs.
type Config struct {
	// Dir is the store's data directory; Raft keeps its log, stable store
	// and snapshots in Dir/raft.
	Dir    string
	NodeID string
	// Peers are the voters of a new cluster, this node among them; nil
	// for a node that waits to be added by CLUSTER MEET. A node restarted
	// with its Dir rejoins whatever Peers says, as long as it agrees.
	Peers []Peer
	// Addr is this node's advertised address: where its peers and
	// clients reach it (what -MOVED names), which may not be where it
	// listens (a proxy or a NAT between). When Peers names the node, its
	// address there.
	Addr            string
	ElectionTimeout time.Duration // 0: DefaultElectionTimeout
	Key             []byte        // --cluster-key-file's secret; nil: none
	Logger          *slog.Logger
	Store           *kv.Store

	// For tests: how many entries between snapshots (0: Raft's 8192), and
	// how many to keep in the log behind one (0: Raft's 10240).
	SnapshotThreshold, TrailingLogs uint64
}

// Node is one member of a cluster: what the server asks of its cluster
// (api.go), over Raft.
type Node struct {
	cfg   Config
	log   *slog.Logger
	raft  *raft.Raft
	fsm   *fsm
	layer *raftLayer
	logs  *logStore
	snaps *raft.FileSnapshotStore
	trans *raft.NetworkTransport
	locks Locks
	fresh bool // Dir had no cluster before this start

	proposeMu sync.Mutex // orders a WATCHed EXEC's check against other proposals

	groupMu sync.Mutex // guards group
	group   grouper    // the proposals waiting to go as one entry (group.go)

	termMu sync.Mutex
	term   uint64      // counts leadership changes seen, so that a stale epoch entry is not used
	ready  atomic.Bool // leading, with this term's epoch applied

	peerApplied sync.Map // node id -> int64, the applied index the leader last read from it

	peersRefused atomic.Int64

	born       time.Time    // the monotonic clock's origin for leaseUntil
	leaseUntil atomic.Int64 // ns since born: the leader may grant until then (lease.go)
	// leaseUntilWall is the lease's end on the wall clock, Unix ns.
	leaseUntilWall atomic.Int64

	// confirmHeld, when set (tests: export_test.go), holds back the
	// lease's confirmations.
	confirmHeld atomic.Bool

	// epochGate, when set (tests: export_test.go), holds back the epoch
	// entry of the next term until it is closed.
	epochGate atomic.Pointer[chan struct{}]

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// applyTimeout bounds how long a proposal waits to be taken by Raft.
const applyTimeout = 10 * time.Second

// Open checks the node's flags against what Dir remembers and opens the
// log; it starts nothing. Call Start with what applies the entries and
// the lock module, then Serve.
func Open(cfg Config) (*Node, error) {
	if cfg.NodeID == "" {
		return nil, errors.New("--node-id is required in a cluster")
	}
	if len(cfg.NodeID) > maxIDLen {
		return nil, fmt.Errorf("--node-id: %d bytes, want at most %d", len(cfg.NodeID), maxIDLen)
	}
	if cfg.Peers != nil {
		self, err := selfIn(cfg.NodeID, cfg.Peers)
		if err != nil {
			return nil, err
		}
		cfg.Addr = self.Addr
	}
	if cfg.Addr == "" {
		return nil, errors.New("cluster: no address for this node")
	}
	if cfg.ElectionTimeout <= 0 {
		cfg.ElectionTimeout = DefaultElectionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	fresh, err := checkIdentity(dir, identity{NodeID: cfg.NodeID, Peers: cfg.Peers})
	if err != nil {
		return nil, err
	}
	f, err := newFSM(cfg.Store)
	if err != nil {
		return nil, err
	}
	logs, err := openLogStore(dir)
	if err != nil {
		return nil, err
	}
	hl := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: hclogWriter{cfg.Logger}, Level: hclog.Warn})
	if cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		hl.SetLevel(hclog.Info)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("open the snapshots in %s: %w", dir, err)
	}
	layer := newRaftLayer(cfg.Addr, cfg.NodeID, cfg.Key)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
		MaxRPCsInFlight: rpcsInFlight,
	})
	return &Node{
		cfg: cfg, log: cfg.Logger, fsm: f, layer: layer, logs: logs, snaps: snaps, trans: trans,
		fresh: fresh, stop: make(chan struct{}), born: time.Now(),
	}, nil
}

// Start starts Raft with app as the applier of commands entries,
// bootstrapping a new cluster from Peers the first time. The lock module
// locks is paused until this node leads and its epoch entry is applied;
// it should have the Node as its EpochBumper. Open and Start are two
// steps because the server that applies the entries is itself made with
// the Node (package tenure wires them, once).
func (n *Node) Start(app Applier, locks Locks) error {
	n.fsm.app, n.locks = app, locks
	if err := n.restoreBehind(); err != nil {
		return err
	}
	n.locks.Pause()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.ElectionTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	// The leader checks every LeaderLeaseTimeout that a majority heard it
	// within the last one, and steps down (dropping its leases) if not: so
	// within 2×LeaderLeaseTimeout of losing it, which is less than the
	// election timeout after which a follower may even stand (LOCK-14).
	rc.LeaderLeaseTimeout = leaseTimeout(n.cfg.ElectionTimeout)
	rc.CommitTimeout = 5 * time.Millisecond
	rc.BatchApplyCh = true
	rc.NoSnapshotRestoreOnStart = true
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Output: hclogWriter{n.log}, Level: hclog.Warn})
	if n.cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = n.cfg.SnapshotThreshold
		rc.SnapshotInterval = 100 * time.Millisecond
	}
	if n.cfg.TrailingLogs > 0 {
		rc.TrailingLogs = n.cfg.TrailingLogs
	}
	existing, err := raft.HasExistingState(n.logs.cache, n.logs.wal, n.snaps)
	if err != nil {
		return err
	}
	r, err := raft.NewRaft(rc, n.fsm, n.logs.cache, n.logs.wal, n.snaps, n.trans)
	if err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	if !existing && n.cfg.Peers != nil {
		var servers []raft.Server
		for _, p := range n.cfg.Peers {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		// Every node bootstraps with the same list: Raft allows it.
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			r.Shutdown()
			return fmt.Errorf("bootstrap: %w", err)
		}
	}
	n.wg.Add(4)
	go n.followLeadership()
	go n.every(sweepEvery, n.sweep)
	go n.every(pollEvery, n.pollPeers)
	go n.every(leaseTimeout(n.cfg.ElectionTimeout)/leaseEvery, n.confirmLease)
	return nil
}

// restoreBehind covers a keyspace that is behind the latest snapshot
// (its directory was restored from a backup, or emptied while Raft's was
// kept): Raft, told not to restore at start, would apply only what
// follows the snapshot, so the snapshot is restored here first.
func (n *Node) restoreBehind() error {
	metas, err := n.snaps.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	if metas[0].Index <= n.fsm.skipTo {
		return nil
	}
	_, rc, err := n.snaps.Open(metas[0].ID)
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", metas[0].ID, err)
	}
	n.log.Warn("cluster: the keyspace is behind the latest snapshot; restoring it", "applied", n.fsm.skipTo, "snapshot", metas[0].Index)
	return n.fsm.Restore(rc)
}

// Serve splits ln between Raft's peers and the RESP clients, which the
// listener it returns accepts.
func (n *Node) Serve(ln net.Listener) net.Listener { return newMux(ln, n) }

// Close stops Raft and closes the log; the keyspace is the caller's.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		close(n.stop)
		if n.raft != nil {
			err = n.shutdownRaft()
		}
		n.wg.Wait()
		n.layer.Close()
		n.trans.Close()
		if cerr := n.logs.Close(); err == nil {
			err = cerr
		}
	})
	return err
}

// rpcsInFlight is the transport's MaxRPCsInFlight: 1, which makes
// its AppendEntriesPipeline answer ErrPipelineReplicationNotSupported, so
// the leader replicates to each follower one AppendEntries at a time
// (replicateTo). hashicorp/raft v1.7.3's pipeline can block a follower's
// replication goroutine for good: with the default of 2 in flight, the
// netPipeline's two channels are unbuffered; when pipelineDecode returns
// (a failed or refused response: a follower that restarted, a log
// mismatch, a newer term) nobody reads doneCh any more, so the pipeline's
// decoder blocks handing it the next response, and the next pipelineSend
// (the SEND loop's select may pick a ready trigger over the closed
// finishCh) blocks handing its request to that decoder. Only the
// pipeline's Close, deferred by the blocked goroutine itself, would free
// them. While the node runs, that follower then gets heartbeats (from
// another goroutine, so it never stands for election) but no entry again
// while this node leads; at Shutdown, Raft waits for the goroutine for
// ever. Group commit (group.go) puts many writes in one entry, and one
// AppendEntries carries every entry waiting (up to MaxAppendEntries), so
// pipelining bought nothing measurable here (bench -cluster: SET/s at 50
// clients and one client's p50 alike within the noise, December 2026).
const rpcsInFlight = 1

// raftShutdownWait bounds how long Close waits for Raft's goroutines: a
// last resort, should Raft's Shutdown ever wait for a goroutine that will
// not end (as the pipeline's did, see rpcsInFlight). Close goes on
// without it and logs an error, so the keyspace is still closed cleanly
// and the process exits.
const raftShutdownWait = 10 * time.Second

// shutdownRaft stops Raft, waiting at most raftShutdownWait.
func (n *Node) shutdownRaft() error {
	done := make(chan error, 1)
	go func() { done <- n.raft.Shutdown().Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(raftShutdownWait):
		n.log.Error("raft: shutdown still waits for its goroutines; closing without them", "waited", raftShutdownWait)
		return fmt.Errorf("raft did not stop within %v", raftShutdownWait)
	}
}

// followLeadership pauses the lock module whenever leadership changes and,
// on becoming leader, proposes the new epoch and resumes it there.
func (n *Node) followLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case leading := <-n.raft.LeaderCh():
			n.termMu.Lock()
			n.term++
			term := n.term
			n.ready.Store(false)
			n.locks.Pause() // LOCK-14: the leases of a term end with it
			n.termMu.Unlock()
			if leading {
				n.wg.Add(1)
				go n.startEpoch(term)
			}
		}
	}
}

// startEpoch commits the next epoch through the log and, if this node
// still leads the term it was proposed in, starts the lock module on it.
func (n *Node) startEpoch(term uint64) {
	defer n.wg.Done()
	if g := n.epochGate.Load(); g != nil {
		select {
		case <-*g:
		case <-n.stop:
			return
		}
	}
	for {
		asked := n.leaseNow()
		f := n.raft.Apply(encodeEpoch(time.Now().UnixMilli()), applyTimeout)
		err := f.Error()
		if err == nil {
			n.extendLease(asked) // committed: a majority had this term
		}
		var epoch uint64
		if err == nil {
			switch r := f.Response().(type) {
			case epochApplied:
				epoch = r.epoch
			case error:
				err = r
			}
		}
		n.termMu.Lock()
		current := n.term == term
		if current && err == nil {
			n.locks.Resume(epoch)
			n.ready.Store(true)
			n.log.Info("cluster: leading", "node", n.cfg.NodeID, "epoch", epoch, "raft_term", n.raft.CurrentTerm())
		}
		n.termMu.Unlock()
		if !current || err == nil || n.raft.State() != raft.Leader {
			return
		}
		n.log.Warn("cluster: the epoch entry failed; trying again", "err", err)
		select {
		case <-n.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// BumpEpoch is the lock module's EpochBumper in a cluster: when a term's
// fence counter runs out, the next epoch goes through the log too.
func (n *Node) BumpEpoch() (uint64, error) {
	f := n.raft.Apply(encodeEpoch(time.Now().UnixMilli()), applyTimeout)
	if err := f.Error(); err != nil {
		return 0, err
	}
	switch r := f.Response().(type) {
	case epochApplied:
		return r.epoch, nil
	case error:
		return 0, r
	}
	return 0, errors.New("cluster: epoch entry skipped")
}

// sweepEvery is how often the leader looks for expired keys to delete.
const sweepEvery = 100 * time.Millisecond

// sweep is active expiry in a cluster: only the leader, and only through
// the log, deletes expired keys, so every node deletes the same ones.
func (n *Node) sweep() {
	for n.ready.Load() {
		now := time.Now().UnixMilli()
		if due, err := n.cfg.Store.Due(now); err != nil || !due {
			return
		}
		f := n.raft.Apply(encodeSweep(now, 256), applyTimeout)
		if f.Error() != nil {
			return
		}
		if deleted, ok := f.Response().(int); !ok || deleted < 256 {
			return
		}
	}
}

// every runs f every d until the node stops.
func (n *Node) every(d time.Duration, f func()) {
	defer n.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		f()
	}
}
