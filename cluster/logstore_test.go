package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// A head truncated within the open segment is gone for Raft: entries
// below the first index are not found (raft-wal v0.4.2 would read them),
// so a follower that needs them is sent a snapshot; those above it, and
// the stable store, survive a close and reopen.
func TestLogStoreTruncatedHeadIsGone(t *testing.T) {
	dir := t.TempDir()
	ls, err := openLogStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := ls.cache.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := ls.wal.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := ls.cache.DeleteRange(1, 5); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		var l raft.Log
		for i := uint64(1); i <= 5; i++ {
			if err := ls.cache.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("%s: GetLog(%d) of a deleted head: %v, want ErrLogNotFound", when, i, err)
			}
		}
		for i := uint64(6); i <= 10; i++ {
			if err := ls.cache.GetLog(i, &l); err != nil || l.Data[0] != byte(i) {
				t.Fatalf("%s: GetLog(%d): %v %v", when, i, l.Data, err)
			}
		}
		if first, err := ls.cache.FirstIndex(); err != nil || first != 6 {
			t.Fatalf("%s: FirstIndex %d %v, want 6", when, first, err)
		}
		if term, err := ls.wal.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
			t.Fatalf("%s: CurrentTerm %d %v, want 7", when, term, err)
		}
	}
	check("open")
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened in the same process: Close released the metadata file.
	if ls, err = openLogStore(dir); err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	check("reopened")
}

// A --dir whose Raft log is raft-boltdb's raft.db, from tenure before
// raft-wal, is refused with a sentence that says what to do.
func TestLogStoreRefusesABoltLog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "raft.db"), []byte("bolt"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := openLogStore(dir)
	if err == nil || !strings.Contains(err.Error(), "raft.db format of an earlier tenure") {
		t.Fatalf("openLogStore over a raft.db: %v", err)
	}
}
