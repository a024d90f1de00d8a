package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// leaderStore is a client of a cluster that follows its leader, as a Redis
// Cluster client does, through the harness's proxies (one per node, so
// that the proxies see every command): it sends each command to the node
// it believes leads, and moves on when the node says it does not
// (-MOVED to the leader, -CLUSTERDOWN) or stops answering. It is the
// sdk/locks Store of a cluster's lock clients, and the counters' client.
//
// A command answered -MOVED or -CLUSTERDOWN was not done (a follower does
// nothing but redirect), so with resend set it is sent again to the
// leader at once; one whose connection failed may have been done, and its
// error is returned as it came (the SDK retries a request id itself).
type leaderStore struct {
	clients []*redis.Client // one per node, through its proxy
	nodes   []string        // the nodes' advertised addresses (--peers: their proxies'), as -MOVED names them
	resend  bool
	cur     atomic.Int32
}

func newLeaderStore(proxies, nodes []string, poolSize int, resend bool) *leaderStore {
	s := &leaderStore{nodes: nodes, resend: resend}
	for _, a := range proxies {
		s.clients = append(s.clients, redis.NewClient(&redis.Options{
			Addr: a, ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second,
			PoolSize: poolSize, MaxRetries: -1,
		}))
	}
	return s
}

// Do sends args to the node believed to lead. A redirection is resent,
// for up to half a second (an election takes about an election timeout);
// after a round of the nodes, with a pause between tries.
func (s *leaderStore) Do(ctx context.Context, args ...any) *redis.Cmd {
	giveUp := time.Now().Add(500 * time.Millisecond)
	for try := 1; ; try++ {
		i := int(s.cur.Load())
		cmd := s.clients[i].Do(ctx, args...)
		redirected := s.follow(i, cmd.Err())
		if !redirected || !s.resend || ctx.Err() != nil || time.Now().After(giveUp) {
			return cmd
		}
		if try >= len(s.clients) && !sleep(ctx, 50*time.Millisecond) {
			return cmd
		}
	}
}

// follow moves the belief after a reply from node i, and says whether the
// reply was a redirection: a command certainly not done.
func (s *leaderStore) follow(i int, err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		// The node is down, frozen or cut off: try the next.
		s.cur.CompareAndSwap(int32(i), int32((i+1)%len(s.clients)))
		return false
	}
	msg := rerr.Error()
	switch {
	case strings.HasPrefix(msg, "MOVED "):
		f := strings.Fields(msg)
		next := (i + 1) % len(s.clients)
		for j, n := range s.nodes {
			if len(f) == 3 && n == f[2] {
				next = j
			}
		}
		s.cur.CompareAndSwap(int32(i), int32(next))
		return true
	case strings.HasPrefix(msg, "CLUSTERDOWN"):
		s.cur.CompareAndSwap(int32(i), int32((i+1)%len(s.clients)))
		return true
	}
	return false
}

func (s *leaderStore) Close() {
	for _, c := range s.clients {
		c.Close()
	}
}
