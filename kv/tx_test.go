package kv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// mustTx runs fn in a transaction that must run and commit.
func (ts *testStore) mustTx(w *Watch, fn func(tx *Store)) {
	ts.t.Helper()
	ran, err := ts.Tx(w, fn)
	if err != nil || !ran {
		ts.t.Fatalf("Tx = %v, %v; want ran", ran, err)
	}
}

// TestTxSeesItsOwnWrites: each command inside sees what the ones before
// it wrote, nothing is in Pebble before the commit, and a command that
// fails changes nothing and stops nothing.
func TestTxSeesItsOwnWrites(t *testing.T) {
	ts := openTest(t)
	ts.set("s", "text")
	ts.mustTx(nil, func(tx *Store) {
		if _, err := tx.Set([]byte("a"), []byte("1"), SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if n, err := tx.IncrBy([]byte("a"), 41); err != nil || n != 42 {
			t.Fatalf("IncrBy in tx = %d, %v; want 42", n, err)
		}
		if _, err := tx.IncrBy([]byte("s"), 1); !errors.Is(err, ErrNotInteger) {
			t.Fatalf("IncrBy of a string in tx = %v; want ErrNotInteger", err)
		}
		if err := tx.Rename([]byte("a"), []byte("b")); err != nil {
			t.Fatal(err)
		}
		vs, err := tx.MGet(bs("a", "b", "s"))
		if err != nil || vs[0] != nil || string(vs[1]) != "42" || string(vs[2]) != "text" {
			t.Fatalf("MGet in tx = %q, %v", vs, err)
		}
		if n, _ := tx.DBSize(); n != 2 {
			t.Fatalf("DBSize in tx = %d; want 2", n)
		}
		if keys, err := tx.Keys([]byte("*")); err != nil || len(keys) != 2 {
			t.Fatalf("Keys in tx = %q, %v; want b and s", keys, err)
		}
		// Outside, nothing yet.
		ts.mustMissing("b")
	})
	ts.mustGet("b", "42")
	ts.mustMissing("a")
	ts.mustGet("s", "text")
	ts.checkCounters()
}

// TestTxFlushAllInside: FLUSHALL inside a transaction empties what was
// there and what the transaction wrote before it; what it writes after
// stays; the counters and the metadata cache agree with the disk.
func TestTxFlushAllInside(t *testing.T) {
	ts := openTest(t)
	ts.set("old", "1")
	ts.setPX("ttl", "1", time.Hour)
	ts.mustTx(nil, func(tx *Store) {
		_, _ = tx.Set([]byte("before"), []byte("1"), SetOptions{})
		if err := tx.FlushAll(); err != nil {
			t.Fatal(err)
		}
		if n, _ := tx.DBSize(); n != 0 {
			t.Fatalf("DBSize after FLUSHALL in tx = %d", n)
		}
		_, _ = tx.Set([]byte("after"), []byte("1"), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: ts.clock.ms(time.Hour)}})
	})
	ts.mustMissing("old")
	ts.mustMissing("before")
	ts.mustGet("after", "1")
	if n, _ := ts.DBSize(); n != 1 {
		t.Fatalf("DBSize = %d; want 1", n)
	}
	ts.checkCounters()
	// The cache forgot "old": a SET that trusts it must not think it on disk.
	ts.set("old", "2")
	ts.checkCounters()
}

// TestTxCacheAfterCommit: what the cache remembers after a transaction
// is what it wrote (the fence a SET keeps, the deadline DEL drops).
func TestTxCacheAfterCommit(t *testing.T) {
	ts := openTest(t)
	ts.mustTx(nil, func(tx *Store) {
		_, _ = tx.Set([]byte("k"), []byte("v"), SetOptions{Fence: 7, Expiry: Expiry{Mode: ExpiryAt, At: ts.clock.ms(time.Hour)}})
	})
	ts.set("k", "plain") // keeps fence 7, drops the deadline's index entry
	if _, err := ts.Set([]byte("k"), []byte("x"), SetOptions{Fence: 6}); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 6 after a tx wrote fence 7 = %v; want ErrFenced", err)
	}
	ts.checkCounters()
}

// TestTxAtomicForReaders: a reader never sees half a transaction.
func TestTxAtomicForReaders(t *testing.T) {
	ts := openTest(t)
	keys := bs("a", "b", "c", "d")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var torn error
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			vs, err := ts.MGet(keys)
			if err != nil {
				torn = err
				return
			}
			for _, v := range vs[1:] {
				if string(v) != string(vs[0]) {
					torn = fmt.Errorf("MGET saw %q: half a transaction", vs)
					return
				}
			}
		}
	}()
	for i := range 300 {
		ts.mustTx(nil, func(tx *Store) {
			for _, k := range keys {
				_, _ = tx.Set(k, []byte(fmt.Sprint(i)), SetOptions{})
			}
		})
	}
	close(stop)
	wg.Wait()
	if torn != nil {
		t.Fatal(torn)
	}
}

// TestTxAllOrNothingInACrash: files taken at random moments while large
// transactions commit, as a SIGKILL leaves them (processCrash), may end in
// a half-written WAL record; each transaction is on disk whole or not at
// all, and every one answered before the crash is whole.
func TestTxAllOrNothingInACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncNo)
	const perTx = 8
	value := make([]byte, 16<<10) // a transaction spans several 32 KB WAL blocks
	var answered atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ran, err := s.Tx(nil, func(tx *Store) {
				for j := range perTx {
					_, _ = tx.Set(fmt.Appendf(nil, "t%d-%d", i, j), value, SetOptions{})
				}
			})
			if err != nil || !ran {
				errs <- fmt.Errorf("Tx %d = %v, %v", i, ran, err)
				return
			}
			answered.Store(int64(i + 1))
		}
	}()
	type taken struct {
		before int64
		fs     *vfs.MemFS
	}
	var crashes []taken
	for range 10 {
		time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
		crashes = append(crashes, taken{answered.Load(), processCrash(fs)})
	}
	close(stop)
	for err := range errs {
		t.Fatal(err)
	}
	for n, cr := range crashes {
		c := openOn(t, cr.fs, FsyncNo)
		keys, err := c.Keys([]byte("t*"))
		if err != nil {
			t.Fatal(err)
		}
		perTag := map[string]int{}
		for _, k := range keys {
			perTag[string(k[:bytes.IndexByte(k, '-')])]++
		}
		for tag, got := range perTag {
			if got != perTx {
				t.Errorf("crash %d: transaction %s has %d of its %d keys", n, tag, got, perTx)
			}
		}
		for i := range cr.before {
			if perTag[fmt.Sprintf("t%d", i)] != perTx {
				t.Errorf("crash %d: transaction %d was answered before it and is not whole", n, i)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatch follows Redis 7's rules of what breaks a WATCH.
func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(ts *testStore) // before WATCH
		after  func(ts *testStore) // between WATCH and EXEC
		broken bool
	}{
		{"untouched", func(ts *testStore) { ts.set("w", "1") }, func(ts *testStore) { ts.set("other", "1") }, false},
		{"SET", nil, func(ts *testStore) { ts.set("w", "1") }, true},
		{"SET NX on a live key writes nothing", func(ts *testStore) { ts.set("w", "1") },
			func(ts *testStore) { _, _ = ts.Set([]byte("w"), []byte("2"), SetOptions{NX: true}) }, false},
		{"DEL of a missing key", nil, func(ts *testStore) { _, _ = ts.Del(bs("w")) }, false},
		{"DEL", func(ts *testStore) { ts.set("w", "1") }, func(ts *testStore) { _, _ = ts.Del(bs("w")) }, true},
		{"EXPIRE", func(ts *testStore) { ts.set("w", "1") },
			func(ts *testStore) { _, _ = ts.ExpireAt([]byte("w"), ts.clock.ms(time.Hour), CondNone) }, true},
		{"expires after WATCH", func(ts *testStore) { ts.setPX("w", "1", time.Second) },
			func(ts *testStore) { ts.clock.Advance(2 * time.Second) }, true},
		{"expires after WATCH and is swept", func(ts *testStore) { ts.setPX("w", "1", time.Second) },
			func(ts *testStore) { ts.clock.Advance(2 * time.Second); _ = ts.sweep(0) }, true},
		{"expired before WATCH, deleted after", func(ts *testStore) { ts.setPX("w", "1", time.Second); ts.clock.Advance(2 * time.Second) },
			func(ts *testStore) { ts.mustMissing("w") }, false},
		{"expired before WATCH, written after", func(ts *testStore) { ts.setPX("w", "1", time.Second); ts.clock.Advance(2 * time.Second) },
			func(ts *testStore) { ts.set("w", "2") }, true},
		{"FLUSHALL", func(ts *testStore) { ts.set("w", "1") }, func(ts *testStore) { _ = ts.FlushAll() }, true},
		{"FLUSHALL of a missing key", nil, func(ts *testStore) { _ = ts.FlushAll() }, false},
		{"FLUSHALL of an expired key", func(ts *testStore) { ts.setPX("w", "1", time.Second); ts.clock.Advance(2 * time.Second) },
			func(ts *testStore) { _ = ts.FlushAll() }, false},
		{"another transaction's SET", nil, func(ts *testStore) {
			ts.mustTx(nil, func(tx *Store) { _, _ = tx.Set([]byte("w"), []byte("1"), SetOptions{}) })
		}, true},
		{"another transaction's FLUSHALL", func(ts *testStore) { ts.set("w", "1") }, func(ts *testStore) {
			ts.mustTx(nil, func(tx *Store) { _ = tx.FlushAll() })
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := openTest(t)
			if tc.before != nil {
				tc.before(ts)
			}
			var w Watch
			if err := ts.Watch(&w, []byte("w")); err != nil {
				t.Fatal(err)
			}
			tc.after(ts)
			ran, err := ts.Tx(&w, func(tx *Store) { _, _ = tx.Set([]byte("done"), []byte("1"), SetOptions{}) })
			if err != nil {
				t.Fatal(err)
			}
			if ran == tc.broken {
				t.Fatalf("Tx ran = %v; want %v", ran, !tc.broken)
			}
			if _, ok := ts.get("done"); ok != ran {
				t.Fatalf("the transaction's write is there = %v, but it ran = %v", ok, ran)
			}
			ts.Unwatch(&w)
			if w.Len() != 0 || len(ts.newItem([]byte("w")).st.watched) != 0 {
				t.Fatal("Unwatch left the key watched")
			}
			ts.set("w", "again")
			if ran, _ := ts.Tx(&w, func(*Store) {}); !ran {
				t.Fatal("after Unwatch, a write to the key still broke the transaction")
			}
		})
	}
}

// TestTxNotNested: a view cannot start a transaction or watch.
func TestTxNotNested(t *testing.T) {
	ts := openTest(t)
	ts.mustTx(nil, func(tx *Store) {
		if _, err := tx.Tx(nil, func(*Store) {}); err == nil {
			t.Error("Tx inside Tx succeeded")
		}
		if err := tx.Watch(&Watch{}, []byte("k")); err == nil {
			t.Error("Watch inside Tx succeeded")
		}
	})
}

// TestTxReleasesStripesOnPanic: a function that panics leaves the store
// usable.
func TestTxReleasesStripesOnPanic(t *testing.T) {
	ts := openTest(t)
	func() {
		defer func() { _ = recover() }()
		_, _ = ts.Tx(nil, func(tx *Store) {
			_, _ = tx.Set([]byte("k"), []byte("v"), SetOptions{})
			panic("handler bug")
		})
	}()
	ts.set("k", "after") // would deadlock on a held stripe
	ts.mustGet("k", "after")
}
