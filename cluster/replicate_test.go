package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SPEC §10 (a write is acknowledged once a majority has it; SIGTERM closes
// the store and exits) and LOCK-14: a follower that refuses some of the
// leader's AppendEntries (its log append failed) while the leader takes a
// steady stream of writes is sent every entry again and catches up, and
// every node stops promptly at the end. Over hashicorp/raft v1.7.3's
// pipeline, a refused AppendEntries could leave the goroutine that
// replicates to that follower blocked for good (cluster/node.go,
// rpcsInFlight): the follower got heartbeats but no entry again while the
// leader led, and the leader's Close waited for Raft until its
// last-resort bound. So the nodes' Raft transport must not pipeline, and
// the test asserts that first.
func TestClusterFollowerRefusingAppendsCatchesUpAndStops(t *testing.T) {
	tc := newCluster(t, 3)
	for _, n := range tc.nodes {
		if n.db.Node().Pipelines() {
			t.Fatalf("%s: Raft's transport pipelines AppendEntries", n.id)
		}
	}
	l := tc.leader(5 * time.Second)
	writes := tc.clusterClient()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var acked atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if writes.Set(ctx, "w"+strconv.Itoa(w)+":"+strconv.Itoa(i%100), i, 0).Err() == nil {
					acked.Add(1)
				}
			}
		}()
	}
	stopWriters := func() { cancel(); wg.Wait() }
	defer stopWriters()
	// progress waits until the writers had n more writes acknowledged.
	progress := func(what string, n int64) {
		t.Helper()
		from := acked.Load()
		for deadline := time.Now().Add(10 * time.Second); acked.Load() < from+n; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d writes acknowledged in 10 s", what, acked.Load()-from)
			}
			time.Sleep(time.Millisecond)
		}
	}
	progress("before", 200)

	for round := range 100 {
		l = tc.leader(5 * time.Second)
		f := tc.nodes[(l+1+round%2)%3].db.Node()
		f.FailLogAppends(1)
		for deadline := time.Now().Add(10 * time.Second); f.LogAppendsToFail() > 0; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the follower was sent no entry in 10 s", round)
			}
			time.Sleep(time.Millisecond)
		}
		progress("round "+strconv.Itoa(round), 50)
	}
	stopWriters()
	// Every follower is sent what the leader applied.
	l = tc.leader(5 * time.Second)
	want := tc.nodes[l].db.Node().AppliedIndex()
	for _, n := range tc.nodes {
		for deadline := time.Now().Add(10 * time.Second); n.db.Node().AppliedIndex() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%s applied %d after 10 s, the leader %d; logs:\n%s", n.id, n.db.Node().AppliedIndex(), want, tc.log.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Every node stops well within Close's last-resort bound (10 s), the
	// leader first, while its followers can still answer.
	for _, i := range []int{l, (l + 1) % 3, (l + 2) % 3} {
		start := time.Now()
		tc.stop(i)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s took %v to close", tc.nodes[i].id, took)
		}
	}
	if logs := tc.log.String(); strings.Contains(logs, "shutdown still waits") {
		t.Errorf("a node's Raft did not stop; logs:\n%s", logs)
	}
}
