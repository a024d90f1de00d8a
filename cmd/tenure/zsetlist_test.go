package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestQueueKill (SPEC §6, §13): kill -9 in the middle of a list queue and
// a sorted-set queue, in every --fsync mode. Producers RPUSH and ZADD
// unique items (half of them pipelined); consumers take them with BLPOP,
// LMOVE into a list of their own, and ZPOPMIN. After the restart:
//
//   - no item is delivered twice, nor delivered and still queued;
//   - every item whose push was acknowledged is delivered or still queued,
//     but for at most one a consumer's pop in flight at the kill (its pop
//     may have happened, its answer never came);
//   - nothing is queued that no producer sent;
//   - every size (LLEN, ZCARD) is what its members count.
func TestQueueKill(t *testing.T) {
	bin := buildServer(t)
	for _, mode := range fsyncModes {
		t.Run(mode, func(t *testing.T) { testQueueKill(t, bin, mode) })
	}
}

type queueLog struct {
	mu                sync.Mutex
	sent, pendingSent map[string]bool // acknowledged pushes; pushes in flight at the kill
	got               map[string]int  // deliveries acknowledged, by item
	inFlightPops      int             // pops sent and never answered
	twice             []string
}

func (q *queueLog) delivered(items ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		q.got[it]++
		if q.got[it] == 2 {
			q.twice = append(q.twice, it)
		}
	}
}

func testQueueKill(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	lists, zsets := &queueLog{sent: map[string]bool{}, pendingSent: map[string]bool{}, got: map[string]int{}},
		&queueLog{sent: map[string]bool{}, pendingSent: map[string]bool{}, got: map[string]int{}}
	var answered atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	client := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 5 * time.Second})
	}
	const producers = 4
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := client()
			defer rdb.Close()
			ctx := context.Background()
			for i := 0; ; {
				n := 1
				if p%2 == 1 {
					n = 16
				}
				var items []string
				pipe := rdb.Pipeline()
				for j := range n {
					it := fmt.Sprintf("p%d-%d", p, i+j)
					items = append(items, it)
					if (i+j)%2 == 0 {
						pipe.RPush(ctx, "queue", it)
					} else {
						pipe.ZAdd(ctx, "zqueue", redis.Z{Score: float64(i + j), Member: it})
					}
				}
				_, err := pipe.Exec(ctx)
				for j, it := range items {
					log := lists
					if (i+j)%2 == 1 {
						log = zsets
					}
					log.mu.Lock()
					if err != nil {
						log.pendingSent[it] = true
					} else {
						log.sent[it] = true
					}
					log.mu.Unlock()
				}
				if err != nil {
					return
				}
				answered.Add(int64(n))
				i += n
			}
		}()
	}
	// Consumers: BLPOP, LMOVE into their own list (delivered = there), ZPOPMIN.
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := client()
			defer rdb.Close()
			ctx := context.Background()
			for !stop.Load() {
				var err error
				switch c {
				case 0:
					var v []string
					if v, err = rdb.Do(ctx, "BLPOP", "queue", "0.1").StringSlice(); err == nil {
						lists.delivered(v[1])
					}
				case 1:
					var v string
					if v, err = rdb.LMove(ctx, "queue", "taken", "LEFT", "RIGHT").Result(); err == nil {
						lists.delivered(v)
					}
				case 2:
					var zs []redis.Z
					if zs, err = rdb.ZPopMin(ctx, "zqueue", 3).Result(); err == nil {
						for _, z := range zs {
							zsets.delivered(z.Member.(string))
						}
					}
				}
				if err == redis.Nil {
					continue
				}
				if err != nil {
					log := lists
					if c == 2 {
						log = zsets
					}
					log.mu.Lock()
					log.inFlightPops++
					if c == 2 {
						log.inFlightPops += 2 // ZPOPMIN 3 may have taken three
					}
					log.mu.Unlock()
					return
				}
			}
		}()
	}
	srv.killMidStream(&answered, 30000, &wg)
	stop.Store(true)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	queued, _ := rdb.LRange(ctx, "queue", 0, -1).Result()
	taken, _ := rdb.LRange(ctx, "taken", 0, -1).Result()
	zs, _ := rdb.ZRange(ctx, "zqueue", 0, -1).Result()
	if n := rdb.LLen(ctx, "queue").Val(); n != int64(len(queued)) {
		t.Errorf("LLEN queue %d for %d elements", n, len(queued))
	}
	if n := rdb.ZCard(ctx, "zqueue").Val(); n != int64(len(zs)) {
		t.Errorf("ZCARD zqueue %d for %d members", n, len(zs))
	}
	// What LMOVE put in "taken" is delivered, answered or not: count it
	// once, from the list, rather than from the consumer's log.
	lists.mu.Lock()
	for _, it := range taken {
		if lists.got[it] == 0 {
			lists.got[it] = 1
			lists.inFlightPops-- // the pop in flight was this one
		}
	}
	lists.mu.Unlock()
	check := func(name string, log *queueLog, queued []string) {
		t.Helper()
		if len(log.twice) > 0 {
			t.Errorf("%s: delivered twice: %q", name, log.twice[:min(5, len(log.twice))])
		}
		inQueue := map[string]bool{}
		for _, it := range queued {
			if inQueue[it] {
				t.Errorf("%s: %s queued twice", name, it)
			}
			inQueue[it] = true
			if log.got[it] > 0 {
				t.Errorf("%s: %s delivered and still queued", name, it)
			}
			if !log.sent[it] && !log.pendingSent[it] {
				t.Errorf("%s: %s queued but never sent", name, it)
			}
		}
		lost := 0
		for it := range log.sent {
			if log.got[it] == 0 && !inQueue[it] {
				lost++
			}
		}
		if lost > max(log.inFlightPops, 0) {
			t.Errorf("%s: %d acknowledged items neither delivered nor queued (%d pops in flight at the kill)", name, lost, log.inFlightPops)
		}
		t.Logf("%s: %d sent, %d delivered, %d queued after the restart, %d unaccounted (pops in flight %d)",
			name, len(log.sent), len(log.got), len(queued), lost, log.inFlightPops)
	}
	check("list", lists, queued)
	check("zset", zsets, zs)
}
