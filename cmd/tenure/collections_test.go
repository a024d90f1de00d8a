package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SPEC §13 Storage and §6 durability, for hashes and sets: a SIGKILL in
// mid-stream loses no acknowledged HSET or SADD in any --fsync mode
// (plain and pipelined), and leaves no hash or set whose size (HLEN,
// SCARD, from its metadata) disagrees with its members.
func TestCollectionsKill(t *testing.T) {
	bin := buildServer(t)
	for _, mode := range fsyncModes {
		t.Run(mode, func(t *testing.T) { testCollectionsKill(t, bin, mode) })
	}
}

// collAck is what one writer was told: fields and members acknowledged,
// and the one in flight when the server died (which may or may not be
// there).
type collAck struct {
	acked   []int
	pending []int
}

func testCollectionsKill(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	const writers = 8
	acks := make([]collAck, writers)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			a := &acks[w]
			h, s := fmt.Sprintf("h:%d", w), fmt.Sprintf("s:%d", w)
			for i := 0; ; {
				// Odd writers pipeline 16 writes at a time; even ones
				// send one at a time. Each write is an HSET of field i
				// and an SADD of member i, alternately.
				n := 1
				if w%2 == 1 {
					n = 16
				}
				batch := make([]int, n)
				pipe := rdb.Pipeline()
				for j := range n {
					batch[j] = i + j
					if (i+j)%2 == 0 {
						pipe.HSet(ctx, h, "f"+strconv.Itoa(i+j), "v"+strconv.Itoa(i+j))
					} else {
						pipe.SAdd(ctx, s, strconv.Itoa(i+j))
					}
				}
				if _, err := pipe.Exec(ctx); err != nil {
					a.pending = batch
					return
				}
				a.acked = append(a.acked, batch...)
				answered.Add(int64(n))
				i += n
			}
		}()
	}
	srv.killMidStream(&answered, 40000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	var acked, lost int
	for w, a := range acks {
		h, s := fmt.Sprintf("h:%d", w), fmt.Sprintf("s:%d", w)
		fields, err := rdb.HGetAll(ctx, h).Result()
		if err != nil {
			t.Fatal(err)
		}
		members, err := rdb.SMembers(ctx, s).Result()
		if err != nil {
			t.Fatal(err)
		}
		hlen, _ := rdb.HLen(ctx, h).Result()
		scard, _ := rdb.SCard(ctx, s).Result()
		if hlen != int64(len(fields)) || scard != int64(len(members)) {
			t.Errorf("writer %d: HLEN %d for %d fields, SCARD %d for %d members", w, hlen, len(fields), scard, len(members))
		}
		inSet := map[string]bool{}
		for _, m := range members {
			inSet[m] = true
		}
		sent := map[int]bool{}
		for _, i := range a.acked {
			sent[i] = true
			acked++
			if i%2 == 0 {
				if v := fields["f"+strconv.Itoa(i)]; v != "v"+strconv.Itoa(i) {
					lost++
					t.Errorf("%s: field f%d acknowledged, now %q", h, i, v)
				}
			} else if !inSet[strconv.Itoa(i)] {
				lost++
				t.Errorf("%s: member %d acknowledged, now missing", s, i)
			}
		}
		for _, i := range a.pending {
			sent[i] = true
		}
		for f := range fields {
			if i, _ := strconv.Atoi(f[1:]); !sent[i] {
				t.Errorf("%s: field %s was never sent", h, f)
			}
		}
		for m := range inSet {
			if i, _ := strconv.Atoi(m); !sent[i] {
				t.Errorf("%s: member %s was never sent", s, m)
			}
		}
	}
	t.Logf("SIGKILL after %d acknowledged HSET/SADD from %d writers; after the restart %d lost", acked, writers, lost)
	if err := again.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := again.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}
