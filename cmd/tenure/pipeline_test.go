package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testKillLosesNoPipelinedWrite: writers send pipelines of 16 SETs with an
// INCR among them, and an HSET, an RPUSH and a ZADD of the pipeline's
// number (collection writes are batched too: resp/table.go's effBatch),
// which the server commits as one batch each; a SIGKILL
// in mid-stream loses none of the pipelines that were answered (SPEC §6),
// in every fsync mode: the replies of a batch are written only once its
// commit is in the operating system's hands (on disk, with always).
func testKillLosesNoPipelinedWrite(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	const writers, size = 4, 16
	acked := make([][]int, writers) // the pipelines answered, by writer
	counters := make([]int64, writers)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			for p := 0; ; p++ {
				pipe := rdb.Pipeline()
				var incr *redis.IntCmd
				for i := range size {
					pipe.Set(ctx, fmt.Sprintf("p:%d:%d:%d", w, p, i), fmt.Sprint(p*size+i), 0)
					if i == size/2 {
						incr = pipe.Incr(ctx, fmt.Sprintf("pctr:%d", w))
					}
				}
				pipe.HSet(ctx, fmt.Sprintf("ph:%d", w), fmt.Sprint(p), fmt.Sprint(p))
				pipe.RPush(ctx, fmt.Sprintf("pl:%d", w), fmt.Sprint(p))
				pipe.ZAdd(ctx, fmt.Sprintf("pz:%d", w), redis.Z{Score: float64(p), Member: fmt.Sprint(p)})
				if _, err := pipe.Exec(ctx); err != nil {
					return
				}
				acked[w], counters[w] = append(acked[w], p), incr.Val()
				answered.Add(size + 4)
			}
		})
	}
	srv.killMidStream(&answered, 40000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	lost := 0
	for w := range writers {
		got, err := rdb.Get(ctx, fmt.Sprintf("pctr:%d", w)).Int64()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if got < counters[w] || got > counters[w]+1 {
			t.Errorf("writer %d: counter %d after restart; %d were answered, at most one more sent", w, got, counters[w])
		}
		hash, err := rdb.HGetAll(ctx, fmt.Sprintf("ph:%d", w)).Result()
		if err != nil {
			t.Fatal(err)
		}
		list, err := rdb.LRange(ctx, fmt.Sprintf("pl:%d", w), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		zcard, err := rdb.ZCard(ctx, fmt.Sprintf("pz:%d", w)).Result()
		if err != nil {
			t.Fatal(err)
		}
		// The pipelines are sent one after another: the list holds the
		// answered ones in order, and at most the one in flight after them.
		if n := len(acked[w]); len(list) < n || len(list) > n+1 || int(zcard) < n || int(zcard) > n+1 || len(hash) < n || len(hash) > n+1 {
			t.Errorf("writer %d: %d pipelines answered; after restart RPUSHed %d, ZCARD %d, HLEN %d", w, n, len(list), zcard, len(hash))
		}
		for i, p := range acked[w] {
			if i >= len(list) || list[i] != fmt.Sprint(p) {
				lost++
				t.Errorf("writer %d: pipeline %d's RPUSH answered, not at %d of the list (%d long)", w, p, i, len(list))
			}
			if hash[fmt.Sprint(p)] != fmt.Sprint(p) {
				lost++
				t.Errorf("writer %d: pipeline %d's HSET answered, field missing", w, p)
			}
			if _, err := rdb.ZScore(ctx, fmt.Sprintf("pz:%d", w), fmt.Sprint(p)).Result(); err != nil {
				lost++
				t.Errorf("writer %d: pipeline %d's ZADD answered, ZSCORE: %v", w, p, err)
			}
		}
		for _, p := range acked[w] {
			keys := make([]string, size)
			for i := range keys {
				keys[i] = fmt.Sprintf("p:%d:%d:%d", w, p, i)
			}
			vals, err := rdb.MGet(ctx, keys...).Result()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if v != fmt.Sprint(p*size+i) {
					lost++
					t.Errorf("%s: answered OK in a pipeline, now %v", keys[i], v)
				}
			}
		}
	}
	t.Logf("--fsync %s: %d commands answered before the kill, %d lost", mode, answered.Load(), lost)
}
