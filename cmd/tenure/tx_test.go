package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// In every --fsync mode (a SIGKILL is no machine crash), eight writers each run transactions of txKeys SETs
// sharing one tag (MULTI, SET tx:<tag>:0 … SET tx:<tag>:7, EXEC) until the
// process is SIGKILLed in mid-stream. After a restart on the same
// directory every tag is complete or absent, and every tag whose EXEC was
// answered is complete: an EXEC reaches the disk in one batch (SPEC §6).
func testKillLeavesTransactionsWhole(t *testing.T, bin, mode string) {
	const writers, txKeys = 8, 8
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	answered := make([][]string, writers) // the tags of the EXECs answered
	var count atomic.Int64
	var wg sync.WaitGroup
	value := strings.Repeat("v", 512) // a transaction spans several WAL blocks
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			for i := 0; ; i++ {
				tag := fmt.Sprintf("%d-%d", w, i)
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					for j := range txKeys {
						p.Set(ctx, fmt.Sprintf("tx:%s:%d", tag, j), value, 0)
					}
					return nil
				})
				if err != nil {
					return
				}
				answered[w] = append(answered[w], tag)
				count.Add(1)
			}
		}()
	}
	srv.killMidStream(&count, 5000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	keysOf := map[string]int{}
	iter := rdb.Scan(ctx, 0, "tx:*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		keysOf[k[len("tx:"):strings.LastIndexByte(k, ':')]]++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	for tag, n := range keysOf {
		if n != txKeys {
			t.Errorf("transaction %s: %d of its %d keys after the restart", tag, n, txKeys)
		}
	}
	for w := range answered {
		for _, tag := range answered[w] {
			if keysOf[tag] != txKeys {
				t.Errorf("transaction %s was answered, and has %d of its %d keys after the restart", tag, keysOf[tag], txKeys)
			}
		}
	}
	t.Logf("SIGKILL after %d answered EXECs of %d SETs; after the restart %d transactions, each whole", count.Load(), txKeys, len(keysOf))
}
