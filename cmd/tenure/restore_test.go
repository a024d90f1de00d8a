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
	"github.com/tenure-db/tenure/internal/dump"
)

// SPEC §6 durability for RESTORE, whose writes are a transaction of their
// own: a SIGKILL in mid-stream loses no acknowledged RESTORE in any
// --fsync mode, plain or pipelined, and leaves no key half restored (a
// hash without all its fields, a list without all its elements) or never
// sent. Every third RESTORE is a REPLACE of the writer's one key rr:w,
// which must then hold the last acknowledged or a later one, whole.
func TestRestoreKill(t *testing.T) {
	bin := buildServer(t)
	for _, mode := range fsyncModes {
		t.Run(mode, func(t *testing.T) { testRestoreKill(t, bin, mode) })
	}
}

// restoredValue is what key i of a writer is restored to: a hash of 20
// fields for an even i, a list of 20 elements for an odd one, each
// naming i.
func restoredValue(i int) dump.Value {
	v := dump.Value{Kind: dump.Hash}
	if i%2 == 1 {
		v.Kind = dump.List
	}
	for j := range 20 {
		if v.Kind == dump.Hash {
			v.Elems = append(v.Elems, []byte("f"+strconv.Itoa(j)))
		}
		v.Elems = append(v.Elems, []byte(strconv.Itoa(i)))
	}
	return v
}

func testRestoreKill(t *testing.T, bin, mode string) {
	dir := t.TempDir()
	srv := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	const writers = 6
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
			if err := rdb.Set(ctx, fmt.Sprintf("rr:%d", w), "old", 0).Err(); err != nil {
				return
			}
			for i := 0; ; {
				n := 1 // odd writers pipeline 8 RESTOREs at a time
				if w%2 == 1 {
					n = 8
				}
				batch := make([]int, n)
				pipe := rdb.Pipeline()
				for j := range n {
					batch[j] = i + j
					key := fmt.Sprintf("r:%d:%d", w, i+j)
					payload := string(dump.Encode(restoredValue(i + j)))
					if (i+j)%3 == 2 {
						// REPLACE of the writer's one key rr:w.
						pipe.RestoreReplace(ctx, fmt.Sprintf("rr:%d", w), 0, payload)
					} else {
						pipe.Restore(ctx, key, 0, payload)
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
	srv.killMidStream(&answered, 20000, &wg)

	again := startChild(t, bin, "--fsync", mode, "--addr", "127.0.0.1:0", "--dir", dir)
	rdb := again.client()
	ctx := context.Background()
	var acked, lost int
	// check reports what key holds that restoredValue(i) would not.
	check := func(key string, i int) string {
		want := restoredValue(i)
		switch typ := rdb.Type(ctx, key).Val(); {
		case want.Kind == dump.Hash && typ == "hash":
			h := rdb.HGetAll(ctx, key).Val()
			for j := range 20 {
				if h["f"+strconv.Itoa(j)] != strconv.Itoa(i) {
					return fmt.Sprintf("a hash of %d fields, field f%d %q", len(h), j, h["f"+strconv.Itoa(j)])
				}
			}
			return ""
		case want.Kind == dump.List && typ == "list":
			l := rdb.LRange(ctx, key, 0, -1).Val()
			if len(l) != 20 || l[0] != strconv.Itoa(i) || l[19] != strconv.Itoa(i) {
				return fmt.Sprintf("the list %q", l)
			}
			return ""
		default:
			return "a " + typ
		}
	}
	for w, a := range acks {
		lastReplace := -1 // the last acknowledged REPLACE of rr:w
		for _, i := range a.acked {
			acked++
			if i%3 == 2 {
				lastReplace = i
				continue
			}
			if msg := check(fmt.Sprintf("r:%d:%d", w, i), i); msg != "" {
				lost++
				t.Errorf("r:%d:%d acknowledged, now %s", w, i, msg)
			}
		}
		for _, i := range a.pending {
			key := fmt.Sprintf("r:%d:%d", w, i)
			if i%3 != 2 && rdb.Exists(ctx, key).Val() == 1 {
				if msg := check(key, i); msg != "" {
					t.Errorf("%s, in flight at the kill, is %s: half restored", key, msg)
				}
			}
		}
		// rr:w holds what its last acknowledged REPLACE wrote, or a
		// later one in flight: never nothing, never half of one.
		rr := fmt.Sprintf("rr:%d", w)
		ok := lastReplace < 0 && rdb.Get(ctx, rr).Val() == "old"
		for _, i := range append([]int{lastReplace}, a.pending...) {
			ok = ok || (i >= 0 && i%3 == 2 && check(rr, i) == "")
		}
		if !ok {
			lost++
			t.Errorf("%s: last REPLACE acknowledged %d, in flight %v; it is %s", rr, lastReplace, a.pending, check(rr, max(lastReplace, 0)))
		}
		next := len(a.acked) + len(a.pending)
		if n := rdb.Exists(ctx, fmt.Sprintf("r:%d:%d", w, next)).Val(); n != 0 {
			t.Errorf("r:%d:%d was never sent, and exists", w, next)
		}
	}
	t.Logf("SIGKILL after %d acknowledged RESTOREs from %d writers; after the restart %d lost", acked, writers, lost)
	if err := again.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := again.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}
