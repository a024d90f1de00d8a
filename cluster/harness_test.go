package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/internal/testenv"
)

// testElection is the election timeout of the tests' clusters: short, so
// that a failover takes a few hundred ms, and not so short that a loaded
// machine (the race detector, two cores shared) loses leaders for nothing.
const testElection = 300 * time.Millisecond

// testCluster is n tenures in this process, each on its own loopback
// listener and data directory, as --peers names them.
type testCluster struct {
	t     testing.TB
	peers []cluster.Peer
	nodes []*testNode
	key   []byte
	log   *testenv.LogBuffer // every node's log lines
}

type testNode struct {
	id, addr, dir string
	db            *tenure.DB
	served        chan struct{} // closed when Serve returned
}

// newCluster starts n nodes. Each listener is opened first, so --peers
// names real ports and no node ever races another for one.
func newCluster(t testing.TB, n int, opts ...func(*tenure.ClusterOptions)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, log: &testenv.LogBuffer{}}
	var lns []net.Listener
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		id := "n" + string(rune('1'+i))
		tc.peers = append(tc.peers, cluster.Peer{ID: id, Addr: ln.Addr().String()})
		tc.nodes = append(tc.nodes, &testNode{id: id, addr: ln.Addr().String(), dir: t.TempDir()})
	}
	for i := range tc.nodes {
		tc.startOn(i, lns[i], opts...)
	}
	t.Cleanup(func() {
		for i := range tc.nodes {
			tc.stop(i)
		}
	})
	return tc
}

func (tc *testCluster) options(node *testNode, opts ...func(*tenure.ClusterOptions)) tenure.Options {
	co := &tenure.ClusterOptions{NodeID: node.id, Peers: tc.peers, ElectionTimeout: testElection, Key: tc.key}
	for _, o := range opts {
		o(co)
	}
	logger := slog.New(slog.NewTextHandler(tc.log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return tenure.Options{Cluster: co, Logger: logger}
}

func (tc *testCluster) startOn(i int, ln net.Listener, opts ...func(*tenure.ClusterOptions)) {
	tc.t.Helper()
	node := tc.nodes[i]
	db, err := tenure.Open(node.dir, tc.options(node, opts...))
	if err != nil {
		ln.Close()
		tc.t.Fatalf("open %s: %v", node.id, err)
	}
	node.db, node.served = db, make(chan struct{})
	go func() {
		defer close(node.served)
		if err := db.Serve(ln); !errors.Is(err, tenure.ErrClosed) {
			tc.t.Errorf("serve %s: %v", node.id, err)
		}
	}()
}

// start restarts node i on its address and data directory.
func (tc *testCluster) start(i int, opts ...func(*tenure.ClusterOptions)) {
	tc.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", tc.nodes[i].addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.startOn(i, ln, opts...)
}

// stop closes node i, as a crash would end it as far as its peers see.
func (tc *testCluster) stop(i int) {
	node := tc.nodes[i]
	if node.db == nil {
		return
	}
	if err := node.db.Close(); err != nil {
		tc.t.Errorf("close %s: %v", node.id, err)
	}
	<-node.served
	node.db = nil
}

// leader waits until one live node leads with its epoch applied, and
// returns its index.
func (tc *testCluster) leader(within time.Duration) int {
	tc.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i, n := range tc.nodes {
			if n.db != nil && n.db.Node().LocksReady() {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	tc.t.Fatalf("no leader within %v; logs:\n%s", within, tc.log.String())
	return -1
}

// client is a plain client of node i.
func (tc *testCluster) client(i int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: tc.nodes[i].addr, MaxRetries: -1, Protocol: 2})
	tc.t.Cleanup(func() { c.Close() })
	return c
}

// clusterClient is a go-redis ClusterClient seeded with every node, as an
// application would configure one (docs/cluster.md).
func (tc *testCluster) clusterClient() *redis.ClusterClient {
	var addrs []string
	for _, n := range tc.nodes {
		addrs = append(addrs, n.addr)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                      addrs,
		ClusterStateReloadInterval: 200 * time.Millisecond,
		MaxRedirects:               8,
	})
	tc.t.Cleanup(func() { c.Close() })
	return c
}

// caughtUp waits until every live node has applied what node i has.
func (tc *testCluster) caughtUp(i int) {
	tc.t.Helper()
	want := tc.nodes[i].db.Node().AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range tc.nodes {
		for n.db != nil && n.db.Node().AppliedIndex() < want {
			if time.Now().After(deadline) {
				tc.t.Fatalf("%s applied %d, want %d", n.id, n.db.Node().AppliedIndex(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// infoField reads one field of INFO on node i.
func (tc *testCluster) infoField(i int, section, field string) string {
	tc.t.Helper()
	text, err := tc.client(i).Info(context.Background(), section).Result()
	if err != nil {
		tc.t.Fatalf("INFO on %s: %v", tc.nodes[i].id, err)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
