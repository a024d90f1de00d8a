// Package tenure is the store as a library (SPEC §11): Open opens a data
// directory in this process, Serve offers it to RESP clients on any number
// of listeners, Do runs a command on it in process, and Close ends it. The
// keyspace, the lock table and the fence counter are one, whichever way a
// command comes in.
//
// It is where the keyspace (package kv), the lock module (package lockmod),
// the network side (package resp) and, in a cluster, Raft (package
// cluster) are wired together, once; the
// tenure command is this package plus flags, signals and logging. It is
// not where commands are spelled (resp) or where keys and leases are kept
// (kv, lockmod).
package tenure

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/dashboard"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp"
)

// ErrClosed is returned by Serve and Do once Close has begun.
var ErrClosed = errors.New("tenure: closed")

// Options mirror the tenure command's flags (SPEC §9); zero fields take
// its defaults.
type Options struct {
	Fsync      kv.FsyncMode   // --fsync; the zero value is everysec
	Users      *resp.Users    // --users (resp.LoadUsers); nil: every connection is admin
	MaxClients int            // --max-clients; 10000 when 0
	Limits     resp.Limits    // --proto-max-bulk-len and Redis's other caps
	TLS        *tls.Config    // Serve speaks TLS (--tls-cert, --tls-key; resp.LoadTLS)
	Logger     *slog.Logger   // nil: slog.Default()
	LogLevel   *slog.LevelVar // CONFIG SET loglevel changes it; may be nil
	// Metrics, if not nil, is given the store's Prometheus series (Go's
	// and the process's own collectors excepted), beside the registry
	// that ServeMetrics serves.
	Metrics prometheus.Registerer
	// AuditEvents is how many lock events the audit keeps in memory, for
	// LOCK.EVENTS and the dashboard (--audit-events; SPEC §14):
	// resp.DefaultAuditEvents when 0, none when negative.
	AuditEvents int
	// Cluster, when not nil, makes the store one node of a cluster that
	// replicates it through Raft (SPEC §10; package cluster).
	Cluster *ClusterOptions

	// For tests: an in-memory or crash-simulating file system, and the
	// lock module's clock.
	FS    vfs.FS
	Clock lockmod.Clock
}

// ClusterOptions are the flags of SPEC §10.
type ClusterOptions struct {
	NodeID string         // --node-id
	Peers  []cluster.Peer // --peers (cluster.ParsePeers); nil: wait for CLUSTER MEET
	// Addr is the node's client address when Peers is nil (--addr); with
	// Peers, the node's address there.
	Addr            string
	ElectionTimeout time.Duration // --raft-election-timeout; 0: cluster.DefaultElectionTimeout
	Key             []byte        // the secret of --cluster-key-file
	// For tests: snapshot every SnapshotThreshold entries, keeping
	// TrailingLogs of the log behind each (0: Raft's defaults).
	SnapshotThreshold, TrailingLogs uint64
}

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	dir   string
	log   *slog.Logger
	store *kv.Store
	locks *lockmod.Manager
	srv   *resp.Server
	node  *cluster.Node // nil for a single server

	closeOnce sync.Once
	closed    chan struct{} // closed when the keyspace is closed
	closeErr  error
}

// Open opens the store in dir (created if missing), makes a new epoch
// durable before anything is granted (LOCK-10), and starts the lock module
// on it, bumping it through the keyspace should its fence counter run out
// (LOCK-02). It does not listen: call Serve.
func Open(dir string, o Options) (*DB, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = lockmod.SystemClock()
	}
	limits := o.Limits.WithDefaults()
	if o.Cluster == nil && o.FS == nil {
		if id, err := cluster.NodeOf(dir); err != nil || id != "" {
			return nil, cmp.Or(err, fmt.Errorf("%s belongs to cluster node %s: start it with --node-id %s", dir, id, id))
		}
	}
	store, err := kv.Open(dir, kv.Options{
		FS:          o.FS,
		Fsync:       o.Fsync,
		Logger:      o.Logger,
		MaxValueLen: limits.MaxBulkLen,
		Replica:     o.Cluster != nil,
	})
	if err != nil {
		return nil, err
	}
	var (
		epoch  uint64
		bumper lockmod.EpochBumper = store
		node   *cluster.Node
	)
	if o.Cluster != nil {
		// In a cluster the epoch goes through the log: the node proposes
		// the next one when it comes to lead (LOCK-14).
		if node, err = openNode(dir, store, o); err != nil {
			store.Close()
			return nil, err
		}
		bumper = node
		epoch, err = store.StoredEpoch()
	} else {
		epoch, err = store.BumpEpoch()
	}
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("bump epoch in %s: %w", dir, err)
	}
	metrics := resp.NewMetrics(o.Logger)
	locks := lockmod.New(lockmod.Config{
		Clock:    o.Clock,
		Epoch:    epoch,
		Bumper:   bumper,
		Observer: metrics.Observer(),
	})
	srv := resp.New(resp.Config{
		Dir:         dir,
		Fsync:       o.Fsync,
		MaxClients:  o.MaxClients,
		Limits:      limits,
		Logger:      o.Logger,
		Users:       o.Users,
		LogLevel:    o.LogLevel,
		TLS:         o.TLS,
		AuditEvents: o.AuditEvents,
	}, resp.Backends{Store: store, Locks: locks, Metrics: metrics, Cluster: clusterOf(node)})
	if o.Metrics != nil {
		if err := metrics.Register(o.Metrics); err != nil {
			locks.Close()
			store.Close()
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	if node != nil {
		// The seam between Raft and the server (package cluster, api.go):
		// the server applies the log's entries through its command table,
		// and leadership pauses and resumes the lock module (and ends the
		// subscriptions of a node that stops leading, and answers the
		// clients blocked in BLPOP and the like, resp/blocking.go).
		if err := node.Start(srv, srv.Leadership()); err != nil {
			node.Close()
			locks.Close()
			store.Close()
			return nil, err
		}
	}
	db := &DB{dir: dir, log: o.Logger, store: store, locks: locks, srv: srv, node: node, closed: make(chan struct{})}
	// SHUTDOWN, from a client, ends the server on its own: the keyspace
	// follows it.
	go func() {
		<-srv.Done()
		db.closeStore()
	}()
	o.Logger.Info("store opened", "dir", dir, "epoch", epoch, "fsync", o.Fsync.String())
	return db, nil
}

// Epoch is the epoch this open made durable (SPEC §2).
func (db *DB) Epoch() uint64 { return db.srv.Epoch() }

// Serve serves RESP clients on ln until Close, with the users, limits and
// TLS of Options, and then returns ErrClosed. It may be called for any
// number of listeners, at once.
func (db *DB) Serve(ln net.Listener) error {
	if db.node != nil {
		ln = db.node.Serve(ln) // Raft's peers share the port (SPEC §10)
	}
	if err := db.srv.Serve(ln); !errors.Is(err, resp.ErrServerClosed) {
		return err
	}
	return ErrClosed
}

// ServeMetrics serves the store's Prometheus metrics at /metrics on ln,
// until Close; then it returns ErrClosed.
func (db *DB) ServeMetrics(ln net.Listener) error {
	if err := db.srv.ServeMetrics(ln); !errors.Is(err, resp.ErrServerClosed) {
		return err
	}
	return ErrClosed
}

// ServeHTTP serves on ln, until Close, the dashboard at / and the
// Prometheus metrics at /metrics (SPEC §14: --http-addr), behind HTTP
// basic auth with Options.Users and over TLS with Options.TLS; then it
// returns ErrClosed.
func (db *DB) ServeHTTP(ln net.Listener) error {
	page := dashboard.New(db.srv)
	defer page.Close()
	if err := db.srv.ServeHTTP(ln, page); !errors.Is(err, resp.ErrServerClosed) {
		return err
	}
	return ErrClosed
}

// DefaultCloseGrace is how long Close lets running commands finish.
const DefaultCloseGrace = 30 * time.Second

// Close is Shutdown with DefaultCloseGrace.
func (db *DB) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCloseGrace)
	defer cancel()
	return db.Shutdown(ctx)
}

// Shutdown stops serving, answers the waiters in line, lets running
// commands finish until ctx ends (then cuts them), and closes the
// keyspace. Leases end with it (LOCK-10: the next open is a new epoch). It
// is safe to call more than once; every call waits for the end.
func (db *DB) Shutdown(ctx context.Context) error {
	if err := db.srv.Shutdown(ctx); err != nil {
		return err
	}
	<-db.closed
	return db.closeErr
}

// Done is closed once the store is closed, whoever asked (Close, or a
// client's SHUTDOWN).
func (db *DB) Done() <-chan struct{} { return db.closed }

func (db *DB) closeStore() {
	db.closeOnce.Do(func() {
		if db.node != nil {
			if err := db.node.Close(); err != nil {
				db.log.Warn("cluster: raft did not stop cleanly", "err", err)
			}
		}
		if err := db.store.Close(); err != nil {
			db.closeErr = fmt.Errorf("close store: %w", err)
		} else {
			db.log.Info("store closed; bye")
		}
		close(db.closed)
	})
}

func openNode(dir string, store *kv.Store, o Options) (*cluster.Node, error) {
	c := o.Cluster
	return cluster.Open(cluster.Config{
		Dir:               dir,
		NodeID:            c.NodeID,
		Peers:             c.Peers,
		Addr:              c.Addr,
		ElectionTimeout:   c.ElectionTimeout,
		Key:               c.Key,
		Logger:            o.Logger,
		Store:             store,
		SnapshotThreshold: c.SnapshotThreshold,
		TrailingLogs:      c.TrailingLogs,
	})
}

// clusterOf is node as resp sees it: nil (no interface holding a nil
// pointer) for a single server.
func clusterOf(node *cluster.Node) resp.Cluster {
	if node == nil {
		return nil
	}
	return node
}

// Node is the store's cluster node, nil for a single server.
func (db *DB) Node() *cluster.Node { return db.node }
