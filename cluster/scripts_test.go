package cluster_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/cluster"
)

// TestClusterScripts (SPEC §13, LOCK-18): EVAL and EVALSHA go through the
// log as one entry; every node runs the script at the entry's instant, so
// TIME and math.random inside it decide alike: after a failover the new
// leader holds what the old one answered. EVAL_RO runs on the leader.
func TestClusterScripts(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	const body = `
local t = redis.call('time')
local v = t[1] .. '.' .. t[2] .. ':' .. tostring(math.random())
redis.call('set', KEYS[1], v)
redis.call('incr', KEYS[2])
return v`
	first, err := c.Eval(ctx, body, []string{"{s}v", "{s}n"}).Text()
	if err != nil {
		t.Fatalf("EVAL: %v", err)
	}
	sha, err := c.ScriptLoad(ctx, body).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	second, err := c.EvalSha(ctx, sha, []string{"{s}v2", "{s}n"}).Text()
	if err != nil {
		t.Fatalf("EVALSHA: %v", err)
	}
	if got, err := c.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"{s}v"}).Text(); err != nil || got != first {
		t.Fatalf("EVAL_RO on the leader: %q %v, want %q", got, err, first)
	}
	tc.caughtUp(l)
	tc.stop(l)
	nl := tc.leader(10 * time.Second)
	c2 := tc.client(nl)
	for key, want := range map[string]string{"{s}v": first, "{s}v2": second, "{s}n": "2"} {
		if got, err := c2.Get(ctx, key).Result(); err != nil || got != want {
			t.Errorf("%s on the new leader: %q %v, want %q", key, got, err, want)
		}
	}
}

// alike waits until every live node has applied what node l has, and
// fails unless their keyspaces are the same.
func (tc *testCluster) alike(l int) {
	tc.t.Helper()
	tc.caughtUp(l)
	want, err := tc.nodes[l].db.Node().KeyspaceSnapshot()
	if err != nil {
		tc.t.Fatal(err)
	}
	for i, n := range tc.nodes {
		if n.db == nil || i == l {
			continue
		}
		got, err := n.db.Node().KeyspaceSnapshot()
		if err != nil {
			tc.t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			tc.t.Fatalf("%s's keyspace is not the leader %s's", n.id, tc.nodes[l].id)
		}
	}
}

// loopForever is a script that writes and then never ends.
const loopForever = `redis.call('set', KEYS[1], 'never') while true do end`

// TestClusterScriptLoopingForeverIsKilled (SPEC §13, LOCK-18): a script
// runs on the leader alone, for its effects; one that never ends makes
// other clients wait, then answers them -BUSY past busy-reply-threshold,
// and SCRIPT KILL ends it though it wrote, for nothing of it was
// committed or proposed. Every node goes on applying, and a leader closed
// under such a script restarts without replaying it.
func TestClusterScriptLoopingForeverIsKilled(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	if err := tc.client(l).Do(ctx, "CONFIG", "SET", "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tc.client(l).Eval(ctx, loopForever, []string{"{k}never"}).Err() }()
	other := tc.client(l)
	deadline := time.Now().Add(5 * time.Second)
	for {
		// A read: a write that came in just before the script started
		// waits for it to end, as behind EXEC on a single server.
		err := other.Get(ctx, "{k}other").Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET while the script loops: %v, want -BUSY", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tc.client(l).ScriptKill(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT KILL of a script that wrote, in a cluster: %v, want OK", err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the killed script answered %v", err)
	}
	if err := other.Set(ctx, "{k}after", "v", 0).Err(); err != nil {
		t.Fatalf("SET after SCRIPT KILL: %v", err)
	}
	if n, err := other.Exists(ctx, "{k}never").Result(); err != nil || n != 0 {
		t.Fatalf("the killed script's write: EXISTS %d %v, want 0", n, err)
	}
	tc.alike(l)

	// The leader closed under a looping script: nothing of it is in the
	// log, so it restarts and applies on.
	go func() { done <- tc.client(l).Eval(ctx, loopForever, []string{"{k}never"}).Err() }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := other.Get(ctx, "{k}other").Err(); err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second looping script never made the leader busy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.stop(l)
	<-done
	tc.start(l)
	nl := tc.leader(10 * time.Second)
	c := tc.client(nl)
	if err := c.Set(ctx, "{k}restarted", "v", 0).Err(); err != nil {
		t.Fatalf("SET after the restart: %v", err)
	}
	tc.alike(nl)
	if n := tc.nodes[l].db.Node().AppliedIndex(); n < tc.nodes[nl].db.Node().AppliedIndex() {
		t.Fatalf("the restarted node applied %d", n)
	}
}

// TestClusterScriptErrorHalfWay (SPEC §13, LOCK-18): a script that fails
// half-way keeps, on every node, exactly the writes it made before; no
// follower runs it.
func TestClusterScriptErrorHalfWay(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	if err := c.Set(ctx, "{h}str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	err := c.Eval(ctx, `
redis.call('set', KEYS[1], '1')
redis.call('incr', KEYS[2])
redis.call('lpush', KEYS[3], 'x')
redis.call('set', KEYS[4], '4')`, []string{"{h}a", "{h}b", "{h}str", "{h}d"}).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("EVAL: %v, want WRONGTYPE", err)
	}
	tc.alike(l)
	for k, want := range map[string]string{"{h}a": "1", "{h}b": "1", "{h}str": "x"} {
		if got, err := c.Get(ctx, k).Result(); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", k, got, err, want)
		}
	}
	if n, _ := c.Exists(ctx, "{h}d").Result(); n != 0 {
		t.Errorf("the write after the error was made")
	}
	// No follower ran the script: none compiled it.
	for i := range tc.nodes {
		if i != l {
			if n := tc.infoField(i, "memory", "number_of_cached_scripts"); n != "0" {
				t.Errorf("%s caches %s scripts: a follower ran one", tc.nodes[i].id, n)
			}
		}
	}
}

// TestClusterScriptSpopAlike (SPEC §13, LOCK-18): SPOP inside a script
// replicates as SREM of what it popped on the leader, so every node ends
// with the same set, and with the members the script answered gone.
func TestClusterScriptSpopAlike(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	for i := range 50 {
		if err := c.SAdd(ctx, "{p}s", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.Eval(ctx, `
local a = redis.call('spop', KEYS[1], 5)
local b = redis.call('spop', KEYS[1])
table.insert(a, b)
redis.call('set', KEYS[2], tostring(math.random()))
return a`, []string{"{p}s", "{p}r"}).StringSlice()
	if err != nil || len(got) != 6 {
		t.Fatalf("EVAL: %v %v", got, err)
	}
	tc.alike(l)
	for _, m := range got {
		if ok, _ := c.SIsMember(ctx, "{p}s", m).Result(); ok {
			t.Errorf("%s popped, still a member", m)
		}
	}
	if n, _ := c.SCard(ctx, "{p}s").Result(); n != 44 {
		t.Errorf("SCARD %d, want 44", n)
	}
}

// TestClusterScriptTransactions (SPEC §13, LOCK-18): a script's write
// breaks another client's WATCH; EVAL, EVALSHA and EVAL_RO inside MULTI run on the
// leader for their effects, the queue's writes one entry, every node
// alike; a broken WATCH runs none of the queue.
func TestClusterScriptTransactions(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c, other := tc.client(l), tc.client(l)
	for i := range 10 {
		if err := c.SAdd(ctx, "{t}s", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Watch(ctx, func(tx *redis.Tx) error {
		if err := other.Eval(ctx, "return redis.call('set', KEYS[1], 'script')", []string{"{t}w"}).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "{t}w", "tx", 0)
			return nil
		})
		return err
	}, "{t}w")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC after a script wrote the WATCHed key: %v, want it aborted", err)
	}
	sha, err := c.ScriptLoad(ctx, "redis.call('incr', KEYS[1]) return redis.call('spop', KEYS[2])").Result()
	if err != nil {
		t.Fatal(err)
	}
	var popped *redis.Cmd
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{t}n", "10", 0)
		p.Eval(ctx, "redis.call('incr', KEYS[1]) return redis.call('get', KEYS[1])", []string{"{t}n"})
		popped = p.EvalSha(ctx, sha, []string{"{t}n", "{t}s"})
		p.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"{t}n"})
		p.Incr(ctx, "{t}n")
		return nil
	})
	if err != nil || len(cmds) != 5 {
		t.Fatalf("MULTI with EVAL and EVALSHA: %v %v", cmds, err)
	}
	if v := cmds[1].(*redis.Cmd).Val(); v != "11" {
		t.Errorf("EVAL inside MULTI answered %v, want 11", v)
	}
	if v := cmds[3].(*redis.Cmd).Val(); v != "12" {
		t.Errorf("EVAL_RO inside MULTI answered %v, want 12", v)
	}
	tc.alike(l)
	if v, _ := c.Get(ctx, "{t}n").Result(); v != "13" {
		t.Errorf("{t}n = %q, want 13", v)
	}
	if ok, _ := c.SIsMember(ctx, "{t}s", popped.Val()).Result(); ok {
		t.Errorf("%v popped inside MULTI, still a member", popped.Val())
	}
	// A WATCH broken before EXEC: the queue with a script runs nothing.
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		if err := other.Set(ctx, "{t}w", "changed", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Eval(ctx, "return redis.call('set', KEYS[1], 'script')", []string{"{t}w"})
			return nil
		})
		return err
	}, "{t}w")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC of a script after its WATCHed key changed: %v, want it aborted", err)
	}
	if v, _ := c.Get(ctx, "{t}w").Result(); v != "changed" {
		t.Errorf("{t}w = %q, want changed", v)
	}
	tc.alike(l)
}

// TestClusterScriptOldEntryApplies: a log written before effects holds
// scripts' bodies as EVAL entries; every node still applies them as it
// did, alike (SPEC §13, LOCK-18).
func TestClusterScriptOldEntryApplies(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	old := [][]byte{[]byte("eval"), []byte("redis.call('set', KEYS[1], 'old') return redis.call('incr', KEYS[2])"), []byte("2"), []byte("{o}a"), []byte("{o}n")}
	_, err := tc.nodes[l].db.Node().Propose(ctx, cluster.Entry{NowMs: time.Now().UnixMilli(), Proto: 2, Cmds: [][][]byte{old}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc.alike(l)
	if v, err := tc.client(l).Get(ctx, "{o}a").Result(); err != nil || v != "old" {
		t.Fatalf("{o}a = %q %v, want old", v, err)
	}
}
