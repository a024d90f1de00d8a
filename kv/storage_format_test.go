package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A directory written by a newer tenure is refused with a clear error, and
// nothing in it changes: no epoch bump, no sweep of what expired.
func TestOpenRefusesNewerFormat(t *testing.T) {
	ts := openTest(t)
	if _, err := ts.BumpEpoch(); err != nil {
		t.Fatal(err)
	}
	ts.set("kept", "v")
	ts.setPX("expired", "v", time.Second)
	// A newer build's open: its format record.
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], formatVersion+1)
	if err := ts.db.Set(metaFormat, buf[:], pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	ts.clock.Advance(time.Hour)

	_, err := Open(ts.dir, ts.opts)
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), fmt.Sprintf("format %d, this build knows up to %d", formatVersion+1, formatVersion)) {
		t.Fatalf("Open of a newer format: %v", err)
	}

	db, err := pebble.Open(ts.dir, &pebble.Options{FS: ts.fs, Logger: pebbleLogger{quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for key, want := range map[string]uint64{string(metaEpoch): 1, string(metaFormat): formatVersion + 1} {
		raw, closer, err := db.Get([]byte(key))
		if err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		if got := binary.BigEndian.Uint64(raw); got != want {
			t.Errorf("%q is %d, want %d: the refused open changed it", key, got, want)
		}
		closer.Close()
	}
	n := 0
	iter, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsKey}, UpperBound: []byte{nsExpiry}})
	for valid := iter.First(); valid; valid = iter.Next() {
		n++
	}
	iter.Close()
	if n != 2 {
		t.Errorf("%d records after the refused open, want 2 (the expired one not swept)", n)
	}
}

// A directory without a format record (new, or from before the record)
// is given the record of this build's format.
func TestOpenWritesFormat(t *testing.T) {
	ts := openTest(t)
	raw, closer, err := ts.db.Get(metaFormat)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if got := binary.BigEndian.Uint64(raw); got != formatVersion {
		t.Fatalf("format %d, want %d", got, formatVersion)
	}
}

// copyFormat1 copies testdata/format1 into a new in-memory FS.
func copyFormat1(t *testing.T, at time.Time) *testStore {
	t.Helper()
	ts := &testStore{t: t, fs: vfs.NewMem(), dir: "db", clock: &clock{now: at}}
	if err := ts.fs.MkdirAll(ts.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("testdata/format1")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata/format1", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ts.fs.Create(ts.fs.PathJoin(ts.dir, e.Name()), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ts.opts = Options{FS: ts.fs, Fsync: FsyncAlways, Logger: quietLogger(), Now: ts.clock.Now, SweepInterval: time.Hour}
	return ts
}

// openFormat1 opens a copy of testdata/format1, a directory written by
// tenure before typed records (commit c1e98d3, by testdata/format1-gen) at
// 2026-01-01 00:00 UTC, with the clock at at.
func openFormat1(t *testing.T, at time.Time) *testStore {
	t.Helper()
	ts := copyFormat1(t, at)
	ts.open()
	t.Cleanup(func() {
		if !ts.closed.Load() {
			if err := ts.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	return ts
}

// A directory of format 1 opens as it stands: every key with its value,
// TTL, fence and encoding, the epoch, and the expiry index (a key whose
// deadline passed while it was closed is swept at open); the format
// record says 2 afterwards; and it is written on as any other.
func TestOpenFormat1(t *testing.T) {
	written := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := openFormat1(t, written.Add(2*time.Hour))
	later := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

	if got := ts.Epoch(); got != 0 {
		t.Errorf("Epoch before BumpEpoch = %d", got)
	}
	if e, err := ts.BumpEpoch(); err != nil || e != 3 {
		t.Errorf("BumpEpoch = %d, %v; want 3 (the fixture bumped twice)", e, err)
	}
	big := strings.Repeat("x", 1000)
	for key, want := range map[string]string{
		"plain": "hello", "ttl:later": "stays", "fenced": "f7", "fenced:ttl": "f9",
		"big": big, "counter": "41", "appended": "abcd", "bits": "\x00\x40",
	} {
		v, ok, err := ts.Get([]byte(key))
		if err != nil || !ok || string(v) != want {
			t.Errorf("Get %q = %q, %v, %v; want %q", key, v, ok, err, want)
		}
		if typ, err := ts.Type([]byte(key)); err != nil || typ != "string" {
			t.Errorf("Type %q = %q, %v", key, typ, err)
		}
	}
	if _, ok, err := ts.Get([]byte("ttl:soon")); ok || err != nil {
		t.Errorf("Get ttl:soon = %v, %v; its deadline passed while closed", ok, err)
	}
	if n, _ := ts.DBSize(); n != 8 {
		t.Errorf("DBSize = %d, want 8", n)
	}
	st := ts.Stats()
	if st.KeysWithExpiry != 2 || st.ExpiredTotal != 0 {
		t.Errorf("Stats = %+v; want 2 keys with expiry (ttl:soon swept at open, before counting)", st)
	}
	for key, want := range map[string]int64{"ttl:later": later, "fenced:ttl": later, "plain": -1} {
		if at, err := ts.Deadline([]byte(key)); err != nil || at != want {
			t.Errorf("Deadline %q = %d, %v; want %d", key, at, err, want)
		}
	}
	for key, fence := range map[string]uint64{"fenced": 7, "fenced:ttl": 9} {
		if _, err := ts.Set([]byte(key), []byte("stale"), SetOptions{Fence: fence - 1}); !errors.Is(err, ErrFenced) {
			t.Errorf("Set %q FENCE %d = %v; want ErrFenced", key, fence-1, err)
		}
		if _, err := ts.Set([]byte(key), []byte("ok"), SetOptions{Fence: fence, Expiry: Expiry{Mode: ExpiryKeep}}); err != nil {
			t.Errorf("Set %q FENCE %d: %v", key, fence, err)
		}
	}
	for key, want := range map[string]string{"appended": "raw", "counter": "int", "plain": "embstr", "big": "raw"} {
		if obj, ok, err := ts.Object([]byte(key)); err != nil || !ok || obj.Encoding != want {
			t.Errorf("Object %q = %+v, %v, %v; want %s", key, obj, ok, err, want)
		}
	}
	raw, closer, err := ts.db.Get(metaFormat)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint64(raw); got != formatVersion {
		t.Errorf("format %d after open, want %d", got, formatVersion)
	}
	closer.Close()

	// Written on, closed and opened again: all there, TTLs kept.
	ts.set("new", "v")
	if _, err := ts.IncrBy([]byte("counter"), 1); err != nil {
		t.Fatal(err)
	}
	ts.reopen()
	for key, want := range map[string]string{"new": "v", "counter": "42", "fenced:ttl": "ok", "ttl:later": "stays"} {
		if v, ok, err := ts.Get([]byte(key)); err != nil || !ok || string(v) != want {
			t.Errorf("after reopen, Get %q = %q, %v, %v; want %q", key, v, ok, err, want)
		}
	}
	if at, err := ts.Deadline([]byte("fenced:ttl")); err != nil || at != later {
		t.Errorf("after reopen, Deadline fenced:ttl = %d, %v", at, err)
	}
	ts.checkCounters()
}

// A format 1 directory from before the format record existed opens too.
func TestOpenFormat1WithoutRecord(t *testing.T) {
	ts := copyFormat1(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db, err := pebble.Open(ts.dir, &pebble.Options{FS: ts.fs, Logger: pebbleLogger{quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(metaFormat, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.open()
	defer ts.Close()
	ts.mustGet("plain", "hello")
	ts.mustGet("fenced:ttl", "f9")
	if ttl := ts.ttl("ttl:soon"); ttl != time.Hour.Milliseconds() {
		t.Errorf("TTL ttl:soon = %d", ttl)
	}
	raw, closer, err := ts.db.Get(metaFormat)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if got := binary.BigEndian.Uint64(raw); got != formatVersion {
		t.Errorf("format %d after open, want %d", got, formatVersion)
	}
}

// A snapshot of an older format is restored and upgraded, collections'
// generations with it; one of a newer format is refused.
func TestRestoreChecksFormat(t *testing.T) {
	snapshotWithFormat := func(v uint64) []byte {
		src := openTest(t)
		src.set("a", "1")
		gen := src.plant("h", TypeHash, 3, 0)
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], v)
		if err := src.db.Set(metaFormat, buf[:], pebble.Sync); err != nil {
			t.Fatal(err)
		}
		snap, err := src.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		var out bytes.Buffer
		if _, err := snap.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		if gen == 0 {
			t.Fatal("generation 0")
		}
		return out.Bytes()
	}
	dst := openTest(t)
	if err := dst.Restore(bytes.NewReader(snapshotWithFormat(1))); err != nil {
		t.Fatal(err)
	}
	dst.mustGet("a", "1")
	if typ, _ := dst.Type([]byte("h")); typ != "hash" {
		t.Errorf("TYPE h = %q after restore", typ)
	}
	if g := dst.newGeneration(); g <= 1 {
		t.Errorf("generation %d handed out after restoring generation 1", g)
	}
	raw, closer, err := dst.db.Get(metaFormat)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint64(raw); got != formatVersion {
		t.Errorf("format %d after restore, want %d", got, formatVersion)
	}
	closer.Close()
	if err := dst.Restore(bytes.NewReader(snapshotWithFormat(formatVersion + 1))); !errors.Is(err, ErrNewerFormat) {
		t.Errorf("Restore of a newer format: %v", err)
	}
}
