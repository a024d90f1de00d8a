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
	testKillLeavesWhole(t, bin, mode, func(ctx context.Context, rdb *redis.Client, keys []string, value string) error {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Set(ctx, k, value, 0)
			}
			return nil
		})
		return err
	})
}

// testKillLeavesScriptsWhole is the same with a script writing the keys
// (EVAL, LOCK-18): a script reaches the disk in one batch, whole or not at
// all, and a script answered is there after the restart.
func testKillLeavesScriptsWhole(t *testing.T, bin, mode string) {
	const body = "for _, k in ipairs(KEYS) do redis.call('set', k, ARGV[1]) end return #KEYS"
	testKillLeavesWhole(t, bin, mode, func(ctx context.Context, rdb *redis.Client, keys []string, value string) error {
		return rdb.Eval(ctx, body, keys, value).Err()
	})
}

// testKillLeavesWhole runs write, one transaction of keys, from eight
// writers until a SIGKILL, and checks what the restart finds.
func testKillLeavesWhole(t *testing.T, bin, mode string, write func(ctx context.Context, rdb *redis.Client, keys []string, value string) error) {
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
				keys := make([]string, txKeys)
				for j := range keys {
					keys[j] = fmt.Sprintf("tx:%s:%d", tag, j)
				}
				if err := write(ctx, rdb, keys, value); err != nil {
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
	t.Logf("SIGKILL after %d answered transactions of %d SETs; after the restart %d transactions, each whole", count.Load(), txKeys, len(keysOf))
}
