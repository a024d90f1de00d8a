package kv

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// writeCountedFile counts the write(2)s and the fsyncs Pebble makes to a
// WAL file.
type writeCountedFile struct {
	vfs.File
	writes, syncs *atomic.Int64
}

func (f *writeCountedFile) Write(p []byte) (int, error) { f.writes.Add(1); return f.File.Write(p) }
func (f *writeCountedFile) Sync() error                 { f.syncs.Add(1); return f.File.Sync() }
func (f *writeCountedFile) SyncData() error             { f.syncs.Add(1); return f.File.SyncData() }

// openCounted opens a store on an in-memory FS whose WAL writes and syncs
// are counted.
func openCounted(t *testing.T, mode FsyncMode) (s *Store, writes, syncs *atomic.Int64) {
	t.Helper()
	writes, syncs = new(atomic.Int64), new(atomic.Int64)
	fs := walWrapper{FS: vfs.NewMem(), wrap: func(f vfs.File) vfs.File {
		return &writeCountedFile{File: f, writes: writes, syncs: syncs}
	}}
	return openOn(t, fs, mode), writes, syncs
}

// A pipeline of 16 SETs is one WAL write(2), where 16 SETs on their own
// are 16; with FsyncAlways it is one fsync. Until Commit, the store
// outside the pipeline sees none of them, and the pipeline sees all.
func TestPipelineIsOneCommit(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncEverysec, FsyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			s, writes, syncs := openCounted(t, mode)
			before := writes.Load()
			for i := range 16 {
				s.set(t, fmt.Sprint("alone:", i), "v")
			}
			if n := writes.Load() - before; n < 16 {
				t.Fatalf("16 SETs on their own made %d WAL writes; want 16", n)
			}

			p := s.NewPipeline()
			before, beforeSyncs := writes.Load(), syncs.Load()
			for i := range 16 {
				p.View().set(t, fmt.Sprint("piped:", i), fmt.Sprint("v", i))
			}
			if v, ok := getOn(t, p.View(), "piped:15"); !ok || v != "v15" {
				t.Fatalf("the pipeline reads piped:15 = %q, %v; want v15", v, ok)
			}
			if _, ok := getOn(t, s, "piped:0"); ok {
				t.Fatal("the store sees a pipelined write before Commit")
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if n := writes.Load() - before; n != 1 {
				t.Errorf("a pipeline of 16 SETs made %d WAL writes; want 1", n)
			}
			if n := syncs.Load() - beforeSyncs; mode == FsyncAlways && n != 1 {
				t.Errorf("a pipeline of 16 SETs made %d fsyncs with FsyncAlways; want 1", n)
			}
			for i := range 16 {
				if v, ok := getOn(t, s, fmt.Sprint("piped:", i)); !ok || v != fmt.Sprint("v", i) {
					t.Errorf("after Commit piped:%d = %q, %v", i, v, ok)
				}
			}
			if n, _ := s.DBSize(); n != 32 {
				t.Errorf("DBSIZE = %d; want 32", n)
			}
		})
	}
}

// Each command of a pipeline is judged on its own: one that fails (INCR
// of a word, SET with an older FENCE — LOCK-12) writes nothing and leaves
// the others' writes in.
func TestPipelineCommandsFailAlone_LOCK12(t *testing.T) {
	ts := openTest(t)
	if _, err := ts.Set([]byte("fenced"), []byte("by 7"), SetOptions{Fence: 7}); err != nil {
		t.Fatal(err)
	}
	p := ts.NewPipeline()
	v := p.View()
	v.set(t, "a", "1")
	v.set(t, "word", "abc")
	if _, err := v.IncrBy([]byte("word"), 1); !errors.Is(err, ErrNotInteger) {
		t.Fatalf("INCR of a word in a pipeline: %v; want ErrNotInteger", err)
	}
	if _, err := v.Set([]byte("fenced"), []byte("by 6"), SetOptions{Fence: 6}); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 6 over fence 7 in a pipeline: %v; want ErrFenced", err)
	}
	if n, err := v.IncrBy([]byte("a"), 1); err != nil || n != 2 {
		t.Fatalf("INCR a after SET a 1 in the pipeline = %d, %v; want 2", n, err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	ts.mustGet("a", "2")
	ts.mustGet("word", "abc")
	ts.mustGet("fenced", "by 7")
}

// A pipelined write to a watched key breaks the WATCH, as any write does.
func TestPipelineWriteBreaksWatch(t *testing.T) {
	ts := openTest(t)
	var w Watch
	if err := ts.Watch(&w, []byte("k")); err != nil {
		t.Fatal(err)
	}
	p := ts.NewPipeline()
	p.View().set(t, "k", "changed")
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	ran, err := ts.Tx(&w, func(tx *Store) { tx.set(t, "k", "tx") })
	if err != nil || ran {
		t.Fatalf("Tx after a pipelined write to its watched key: ran %v, %v; want not run", ran, err)
	}
	ts.Unwatch(&w)
	ts.mustGet("k", "changed")
}

// Pipelines and single writes on the same keys from many goroutines, some
// in transactions: none deadlocks (a pipeline never waits for a stripe
// while it holds one), and no increment is lost.
func TestPipelinesConcurrentWithWriters(t *testing.T) {
	ts := openTest(t)
	const workers, rounds, keys = 6, 40, 8
	key := func(i int) []byte { return fmt.Appendf(nil, "n%d", i%keys) }
	concurrently(t, workers, func(w int) error {
		p := ts.NewPipeline()
		for r := range rounds {
			var err error
			switch w % 3 {
			case 0: // a pipeline of increments, keys in any order
				for i := range keys {
					if _, err = p.View().IncrBy(key(r+i*5), 1); err != nil {
						break
					}
				}
				if err == nil {
					err = p.Commit()
				}
			case 1: // increments on their own
				for i := range keys {
					if _, err = ts.IncrBy(key(i+r), 1); err != nil {
						break
					}
				}
			case 2: // a transaction of increments
				_, err = ts.Tx(nil, func(tx *Store) {
					for i := range keys {
						if _, err := tx.IncrBy(key(i), 1); err != nil {
							t.Error(err)
						}
					}
				})
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	var total int64
	for i := range keys {
		n, err := ts.IncrBy(key(i), 0)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if want := int64(workers * rounds * keys); total != want {
		t.Fatalf("the counters add up to %d; want %d", total, want)
	}
}

// With FsyncAlways, what a pipeline's Commit acknowledged survives a crash
// that keeps only what was fsynced, a part committed early (its MGET
// reads one snapshot) included.
func TestPipelineFsyncAlwaysSurvivesCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openOn(t, fs, FsyncAlways)
	p := s.NewPipeline()
	p.View().set(t, "before", "1")
	if _, err := p.View().MGet([][]byte{[]byte("before"), []byte("other")}); err != nil {
		t.Fatal(err)
	}
	p.View().set(t, "after", "2")
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	c := openOn(t, fs.CrashClone(vfs.CrashCloneCfg{}), FsyncAlways)
	for k, want := range map[string]string{"before": "1", "after": "2"} {
		if v, ok := getOn(t, c, k); !ok || v != want {
			t.Errorf("after a crash %s = %q, %v; want %q", k, v, ok, want)
		}
	}
}

// GetFunc hands over the value of a live key, and nothing for a missing
// or an expired one (which it drops, as Get does).
func TestGetFunc(t *testing.T) {
	ts := openTest(t)
	ts.set("k", "v")
	ts.setPX("soon", "x", time.Second)
	ts.clock.Advance(2 * time.Second)
	for key, want := range map[string]string{"k": "v", "soon": "", "missing": ""} {
		var got []string
		found, err := ts.GetFunc([]byte(key), func(v []byte) { got = append(got, string(v)) })
		if err != nil {
			t.Fatal(err)
		}
		if found != (want != "") || found && (len(got) != 1 || got[0] != want) || !found && got != nil {
			t.Errorf("GetFunc(%s) = %v, called with %q; want %q", key, found, got, want)
		}
	}
	if n, _ := ts.DBSize(); n != 1 {
		t.Errorf("DBSIZE = %d after GetFunc met the expired key; want 1", n)
	}
}

// A pipeline that writes keys several times each, with and without TTLs,
// and deletes some, leaves every key as its last write left it: on the
// store, in the expiry index and after a reopen that replays the WAL.
func TestPipelineKeyOrderKeepsEachKeysWrites(t *testing.T) {
	ts := openTest(t)
	p := ts.NewPipeline()
	v := p.View()
	want := map[string]string{}
	for round := range 3 {
		for i := range 40 {
			key := fmt.Sprint("k", i)
			val := fmt.Sprint("v", round, ".", i)
			var err error
			switch (i + round) % 4 {
			case 0:
				_, err = v.Del(bs(key))
				delete(want, key)
			case 1:
				_, err = v.Set([]byte(key), []byte(val), SetOptions{Expiry: Expiry{Mode: ExpiryAt, At: ts.clock.ms(time.Hour)}})
				want[key] = val
			default:
				_, err = v.Set([]byte(key), []byte(val), SetOptions{})
				want[key] = val
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for i := range 40 {
			key := fmt.Sprint("k", i)
			got, ok := ts.get(key)
			if w, wok := want[key]; ok != wok || got != w {
				t.Errorf("%s: %s = %q, %v; want %q, %v", when, key, got, ok, w, wok)
			}
		}
		ts.checkCounters()
	}
	check("after Commit")
	ts.reopen()
	check("after reopen")
}

// Reads settle only what they may have seen unsettled (storage_readsettle.go): a
// pipeline of 16 GETs after every write has returned makes no WAL write
// and no fsync, in every fsync mode.
func TestPipelineOfReadsAfterSettledWritesDoesNotSync(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncEverysec, FsyncAlways, FsyncNo} {
		t.Run(mode.String(), func(t *testing.T) {
			s, writes, syncs := openCounted(t, mode)
			for i := range 16 {
				s.set(t, fmt.Sprint("k", i), "v")
			}
			before, beforeSyncs := writes.Load(), syncs.Load()
			p := s.NewPipeline()
			for i := range 16 {
				if v, ok := getOn(t, p.View(), fmt.Sprint("k", i)); !ok || v != "v" {
					t.Fatalf("k%d = %q, %v; want v", i, v, ok)
				}
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if n, m := writes.Load()-before, syncs.Load()-beforeSyncs; n != 0 || m != 0 {
				t.Errorf("16 GETs after settled writes made %d WAL writes and %d fsyncs; want none", n, m)
			}
		})
	}
}

// A pipeline that meets a stripe taken by someone else commits what it has
// in the middle of a command (acquire) and goes on: the command's data key,
// made before, must outlive that commit, so that the metadata cache learns
// of its write under the key's own hash. (It once lived in the scratch the
// early commit emptied, and the next command's key overwrote it: the cache
// kept the key's old fence, and a lower fence's SET went through, LOCK-12.)
func TestPipelineCommittedEarlyKeepsTheCommandsKey_LOCK12(t *testing.T) {
	ts := openTest(t)
	k1, k2, k3 := []byte("a"), []byte("b"), []byte("a-longer-key")
	for ts.newItem(k2).st == ts.newItem(k1).st || ts.newItem(k2).st == ts.newItem(k3).st {
		k2 = append(k2, 'b')
	}
	if _, err := ts.Set(k2, []byte("old"), SetOptions{}); err != nil { // cached, fence 0
		t.Fatal(err)
	}
	p := ts.NewPipeline()
	if _, err := p.View().Set(k1, []byte("1"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
	st2 := ts.newItem(k2).st
	st2.Lock() // someone else's: the pipeline's next command must commit early
	done := make(chan error, 1)
	go func() {
		_, err := p.View().Set(k2, []byte("fenced"), SetOptions{Fence: 10})
		done <- err
	}()
	for { // the early commit made k1 visible
		if _, ok, err := ts.Get(k1); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	st2.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := p.View().Set(k3, []byte("3"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Set(k2, []byte("stale"), SetOptions{Fence: 5}); !errors.Is(err, ErrFenced) {
		t.Fatalf("SET FENCE 5 after FENCE 10: %v; want ErrFenced", err)
	}
	if v, _, _ := ts.Get(k2); string(v) != "fenced" {
		t.Fatalf("GET = %q; want the fenced write", v)
	}
}
