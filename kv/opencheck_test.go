package kv

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 2, this build knows up to 1") {
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
// is format 1, and is given the record.
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
