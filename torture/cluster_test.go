package main

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A cluster's clients follow the leader: -MOVED names it, -CLUSTERDOWN and
// a failed connection send them to the next node, and only a redirection
// says the command was not done (issue 20).
func TestLeaderStoreFollows(t *testing.T) {
	nodes := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	s := &leaderStore{nodes: nodes, clients: make([]*redis.Client, 3)}
	for _, tc := range []struct {
		name       string
		from       int
		err        error
		to         int
		redirected bool
	}{
		{"answered", 0, nil, 0, false},
		{"nil", 0, redis.Nil, 0, false},
		{"MOVED to n3", 0, proto("MOVED 12285 127.0.0.1:7003"), 2, true},
		{"MOVED to a node nobody knows", 2, proto("MOVED 0 127.0.0.1:9"), 0, true},
		{"CLUSTERDOWN", 1, proto("CLUSTERDOWN no leader"), 2, true},
		{"connection failed", 2, errors.New("read tcp: i/o timeout"), 0, false},
		{"TRYAGAIN stays", 1, proto("TRYAGAIN this leader's new epoch is not applied yet"), 1, false},
		{"FENCED stays", 1, proto("FENCED k"), 1, false},
	} {
		s.cur.Store(int32(tc.from))
		redirected := s.follow(tc.from, tc.err)
		if got := int(s.cur.Load()); got != tc.to || redirected != tc.redirected {
			t.Errorf("%s: from node %d went to %d, redirected %v; want %d, %v", tc.name, tc.from, got, redirected, tc.to, tc.redirected)
		}
	}
	// A reply of a node the store has already left does not move it back.
	s.cur.Store(1)
	s.follow(0, proto("MOVED 0 127.0.0.1:7003"))
	if got := s.cur.Load(); got != 1 {
		t.Errorf("a stale MOVED moved the store from node 1 to %d", got)
	}
}

// proto is an error reply, as go-redis's are: a redis.Error.
func proto(msg string) error { return errReply(msg) }

type errReply string

func (e errReply) Error() string { return string(e) }
func (errReply) RedisError()     {}

// In a cluster, a SET a follower redirected was not done: the check of the
// counters leaves it out, where one of unknown outcome stays in, and a
// node's restart is no new epoch (its epochs are the leaders').
func TestClusterHistory(t *testing.T) {
	const e1 = 1 << 32
	events := []Event{
		{Kind: evConfig, Detail: "ttl=1s cluster=3"},
		{Kind: evRestart, Detail: "node n1", Start: 1, Target: 1},
		{Kind: evRestart, Detail: "node n2", Start: 1, Target: 2},
		{Kind: evRestart, Detail: "node n3", Start: 1, Target: 3},
		{Kind: evWire, Args: []string{"SET", "counter:k", "1:4294967297", "FENCE", "4294967297"}, Start: 10, End: 20, Result: "ok", Target: 1},
		{Kind: evWire, Args: []string{"SET", "counter:k", "2:4294967297", "FENCE", "4294967297"}, Start: 30, End: 40, Result: "error", Reply: "MOVED 0 127.0.0.1:7002", Target: 3},
		{Kind: evWire, Args: []string{"SET", "counter:k", "3:4294967297", "FENCE", "4294967297"}, Start: 30, Result: "unknown", Target: 1},
		{Kind: evWire, Args: []string{"GET", "counter:k"}, Start: 50, End: 60, Result: "ok", Reply: "1:4294967297", Target: 2},
		{Kind: evRestart, Detail: "node n1", Start: 70, Target: 4},
		{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1, End: 80},
	}
	r := check(events, map[string]string{}, 0)
	if r.Cluster != 3 || len(r.Violations) != 0 {
		t.Fatalf("cluster %d, violations %q; want 3, none", r.Cluster, r.Violations)
	}
	if r.LinCounters.Ops != 3 || r.LinCounters.Unknown != 1 || r.LinCounters.Dropped != 1 {
		t.Errorf("counters: %d operations, %d unknown, %d left out; want 3, 1, 1", r.LinCounters.Ops, r.LinCounters.Unknown, r.LinCounters.Dropped)
	}
	// The redirected write, had it been done, would show.
	events[5].Reply, events[5].Result = "", "ok"
	if r := check(events, map[string]string{}, 0); len(r.Violations) == 0 {
		t.Errorf("an acknowledged write lost went unseen")
	}
}
