package cluster_test

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SPEC §10: writes from many connections at once go through the log in
// groups (cluster/group.go), one entry for several proposals, and each
// proposer still gets its own reply, in its own protocol, as if its write
// were alone: INCRs of one counter answer every value from 1 to the total
// exactly once, HSET's count and HGETALL's map come back per connection,
// fewer entries than writes are applied, and every node ends with the
// leader's keyspace.
func TestClusterGroupsWritesOfManyConnections(t *testing.T) {
	tc := newCluster(t, 3)
	l := tc.leader(10 * time.Second)
	ctx := context.Background()
	const conns, each = 40, 25
	applied0 := tc.nodes[l].db.Node().Applies()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]int{}
	)
	for w := range conns {
		c := redis.NewClient(&redis.Options{Addr: tc.nodes[l].addr, MaxRetries: -1, Protocol: 2 + w%2})
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			h := "h" + strconv.Itoa(w)
			for i := range each {
				n, err := c.Incr(ctx, "counter").Result()
				if err != nil {
					t.Errorf("conn %d: INCR: %v", w, err)
					return
				}
				mu.Lock()
				seen[n]++
				mu.Unlock()
				added, err := c.HSet(ctx, h, "f"+strconv.Itoa(i), i).Result()
				if err != nil || added != 1 {
					t.Errorf("conn %d: HSET = %d, %v; want 1", w, added, err)
					return
				}
			}
			got, err := c.HGetAll(ctx, h).Result()
			if err != nil || len(got) != each || got["f3"] != "3" {
				t.Errorf("conn %d: HGETALL = %d fields (f3 %q), %v; want %d", w, len(got), got["f3"], err, each)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for n := int64(1); n <= conns*each; n++ {
		if seen[n] != 1 {
			t.Fatalf("INCR answered %d %d times; want once (answers: %d)", n, seen[n], len(seen))
		}
	}
	writes := int64(2 * conns * each)
	if entries := tc.nodes[l].db.Node().Applies() - applied0; entries >= writes {
		t.Errorf("%d entries applied for %d writes of %d connections at once; want fewer (groups)", entries, writes, conns)
	} else {
		t.Logf("%d writes in %d entries", writes, entries)
	}
	tc.caughtUp(l)
	want, err := tc.nodes[l].db.Node().KeyspaceSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range tc.nodes {
		if i == l {
			continue
		}
		b, err := n.db.Node().KeyspaceSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s's keyspace is not the leader's", n.id)
		}
	}
}
