package cluster_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
)

// A follower whose data directory is wiped catches up from a snapshot of
// the leader's keyspace: the log it would need is compacted away.
func TestClusterWipedFollowerCatchesUpFromSnapshot(t *testing.T) {
	small := func(o *tenure.ClusterOptions) { o.SnapshotThreshold, o.TrailingLogs = 16, 4 }
	tc := newCluster(t, 3, small)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	f := (l + 1) % 3
	tc.stop(f)
	if err := os.RemoveAll(tc.nodes[f].dir); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := c.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "ttl", "x", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	// Wait for a snapshot of the leader's that covers all but the last few
	// of those writes, so that the follower cannot be sent the log from
	// its start. (One taken while they went on, the first, may cover few:
	// the rest would come as entries.)
	covered := tc.nodes[l].db.Node().AppliedIndex() - 50
	deadline := time.Now().Add(10 * time.Second)
	for snapshotIndex(tc.nodes[l].dir) < covered {
		if time.Now().After(deadline) {
			t.Fatalf("the leader took no snapshot up to index %d", covered)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.start(f, small)
	tc.caughtUp(l)
	// A snapshot, not 200 entries one by one.
	if n := tc.nodes[f].db.Node().Applies(); n >= 100 {
		t.Fatalf("the wiped follower applied %d entries: no snapshot was installed", n)
	}
	if got := tc.infoField(f, "keyspace", "db0"); !strings.HasPrefix(got, "keys=201,expires=1,") {
		t.Fatalf("the wiped follower's keyspace: %q, want 201 keys, 1 with a ttl", got)
	}
	// And it goes on applying the log after the snapshot.
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tc.caughtUp(l)
	if got := tc.infoField(f, "keyspace", "db0"); !strings.HasPrefix(got, "keys=202,") {
		t.Fatalf("after the snapshot: %q, want 202 keys", got)
	}
}

// snapshotIndex is the index of the newest finished snapshot in a node's
// directory, 0 when there is none: hashicorp/raft names each TERM-INDEX-MS.
func snapshotIndex(dir string) uint64 {
	entries, _ := os.ReadDir(dir + "/raft/snapshots")
	var newest uint64
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if strings.HasSuffix(e.Name(), ".tmp") || len(parts) != 3 {
			continue
		}
		if i, err := strconv.ParseUint(parts[1], 10, 64); err == nil {
			newest = max(newest, i)
		}
	}
	return newest
}

// SPEC §10: CLUSTER MEET adds a voter, CLUSTER FORGET removes one; MEET
// of an address where no node answers is an error and changes nothing.
func TestClusterMeetAndForget(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().(*net.TCPAddr)
	dead.Close()
	if err := c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", deadAddr.Port).Err(); err == nil || !strings.Contains(err.Error(), "meet") {
		t.Fatalf("MEET of a closed port: %v, want an error", err)
	}
	if n := countNodes(t, c); n != 3 {
		t.Fatalf("after a failed MEET: %d nodes, want 3", n)
	}
	if err := c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", "nope").Err(); err == nil {
		t.Fatal("MEET with a bad port: no error")
	}

	// A fourth node, started to wait for MEET.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n4 := &testNode{id: "n4", addr: ln.Addr().String(), dir: t.TempDir()}
	tc.nodes = append(tc.nodes, n4)
	tc.startOn(3, ln, func(o *tenure.ClusterOptions) { o.Peers, o.Addr = nil, n4.addr })
	if err := tc.client(3).Get(ctx, "k").Err(); err == nil || err.Error() != "CLUSTERDOWN no leader" {
		t.Fatalf("a node waiting for MEET: %v, want CLUSTERDOWN no leader", err)
	}
	if err := c.Set(ctx, "before-meet", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", ln.Addr().(*net.TCPAddr).Port).Err(); err != nil {
		t.Fatalf("MEET: %v", err)
	}
	if n := countNodes(t, c); n != 4 {
		t.Fatalf("after MEET: %d nodes, want 4", n)
	}
	tc.caughtUp(l)
	if got := tc.infoField(3, "keyspace", "db0"); !strings.HasPrefix(got, "keys=1,") {
		t.Fatalf("the new node's keyspace: %q", got)
	}
	if err := c.Do(ctx, "CLUSTER", "FORGET", tc.nodes[l].id).Err(); err == nil {
		t.Fatal("FORGET of oneself: no error")
	}
	if err := c.Do(ctx, "CLUSTER", "FORGET", "n9").Err(); err == nil {
		t.Fatal("FORGET of an unknown node: no error")
	}
	if err := c.Do(ctx, "CLUSTER", "FORGET", "n4").Err(); err != nil {
		t.Fatalf("FORGET n4: %v", err)
	}
	if n := countNodes(t, c); n != 3 {
		t.Fatalf("after FORGET: %d nodes, want 3", n)
	}
}

func countNodes(t *testing.T, c *redis.Client) int {
	t.Helper()
	text, err := c.ClusterNodes(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(text, "\n")
}

// SPEC §10: a peer without the cluster key is refused, and logged; a
// client that sends Raft's own bytes meets RESP, never Raft.
func TestClusterPeerAuth(t *testing.T) {
	key := []byte("0123456789abcdef-cluster-key")
	tc := newCluster(t, 3, func(o *tenure.ClusterOptions) { o.Key = key })
	l := tc.leader(5 * time.Second)
	node := tc.nodes[l]

	for _, try := range []struct {
		name string
		key  []byte
	}{{"wrong key", []byte("not the key at all")}, {"no key", nil}} {
		nc, err := net.Dial("tcp", node.addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(nc, "\xfetenure-peer/2\n"+strings.Repeat("c", 32)+"\x02n9") // the hello, naming n9
		reply := make([]byte, 64)                                                  // the node's proof, then its challenge
		if _, err := io.ReadFull(nc, reply); err != nil {
			t.Fatalf("%s: no challenge: %v", try.name, err)
		}
		h := hmac.New(sha256.New, try.key)
		h.Write([]byte("dialer"))
		h.Write(reply[32:])
		h.Write([]byte("n9"))
		nc.Write(append(h.Sum(nil), 'R'))
		rest, _ := io.ReadAll(nc)
		if string(rest) != "-" {
			t.Errorf("%s: the peer answered %q, want a refusal and the connection closed", try.name, rest)
		}
		nc.Close()
	}
	if n := node.db.Node().PeersRefused(); n != 2 {
		t.Errorf("%d peers refused, want 2", n)
	}
	if !strings.Contains(tc.log.String(), "refused a peer connection") || !strings.Contains(tc.log.String(), "wrong cluster key") {
		t.Errorf("the refusals are not logged:\n%s", tc.log.String())
	}

	// Raft's transport opens with an RPC type byte (0: AppendEntries)
	// and msgpack; a client sending that reaches the RESP reader.
	nc, err := net.Dial("tcp", node.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte{0x00, 0x82, 0xa4, 'T', 'e', 'r', 'm', 0x05, '\r', '\n'})
	line, _ := bufio.NewReader(nc).ReadString('\n')
	if !strings.HasPrefix(line, "-ERR") && line != "" {
		t.Errorf("Raft's bytes from a client: %q, want a RESP error or nothing", line)
	}
	// The cluster is unmoved.
	if err := tc.client(l).Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}
