package cluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SPEC §13's compare-and-set commands write through the log: every node
// judges the condition on the same value and ends with the same keyspace,
// whether the condition said yes or no.
func TestClusterCompareAndSetReplicates(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	ctx := context.Background()
	c := tc.client(l)
	k := key("cas", "k")
	for _, st := range []struct {
		cmd  []any
		want any
	}{
		{[]any{"SET", k, "a"}, "OK"},
		{[]any{"SET", k, "b", "IFEQ", "x"}, nil},
		{[]any{"SET", k, "b", "IFEQ", "a", "PX", "600000"}, "OK"},
		{[]any{"SET", k, "c", "IFDEQ", "0000000000000000"}, nil},
		{[]any{"SET", k, "c", "IFDNE", "0000000000000000"}, "OK"},
		{[]any{"DELEX", k, "IFNE", "c"}, int64(0)},
		{[]any{"SET", key("cas", "k2"), "v", "IFNE", "v"}, "OK"},
		{[]any{"DELIFEQ", key("cas", "k2"), "v"}, int64(1)},
	} {
		got, err := c.Do(ctx, st.cmd...).Result()
		if err == redis.Nil {
			got, err = nil, nil
		}
		if err != nil || got != st.want {
			t.Fatalf("%v = %v, %v; want %v", st.cmd, got, err, st.want)
		}
	}
	tc.caughtUp(l)
	leader, err := tc.nodes[l].db.Node().KeyspaceSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i := range tc.nodes {
		if i == l {
			continue
		}
		b, err := tc.nodes[i].db.Node().KeyspaceSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, leader) {
			t.Errorf("%s's keyspace is not the leader's", tc.nodes[i].id)
		}
	}
	if d, err := c.Do(ctx, "DIGEST", k).Text(); err != nil || len(d) != 16 {
		t.Errorf("DIGEST on the leader = %q, %v", d, err)
	}
}
