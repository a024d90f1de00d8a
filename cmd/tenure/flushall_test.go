package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestKillKeepsAnAnsweredFlushAll: whatever the fsync mode, an answered
// FLUSHALL is as durable as an answered SET (SPEC §6; issue 38's review:
// no crash test covered it). Keys are written, FLUSHALL is answered, then
// writers SET new keys until the process is SIGKILLed in mid-stream.
// After a restart none of the keys from before the FLUSHALL is back, and
// every SET answered after it is there.
func TestKillKeepsAnAnsweredFlushAll(t *testing.T) {
	bin := buildServer(t)
	for _, mode := range fsyncModes {
		t.Run(mode, func(t *testing.T) { testKillKeepsFlushAll(t, bin, mode) })
	}
}

func testKillKeepsFlushAll(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	ctx := context.Background()
	rdb := srv.client()
	pipe := rdb.Pipeline()
	for i := range 500 {
		pipe.Set(ctx, fmt.Sprintf("old:%d", i), "v", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	acked := make([][]int, writers)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1})
			defer c.Close()
			for i := 0; ; i++ {
				if c.Set(ctx, fmt.Sprintf("new:%d:%d", w, i), "v", 0).Err() != nil {
					return
				}
				acked[w] = append(acked[w], i)
				answered.Add(1)
			}
		}()
	}
	srv.killMidStream(&answered, 5000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	c := again.client()
	if old, err := c.Keys(ctx, "old:*").Result(); err != nil || len(old) != 0 {
		t.Fatalf("after the kill, %d keys from before the answered FLUSHALL are back (%v)", len(old), err)
	}
	n := 0
	for w, is := range acked {
		for _, i := range is {
			if err := c.Get(ctx, fmt.Sprintf("new:%d:%d", w, i)).Err(); err != nil {
				t.Fatalf("new:%d:%d, answered after the FLUSHALL, is lost: %v", w, i, err)
			}
			n++
		}
	}
	t.Logf("%s: FLUSHALL kept, %d answered SETs after it all there", mode, n)
}
