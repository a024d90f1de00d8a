package cluster_test

// The dashboard of a cluster's node (SPEC §14): its role, the epoch, the
// leader and every peer with its lag; and on the leader, the locks.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
)

func TestClusterDashboardShowsLeaderAndPeers(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	f := (l + 1) % 3
	ctx := context.Background()
	if err := tc.client(l).Do(ctx, "LOCK.HOLD", "jobs", "a", "r1", "OWNER", "w-1").Err(); err != nil {
		t.Fatal(err)
	}
	tc.caughtUp(l)
	summary := func(i int) (s struct {
		Node struct {
			Role, Leader, Self string
			Epoch              uint64
			Peers              []struct {
				ID, Addr     string
				Applied, Lag int64
			}
		}
		Locks []struct {
			Lock   string
			Leases int64
		}
	}) {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- tc.nodes[i].db.ServeHTTP(ln) }()
		t.Cleanup(func() {
			ln.Close()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, tenure.ErrClosed) && !errors.Is(err, net.ErrClosed) {
					t.Logf("ServeHTTP: %v", err)
				}
			case <-time.After(10 * time.Second):
			}
		})
		res, err := http.Get("http://" + ln.Addr().String() + "/api/summary")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return s
	}
	follow := summary(f)
	lead := summary(l)
	// The leader reads its peers' applied indices once a second.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		known := len(lead.Node.Peers) == 3
		for _, p := range lead.Node.Peers {
			known = known && p.Lag >= 0
		}
		if known {
			break
		}
		lead = summary(l)
	}
	if lead.Node.Role != "leader" || follow.Node.Role != "follower" {
		t.Fatalf("roles: leader's page says %q, follower's %q", lead.Node.Role, follow.Node.Role)
	}
	for _, s := range []string{lead.Node.Leader, follow.Node.Leader} {
		if s != tc.nodes[l].id {
			t.Fatalf("the leader is %s; a page says %q", tc.nodes[l].id, s)
		}
	}
	if len(lead.Node.Peers) != 3 || lead.Node.Epoch < 1 {
		t.Fatalf("the leader's page: epoch %d, peers %+v", lead.Node.Epoch, lead.Node.Peers)
	}
	for _, p := range lead.Node.Peers {
		if p.Applied < 0 || p.Lag < 0 {
			t.Errorf("the leader knows no lag of %+v", p)
		}
	}
	if len(lead.Locks) != 1 || lead.Locks[0].Lock != "jobs" || lead.Locks[0].Leases != 1 {
		t.Fatalf("the leader's locks: %+v", lead.Locks)
	}
}
