package kv

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// An entry's effect and its index are one batch: after any crash the
// applied index says exactly which entries the keyspace holds, so a log
// replayed after it applies none twice.
func TestApplyAtRecordsIndexWithEffect(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open("db", Options{FS: fs, Fsync: FsyncNo, Logger: quietLogger(), Replica: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	for i := uint64(1); i <= 50; i++ {
		_, err := s.ApplyAt(i, now, false, func(tx *Store) {
			if _, err := tx.IncrBy([]byte("n"), 1); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10 {
		clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
		c, err := Open("db", Options{FS: clone, Fsync: FsyncNo, Logger: quietLogger(), Replica: true})
		if err != nil {
			t.Fatal(err)
		}
		idx, err := c.AppliedIndex()
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := c.Get([]byte("n"))
		want := fmt.Sprint(idx)
		if idx == 0 {
			ok, v, want = true, []byte("0"), "0"
		}
		if err != nil || !ok || string(v) != want {
			t.Fatalf("clone %d: applied index %d but n = %q (%v)", i, idx, v, err)
		}
		c.Close()
	}
	s.Close()
}

// ApplyAt judges expiry at the entry's instant, not the local clock; a
// replica's own clock deletes nothing.
func TestApplyAtUsesTheEntrysClock(t *testing.T) {
	ts := openTest(t, func(o *Options) { o.Replica = true })
	at := ts.clock.ms(0)
	if _, err := ts.ApplyAt(1, at, false, func(tx *Store) {
		tx.Set([]byte("k"), []byte("v"), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: at + 1000}})
	}); err != nil {
		t.Fatal(err)
	}
	ts.clock.Advance(time.Hour) // the local clock runs ahead: the entry's decides
	var got []byte
	if _, err := ts.ApplyAt(2, at+500, false, func(tx *Store) {
		got, _, _ = tx.Get([]byte("k"))
	}); err != nil {
		t.Fatal(err)
	}
	if string(got) != "v" {
		t.Fatalf("at the entry's instant the key lives; got %q", got)
	}
	if n, err := ts.SweepAt(3, at+500, 10); err != nil || n != 0 {
		t.Fatalf("sweep before the deadline: %d %v", n, err)
	}
	if n, err := ts.SweepAt(4, at+2000, 10); err != nil || n != 1 {
		t.Fatalf("sweep after the deadline: %d %v", n, err)
	}
	if idx, _ := ts.AppliedIndex(); idx != 4 {
		t.Fatalf("applied index %d, want 4", idx)
	}
	e, err := ts.ApplyAt(5, at, true, nil)
	if err != nil || e != 1 || ts.Epoch() != 1 {
		t.Fatalf("epoch entry: %d %v", e, err)
	}
}

// A snapshot restored elsewhere replaces that keyspace whole: keys,
// deadlines, counters, the epoch and the applied index.
func TestSnapshotRestoreReplacesTheKeyspace(t *testing.T) {
	src := openTest(t, func(o *Options) { o.Replica = true })
	at := src.clock.ms(0)
	src.ApplyAt(7, at, true, func(tx *Store) {
		tx.Set([]byte("a"), []byte("1"), SetOptions{})
		tx.Set([]byte("b"), []byte("2"), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: at + 60_000}})
	})
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	src.set("after-snapshot", "x")
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Close()

	dst := openTest(t, func(o *Options) { o.Replica = true })
	dst.set("stale", "gone")
	if err := dst.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	dst.mustGet("a", "1")
	dst.mustGet("b", "2")
	dst.mustMissing("stale")
	dst.mustMissing("after-snapshot")
	dst.checkCounters()
	if st := dst.Stats(); st.Keys != 2 || st.KeysWithExpiry != 1 {
		t.Fatalf("counters after restore: %+v", st)
	}
	if idx, _ := dst.AppliedIndex(); idx != 7 || dst.Epoch() != 1 {
		t.Fatalf("applied %d epoch %d, want 7 and 1", idx, dst.Epoch())
	}
	if err := dst.Restore(bytes.NewReader([]byte("not a snapshot"))); err == nil {
		t.Fatal("restore of garbage: no error")
	}
}

// A read on a replica reports an expired key missing but deletes nothing:
// only the log's entries do, at their own instants.
func TestReplicaReadsDeleteNothing(t *testing.T) {
	ts := openTest(t, func(o *Options) { o.Replica = true })
	at := ts.clock.ms(0)
	ts.ApplyAt(1, at, false, func(tx *Store) {
		tx.Set([]byte("k"), []byte("5"), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: at + 1000}})
	})
	ts.clock.Advance(time.Hour)
	ts.mustMissing("k")
	// An entry proposed before the deadline still finds the key.
	var n int64
	if _, err := ts.ApplyAt(2, at+500, false, func(tx *Store) { n, _ = tx.IncrBy([]byte("k"), 1) }); err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("INCR at the entry's instant: %d, want 6", n)
	}
}
