package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// LOCK.WATCH in a cluster (SPEC §3, §10, LOCK-17): a follower answers
// -MOVED to the leader; a leader that stops leading answers its watchers
// at once with the key free (it vouches for no lease: they ended with its
// term); and a watcher that comes back with its fence to the new leader
// learns at once that the lease is gone, then sees the new leader's grant.
func TestClusterWatchAcrossFailover_LOCK17(t *testing.T) {
	tc := newCluster(t, 3)
	ctx := context.Background()
	l := tc.leader(5 * time.Second)
	c := tc.client(l)
	v, err := c.Do(ctx, "LOCK.HOLD", "jobs", "k", "r1", "TTL", 60000, "OWNER", "first").Slice()
	if err != nil {
		t.Fatal(err)
	}
	fence := v[1].(int64)
	follower := (l + 1) % 3
	err = tc.client(follower).Do(ctx, "LOCK.WATCH", "jobs", "k", "FENCE", fence).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "MOVED ") || !strings.HasSuffix(err.Error(), tc.nodes[l].addr) {
		t.Fatalf("LOCK.WATCH on a follower: %v, want -MOVED to %s", err, tc.nodes[l].addr)
	}

	// The leader loses its majority: it steps down and answers its watcher.
	watcher := redis.NewClient(&redis.Options{Addr: tc.nodes[l].addr, MaxRetries: -1, ReadTimeout: -1})
	defer watcher.Close()
	answered := make(chan error, 1)
	var stepped time.Time
	go func() {
		err := watcher.Do(ctx, "LOCK.WATCH", "jobs", "k", "FENCE", fence).Err()
		answered <- err
	}()
	waitFor(t, 5*time.Second, "the watcher waits on the leader", func() bool {
		return tc.infoField(l, "locks", "watchers") == "1"
	})
	for i := range tc.nodes {
		if i != l {
			tc.stop(i)
		}
	}
	waitFor(t, 10*time.Second, "the lone leader steps down", func() bool {
		if !tc.nodes[l].db.Node().LocksReady() && stepped.IsZero() {
			stepped = time.Now()
		}
		return !stepped.IsZero()
	})
	select {
	case err := <-answered:
		if !errors.Is(err, redis.Nil) {
			t.Fatalf("watcher of a leader that stepped down: %v, want null (no lease it vouches for)", err)
		}
		t.Logf("watcher answered null %v after the step-down was seen", time.Since(stepped))
	case <-time.After(5 * time.Second):
		t.Fatal("a leader that stepped down left its watcher waiting")
	}

	// The others come back and one leads, in a new epoch: a watcher that
	// comes back with its fence learns at once that the lease is gone, and
	// one with fence 0 sees the new leader's first grant.
	for i := range tc.nodes {
		if i != l {
			tc.start(i)
		}
	}
	nl := tc.leader(10 * time.Second)
	cc := tc.clusterClient()
	var res any
	waitFor(t, 10*time.Second, "LOCK.WATCH with the old fence answered through the cluster client", func() bool {
		res, err = cc.Do(ctx, "LOCK.WATCH", "jobs", "k", "FENCE", fence, "TIMEOUT", 1000).Result()
		return err == nil || errors.Is(err, redis.Nil)
	})
	if res != nil {
		t.Fatalf("after failover, the old fence's watcher got %v, want null: the lease ended with its epoch", res)
	}
	next := make(chan any, 1)
	go func() {
		v, err := cc.Do(ctx, "LOCK.WATCH", "jobs", "k", "FENCE", 0, "TIMEOUT", 10000).Result()
		if err != nil {
			next <- err
			return
		}
		next <- v
	}()
	waitFor(t, 5*time.Second, "a watcher on the new leader", func() bool {
		for i := range tc.nodes {
			if tc.nodes[i].db != nil && tc.infoField(i, "locks", "watchers") == "1" {
				return true
			}
		}
		return false
	})
	v2, err := tc.client(tc.leader(5*time.Second)).Do(ctx, "LOCK.HOLD", "jobs", "k", "r2", "OWNER", "second").Slice()
	if err != nil {
		t.Fatal(err)
	}
	got := <-next
	m, ok := got.(map[any]any)
	if !ok || m["fence"] != v2[1].(int64) || m["owner"] != "second" {
		t.Fatalf("watcher on the new leader (node %d): %v, want the new grant %v", nl, got, v2)
	}
	if v2[1].(int64) <= fence {
		t.Fatalf("the new leader's fence %d is not above %d (LOCK-02)", v2[1], fence)
	}
}

// SPEC §12: the Go SDK's Observe over a cluster client outlives a
// failover: the old leader's lease ended with its epoch, so it yields none,
// then the leader elected on the new node, with a larger term; the old
// leader's Campaign fails lost.
func TestClusterObserveAcrossFailover_LOCK17(t *testing.T) {
	tc := newCluster(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := tc.leader(5 * time.Second)
	cc := tc.clusterClient()
	sched, err := locks.OpenLock(cc, "sched", locks.TTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	obs := sched.Observe(ctx, "cron")
	nextLeader := func(what string) locks.Leader {
		t.Helper()
		select {
		case ld, ok := <-obs:
			if !ok {
				t.Fatalf("%s: the observer's channel closed", what)
			}
			return ld
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: nothing observed within 20s; logs:\n%s", what, tc.log.String())
			return locks.Leader{}
		}
	}
	if ld := nextLeader("the first"); !ld.None() {
		t.Fatalf("first: %v, want none", ld)
	}
	type campaign struct {
		fence chan int64
		done  chan error
	}
	run := func(value string) campaign {
		c := campaign{fence: make(chan int64, 1), done: make(chan error, 1)}
		go func() {
			c.done <- sched.Campaign(ctx, "cron", value, func(ctx context.Context, lease *locks.Lease) error {
				c.fence <- lease.Fence
				<-ctx.Done()
				return nil
			})
		}()
		return c
	}
	a := run("A")
	fa := <-a.fence
	if ld := nextLeader("A"); ld.Owner != "A" || ld.Fence != fa {
		t.Fatalf("%v, want A (%d)", ld, fa)
	}
	tc.stop(l)
	select {
	case err := <-a.done:
		if !errors.Is(err, locks.ErrLost) {
			t.Fatalf("A after its node stopped: %v, want lost", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A still leads 20s after its node stopped")
	}
	if ld := nextLeader("none after the failover"); !ld.None() {
		t.Fatalf("after the failover: %v, want none", ld)
	}
	tc.leader(10 * time.Second)
	b := run("B")
	fb := <-b.fence
	ld := nextLeader("B")
	if ld.Owner != "B" || ld.Fence != fb || ld.Fence>>32 <= fa>>32 {
		t.Fatalf("%v, want B (%d) in a later epoch than A (%d)", ld, fb, fa)
	}
	tc.start(l)
}
