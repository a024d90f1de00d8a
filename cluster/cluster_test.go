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
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/sdk/locks"
)

// SPEC §10: a new cluster elects a leader within 5 s; a write on the
// leader reaches every node's applied state; the others answer MOVED.
func TestClusterElectsReplicatesAndRedirects(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	leader := tc.client(l)
	if err := leader.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := leader.Incr(ctx, "{greeting}n").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := leader.Get(ctx, "greeting").Result(); err != nil || v != "hello" {
		t.Fatalf("GET on the leader: %q %v", v, err)
	}
	// In process (SPEC §11) the leader's DB.Do goes through the log too.
	db := tc.nodes[l].db
	if v, err := db.Do(ctx, "INCRBY", "{greeting}n", 2).Int(); err != nil || v != 3 {
		t.Fatalf("DB.Do INCRBY on the leader: %v %v", v, err)
	}
	if err := tc.nodes[(l+1)%3].db.Do(ctx, "GET", "greeting").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("DB.Do GET on a follower: %v, want MOVED", err)
	}
	tc.caughtUp(l)
	epoch := tc.infoField(l, "locks", "epoch")
	for i, n := range tc.nodes {
		if got := tc.infoField(i, "keyspace", "db0"); !strings.HasPrefix(got, "keys=2,") {
			t.Errorf("%s: INFO keyspace db0 %q, want 2 keys", n.id, got)
		}
		if got := tc.infoField(i, "locks", "epoch"); got != epoch || epoch == "0" {
			t.Errorf("%s: INFO locks epoch %q, the leader's %q", n.id, got, epoch)
		}
		if got := tc.infoField(i, "cluster", "cluster_enabled"); got != "1" {
			t.Errorf("%s: cluster_enabled %q", n.id, got)
		}
		if i == l {
			continue
		}
		err := tc.client(i).Get(ctx, "greeting").Err()
		want := fmt.Sprintf("MOVED %d %s", resp.KeySlot([]byte("greeting")), tc.nodes[l].addr)
		if err == nil || err.Error() != want {
			t.Errorf("GET on follower %s: %v, want %s", n.id, err, want)
		}
		if err := tc.client(i).Ping(ctx).Err(); err != nil {
			t.Errorf("PING on follower %s: %v", n.id, err)
		}
		if role, err := tc.client(i).Do(ctx, "ROLE").Slice(); err != nil || role[0] != "slave" {
			t.Errorf("ROLE on follower %s: %v %v", n.id, role, err)
		}
	}
	if role, err := leader.Do(ctx, "ROLE").Slice(); err != nil || role[0] != "master" || len(role[2].([]any)) != 2 {
		t.Errorf("ROLE on the leader: %v %v", role, err)
	}
	info, err := leader.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		t.Errorf("CLUSTER INFO: %q %v", info, err)
	}
	slots, err := tc.client((l + 1) % 3).ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || slots[0].Nodes[0].Addr != tc.nodes[l].addr || len(slots[0].Nodes) != 3 {
		t.Errorf("CLUSTER SLOTS on a follower: %+v %v", slots, err)
	}
}

// SPEC §10: a node that knows no leader answers -CLUSTERDOWN.
func TestClusterDownWithoutMajority(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	left := (l + 1) % 3
	for i := range tc.nodes {
		if i != left {
			tc.stop(i)
		}
	}
	ctx := context.Background()
	c := tc.client(left)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Get(ctx, "k").Err()
		if err != nil && err.Error() == "CLUSTERDOWN no leader" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET on a lone node: %v, want CLUSTERDOWN no leader", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if info, err := c.ClusterInfo(ctx).Result(); err != nil || !strings.Contains(info, "cluster_state:fail") {
		t.Errorf("CLUSTER INFO: %q %v", info, err)
	}
	for _, sub := range []string{"SLOTS", "SHARDS"} {
		if v, err := c.Do(ctx, "CLUSTER", sub).Result(); err == nil || err.Error() != "CLUSTERDOWN no leader" {
			t.Errorf("CLUSTER %s without a leader: %v %v, want CLUSTERDOWN no leader", sub, v, err)
		}
	}
}

// SPEC §10: go-redis's ClusterClient works unmodified, and so does the Go
// SDK's Hold over it.
func TestClusterClientAndHold(t *testing.T) {
	tc := newCluster(t, 3)
	tc.leader(5 * time.Second)
	ctx := context.Background()
	cc := tc.clusterClient()
	for i := range 20 {
		k := "key" + strconv.Itoa(i)
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s: %v %v", k, v, err)
		}
	}
	lock, err := locks.OpenLock(cc, "jobs", locks.TTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var fence uint64
	err = lock.Hold(ctx, "j1", func(ctx context.Context, lease *locks.Lease) error {
		fence = uint64(lease.Fence)
		return cc.Do(ctx, "SET", "j1-out", "done", "FENCE", fence).Err()
	})
	if err != nil || fence == 0 {
		t.Fatalf("Hold over a ClusterClient: fence %d, %v", fence, err)
	}
	if v, err := cc.Get(ctx, "j1-out").Result(); err != nil || v != "done" {
		t.Fatalf("the fenced write: %q %v", v, err)
	}
}

// LOCK-14: closing the leader elects another, which starts a new epoch
// through the log before it grants, answers LOCK.* -TRYAGAIN until then,
// and grants fences larger than every fence before.
func TestClusterFailoverIsARestart(t *testing.T) {
	tc := newCluster(t, 3)
	ctx := context.Background()
	var last uint64
	for round := range 3 {
		l := tc.leader(5 * time.Second)
		c := tc.client(l)
		for i := range 3 {
			v, err := c.Do(ctx, "LOCK.HOLD", "jobs", "k"+strconv.Itoa(i), fmt.Sprintf("r%d-%d", round, i), "TTL", 5000).Slice()
			if err != nil {
				t.Fatalf("round %d: LOCK.HOLD: %v", round, err)
			}
			fence := uint64(v[1].(int64))
			if fence <= last {
				t.Fatalf("round %d: fence %d after %d (LOCK-02, LOCK-14)", round, fence, last)
			}
			last = fence
		}
		if err := c.Set(ctx, "round", round, 0).Err(); err != nil {
			t.Fatal(err)
		}
		epoch := last >> 32
		tc.stop(l)
		tc.start(l)
		// While the new leader's epoch entry is not applied, LOCK.* answer
		// TRYAGAIN; once it is, a new epoch with no lease of the old one.
		sawTryAgain := false
		nl := -1
		deadline := time.Now().Add(5 * time.Second)
		for nl < 0 {
			for i, n := range tc.nodes {
				if n.db == nil || !strings.HasPrefix(tc.infoField(i, "replication", "role"), "master") {
					continue
				}
				_, err := tc.client(i).Do(ctx, "LOCK.INFO", "jobs", "k0").Result()
				switch {
				case err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN"):
					sawTryAgain = true
				case err == nil || errors.Is(err, redis.Nil):
					nl = i
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no new leader granting; logs:\n%s", round, tc.log.String())
			}
		}
		_ = sawTryAgain // seen or not depending on timing; TestTryAgainBeforeEpoch checks it
		if got := tc.infoField(nl, "locks", "epoch"); got == strconv.FormatUint(epoch, 10) {
			t.Fatalf("round %d: the new leader kept epoch %s", round, got)
		}
		// Every node's INFO tells the epoch it applied (SPEC §10).
		tc.caughtUp(nl)
		for i, n := range tc.nodes {
			if n.db != nil && tc.infoField(i, "locks", "epoch") != tc.infoField(nl, "locks", "epoch") {
				t.Errorf("round %d: %s says epoch %s, the leader %s", round, n.id, tc.infoField(i, "locks", "epoch"), tc.infoField(nl, "locks", "epoch"))
			}
		}
		if v, err := tc.client(nl).Get(ctx, "round").Int(); err != nil || v != round {
			t.Fatalf("round %d: the acknowledged write after failover: %v %v", round, v, err)
		}
		// The old lease is gone with its epoch (LOCK-10, LOCK-14).
		if n, err := tc.client(nl).Do(ctx, "LOCK.INFO", "jobs", "k0").Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("round %d: LOCK.INFO after failover: %v %v, want no lease", round, n, err)
		}
	}
}

// LOCK-14: a leader whose epoch entry is not applied answers -TRYAGAIN.
// The entry cannot commit without a majority: a lone survivor of a
// three-node cluster that was leader loses its lease and stops granting.
func TestClusterLeaderAloneStopsGranting(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	v, err := c.Do(ctx, "LOCK.HOLD", "jobs", "k", "r1", "TTL", 10000).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range tc.nodes {
		if i != l {
			tc.stop(i)
		}
	}
	// Within LeaderLeaseTimeout the leader steps down: its lease ends, and
	// it grants and renews no more.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Do(ctx, "LOCK.RENEW", v[0]).Result()
		if err != nil && (strings.HasPrefix(err.Error(), "CLUSTERDOWN") || strings.HasPrefix(err.Error(), "MOVED")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a leader without a majority still renews: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A node restarted with its --dir catches up, and applies no entry twice.
func TestClusterRestartReplaysNothingTwice(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	for i := range 50 {
		if err := c.Incr(ctx, "counter").Err(); err != nil {
			t.Fatal(err)
		}
		_ = i
	}
	tc.caughtUp(l)
	f := (l + 1) % 3
	before := tc.nodes[f].db.Node().AppliedIndex()
	tc.stop(f)
	for range 10 {
		if err := c.Incr(ctx, "counter").Err(); err != nil {
			t.Fatal(err)
		}
	}
	tc.start(f)
	tc.caughtUp(l)
	node := tc.nodes[f].db.Node()
	// Only what it missed: the ten INCRs (and any sweep or epoch entry
	// since), never the entries its keyspace held at index <= before.
	if applies := node.Applies(); applies < 10 || uint64(applies) > node.AppliedIndex()-before {
		t.Fatalf("restarted follower applied %d entries, between %d and %d expected", applies, 10, node.AppliedIndex()-before)
	}
	// The follower's keyspace now says 60: make it the leader to read it.
	tc.stop(l)
	tc.start(l)
	nl := tc.leader(5 * time.Second)
	if v, err := tc.client(nl).Get(ctx, "counter").Int(); err != nil || v != 60 {
		t.Fatalf("counter after restarts: %v %v, want 60", v, err)
	}
}

// LOCK-14: the new leader answers LOCK.* -TRYAGAIN until its epoch entry
// is applied, and grants in the new epoch after.
func TestClusterTryAgainBeforeEpoch(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	v, err := tc.client(l).Do(ctx, "LOCK.HOLD", "jobs", "k", "r1").Slice()
	if err != nil {
		t.Fatal(err)
	}
	before := uint64(v[1].(int64))
	var releases []func()
	for i, n := range tc.nodes {
		if i != l {
			releases = append(releases, n.db.Node().HoldEpochEntries())
		}
	}
	tc.stop(l)
	nl := -1
	for deadline := time.Now().Add(5 * time.Second); nl < 0; {
		for i, n := range tc.nodes {
			if n.db != nil {
				if _, self := n.db.Node().Leader(); self {
					nl = i
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := tc.client(nl)
	for _, args := range [][]any{{"LOCK.HOLD", "jobs", "k", "r2"}, {"LOCK.RENEW", v[0]}, {"LOCK.INFO", "jobs", "k"}} {
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
			t.Errorf("%v before the epoch entry: %v, want TRYAGAIN", args, err)
		}
	}
	// Keyspace writes do not wait for the epoch.
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET before the epoch entry: %v", err)
	}
	for _, release := range releases {
		release()
	}
	tc.leader(5 * time.Second)
	v2, err := c.Do(ctx, "LOCK.HOLD", "jobs", "k", "r2").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if after := uint64(v2[1].(int64)); after>>32 <= before>>32 {
		t.Fatalf("fence %#x after %#x: not a later epoch", after, before)
	}
}

// SPEC §10: five nodes survive two failures, the leader among them.
func TestClusterOfFiveSurvivesTwoFailures(t *testing.T) {
	tc := newCluster(t, 5)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	if err := tc.client(l).Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tc.stop(l)
	tc.stop((l + 1) % 5)
	nl := tc.leader(5 * time.Second)
	if v, err := tc.client(nl).Incr(ctx, "k").Result(); err != nil || v != 2 {
		t.Fatalf("INCR after two failures: %v %v", v, err)
	}
}

// SPEC §11 in a cluster: a hold in process is granted on the leader only,
// and its lease ends when the node stops leading.
func TestClusterHoldInProcess(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	f := (l + 1) % 3
	onFollower, err := locks.OpenLock(tc.nodes[f].db, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if err := onFollower.TryHold(ctx, "k", func(context.Context, *locks.Lease) error { return nil }); !errors.Is(err, tenure.ErrNotLeading) {
		t.Fatalf("a hold in process on a follower: %v, want ErrNotLeading", err)
	}
	onLeader, err := locks.OpenLock(tc.nodes[l].db, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- onLeader.Hold(ctx, "k", func(ctx context.Context, lease *locks.Lease) error {
			close(held)
			<-ctx.Done() // until the lease ends
			return nil
		})
	}()
	<-held
	for i := range tc.nodes {
		if i != l {
			tc.stop(i)
		}
	}
	select {
	case err := <-result:
		if !errors.Is(err, locks.ErrLost) {
			t.Fatalf("the hold's end: %v, want ErrLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader lost its majority and the hold in process goes on")
	}
}

// MULTI/EXEC on the leader: one entry, applied alike everywhere; WATCH
// decided on the leader; LOCK.* inside act on the leader's lock module in
// the transaction's window, their replies in order with the others.
func TestClusterTransactions(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	v, err := c.Do(ctx, "LOCK.HOLD", "jobs", "k", "r1", "TTL", 5000).Slice()
	if err != nil {
		t.Fatal(err)
	}
	lease, fence := v[0].(string), v[1].(int64)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{t}a", "1", 0)
		p.Do(ctx, "LOCK.RENEW", lease, "TTL", 7000)
		p.Do(ctx, "SET", "{t}out", "x", "FENCE", fence)
		p.Incr(ctx, "{t}a")
		return nil
	})
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	if n, err := cmds[2].(*redis.Cmd).Int64(); err == nil {
		t.Fatalf("the renewal's reply is the ms left, got %d; the set's is OK", n)
	}
	if left, err := cmds[1].(*redis.Cmd).Int64(); err != nil || left < 6000 {
		t.Fatalf("LOCK.RENEW inside EXEC: %v %v", left, err)
	}
	if n, err := cmds[3].(*redis.IntCmd).Result(); err != nil || n != 2 {
		t.Fatalf("INCR inside EXEC: %v %v", n, err)
	}
	// WATCH: a key written after it aborts the EXEC.
	watcher := tc.client(l)
	err = watcher.Watch(ctx, func(tx *redis.Tx) error {
		if err := c.Set(ctx, "{t}a", "changed", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "{t}a", "from-tx", 0)
			return nil
		})
		return err
	}, "{t}a")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("EXEC after a watched key changed: %v, want TxFailedErr", err)
	}
	tc.caughtUp(l)
	for i := range tc.nodes {
		if got := tc.infoField(i, "keyspace", "db0"); !strings.HasPrefix(got, "keys=2,") {
			t.Errorf("%s: %q, want 2 keys", tc.nodes[i].id, got)
		}
	}
	if v, err := c.Get(ctx, "{t}a").Result(); err != nil || v != "changed" {
		t.Fatalf("after the aborted EXEC: %q %v", v, err)
	}
}
