package cluster_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterBlockingPops (SPEC §13): in a cluster a blocking pop waits on
// the leader (a follower answers -MOVED), is served through the log by a
// push from another client or a transaction, so that every node's list
// is the leader's, and is answered an error when its node stops leading.
func TestClusterBlockingPops(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(5 * time.Second)
	f := (l + 1) % 3
	ctx := context.Background()

	if err := tc.client(f).Do(ctx, "BLPOP", "k", "0").Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
		t.Fatalf("BLPOP on a follower: %v, want MOVED", err)
	}
	block := func(args ...any) <-chan any {
		ch := make(chan any, 1)
		before := tc.infoField(l, "clients", "blocked_clients")
		c := redis.NewClient(&redis.Options{Addr: tc.nodes[l].addr, MaxRetries: -1, Protocol: 2, ReadTimeout: -1, PoolSize: 1})
		t.Cleanup(func() { c.Close() })
		go func() {
			v, err := c.Do(ctx, args...).Result()
			if err != nil {
				ch <- err
				return
			}
			ch <- v
		}()
		deadline := time.Now().Add(5 * time.Second)
		for tc.infoField(l, "clients", "blocked_clients") == before {
			if time.Now().After(deadline) {
				t.Fatal("the client did not block")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return ch
	}
	answer := func(ch <-chan any) any {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("a blocked client was not answered")
			return nil
		}
	}

	first, second := block("BLPOP", "k", "0"), (<-chan any)(nil)
	second = block("BRPOP", "k", "0")
	leader := tc.client(l)
	if err := leader.RPush(ctx, "k", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if v := answer(first); strings.Join(strs(v), " ") != "k a" {
		t.Fatalf("first blocked: %v, want [k a]", v)
	}
	pipe := leader.TxPipeline()
	pipe.RPush(ctx, "k", "b")
	pipe.RPush(ctx, "k", "c")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if v := answer(second); strings.Join(strs(v), " ") != "k c" {
		t.Fatalf("second blocked, served after EXEC: %v, want [k c]", v)
	}
	if got := leader.LRange(ctx, "k", 0, -1).Val(); strings.Join(got, " ") != "b" {
		t.Errorf("the list: %q, want [b]", got)
	}
	tc.caughtUp(l)
	// Every node's keyspace is the leader's, once each has reclaimed the
	// list the first pop emptied (in its background, at its own time).
	for i := range tc.nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			want, _ := tc.nodes[l].db.Node().KeyspaceSnapshot()
			got, _ := tc.nodes[i].db.Node().KeyspaceSnapshot()
			if bytes.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's keyspace is not the leader's after the served pops", tc.nodes[i].id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The leader loses its majority: its blocked client is told.
	third := block("BLPOP", "empty", "0")
	for i := range tc.nodes {
		if i != l {
			tc.stop(i)
		}
	}
	v := answer(third)
	if err, ok := v.(error); !ok || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("a client blocked on a node that stopped leading: %v, want TRYAGAIN", v)
	}
}

func strs(v any) []string {
	a, _ := v.([]any)
	var out []string
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
