package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/inprocess"
)

// waitFor polls cond every 5 ms until it holds, or fails after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}

// LOCK-14: while the leader's lease runs, heartbeats confirm it and the
// log grows by nothing; once it has lapsed (as after a freeze) only an
// entry committed after the asking confirms it, and until then LOCK.*
// answers TRYAGAIN.
func TestClusterLapsedLeaseIsConfirmedByACommittedEntry_LOCK14(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	node := tc.nodes[l].db.Node()
	lastIndex := func() int { n, _ := strconv.Atoi(tc.infoField(l, "replication", "raft_last_index")); return n }
	before := lastIndex()
	time.Sleep(300 * time.Millisecond) // ten confirmations of a running lease
	if got := lastIndex(); got != before || !node.LocksReady() {
		t.Fatalf("a running lease: log %d → %d, ready %v; want heartbeats alone to confirm it", before, got, node.LocksReady())
	}
	resume := node.LapseLease()
	waitFor(t, 5*time.Second, "the lapsed lease stops grants", func() bool { return !node.LocksReady() })
	err := tc.client(l).Do(context.Background(), "LOCK.HOLD", "jobs", "k", "r", "WAIT", 0).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("LOCK.HOLD on a lapsed lease: %v, want TRYAGAIN", err)
	}
	lapsed := lastIndex()
	resume()
	waitFor(t, 5*time.Second, "the lease confirmed again", node.LocksReady)
	if got := lastIndex(); got <= lapsed {
		t.Fatalf("the lapsed lease was confirmed with the log at %d, as it was: want an entry committed after the asking", got)
	}
}

// LOCK-14, LOCK-13: a waiter held in process that is granted while the
// leader's lease has lapsed is told ErrNotLeading, and the lease so
// granted, which has no ttl to end it, is released.
func TestClusterInProcessGrantOnALapsedLeaseIsReleased_LOCK14(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	db, node, c := tc.nodes[l].db, tc.nodes[l].db.Node(), tc.client(l)
	ctx := context.Background()
	if err := c.Do(ctx, "LOCK.HOLD", "jobs", "k", "holder", "TTL", 1000).Err(); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		lease, err := db.HoldInProcess(ctx, inprocess.HoldRequest{Lock: "jobs", Key: "k", ReqID: "in-process", Wait: 10 * time.Second, HasWait: true})
		if err == nil {
			err = fmt.Errorf("granted %v", lease)
		}
		result <- err
	}()
	waitFor(t, 5*time.Second, "the in-process waiter in line", func() bool {
		v, _ := c.Do(ctx, "LOCK.INFO", "jobs", "k").Result()
		return strings.Contains(fmt.Sprint(v), " waiters 1 ") // RESP2: a flat array
	})
	resume := node.LapseLease()
	waitFor(t, 5*time.Second, "the lapsed lease stops grants", func() bool { return !node.LocksReady() })
	// The holder's lease runs out (1 s); the waiter is granted by the expiry.
	select {
	case err := <-result:
		if !errors.Is(err, tenure.ErrNotLeading) {
			t.Fatalf("the in-process waiter granted on a lapsed lease: %v, want ErrNotLeading", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-process waiter was never answered")
	}
	resume()
	waitFor(t, 5*time.Second, "the lease confirmed again", node.LocksReady)
	if v, err := c.Do(ctx, "LOCK.INFO", "jobs", "k").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LOCK.INFO after the refused grant: %v %v, want no lease (released)", v, err)
	}
}

// SPEC §10, linearizable reads: while the leader's lease runs, a GET is
// confirmed by a round of heartbeats and the log grows by nothing; once it
// has lapsed (as after a freeze, when hashicorp/raft may count answers to
// heartbeats sent before the pause) a GET is confirmed by a barrier entry
// committed after it came, and still answers what was written.
func TestClusterReadOnALapsedLeaseCommitsABarrier(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	node, c := tc.nodes[l].db.Node(), tc.client(l)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the lease", node.LocksReady)
	lastIndex := func() int { n, _ := strconv.Atoi(tc.infoField(l, "replication", "raft_last_index")); return n }
	before := lastIndex()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET under the lease: %q, %v", v, err)
	}
	if got := lastIndex(); got != before {
		t.Fatalf("a GET under the lease took the log from %d to %d; want heartbeats alone", before, got)
	}
	resume := node.LapseLease()
	defer resume()
	lapsed := lastIndex()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on a lapsed lease: %q, %v", v, err)
	}
	if got := lastIndex(); got <= lapsed {
		t.Fatalf("a GET on a lapsed lease left the log at %d; want a barrier entry after it", got)
	}
}
