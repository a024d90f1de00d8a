package cluster_test

import (
	"context"
	"testing"
	"time"
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
