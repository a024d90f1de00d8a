package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
)

// Raft's log and stable store is github.com/hashicorp/raft-wal, the log
// Consul moved to from raft-boltdb: append-only segment files, one fsync
// per append where bbolt's copy-on-write B-tree takes two (its pages,
// then its meta page), and no free list to grow after a truncation. An
// append returns once it is on disk, so a follower acknowledges only
// what it has durably, and the leader counts itself only once its own
// write is (SPEC §10: a write is acknowledged once a majority has it on
// disk). Measured on three nodes in one process, 50 clients SETting
// (BenchmarkClusterSet): a third less CPU per acknowledged write than
// raft-boltdb, the difference almost all fdatasync.
//
// The last logAppendCache entries are kept in memory as well, so the
// leader's replication reads what it just appended without a pread.

const logAppendCache = 1024

// logStore is a node's Raft log (raft.LogStore, through the cache) and
// its stable store (term, vote: raft.StableStore).
type logStore struct {
	wal   *wal.WAL
	cache raft.LogStore

	failAppends atomic.Int64 // tests only: fail this many appends (FailLogAppends)
}

// openLogStore opens the log in raftDir/wal. A raftDir whose log is in
// the raft-boltdb file of tenure before it (raft.db) is refused: its
// entries would be invisible to the new log, and the node would rejoin
// as if new while its keyspace says otherwise.
func openLogStore(raftDir string) (*logStore, error) {
	if _, err := os.Stat(filepath.Join(raftDir, "raft.db")); err == nil {
		return nil, fmt.Errorf("%s holds a Raft log in the raft.db format of an earlier tenure, which this one does not read: move that node's --dir aside and let it rejoin empty (it catches up from a snapshot)", raftDir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	dir := filepath.Join(raftDir, "wal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := wal.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open the raft log in %s: %w", dir, err)
	}
	ls := &logStore{wal: w}
	if ls.cache, err = raft.NewLogCache(logAppendCache, headChecked{w, &ls.failAppends}); err != nil {
		ls.Close()
		return nil, err
	}
	return ls, nil
}

// Close closes the log and its metadata file.
func (ls *logStore) Close() error { return ls.wal.Close() }

// headChecked is the WAL as a raft.LogStore whose GetLog knows the head
// it was truncated to: raft-wal (v0.4.2) truncates a head within the open
// segment by moving its first index only, and still reads entries below
// it from that segment. Raft must not see them, or it replays the log to
// a follower that needs a snapshot instead. It also fails the appends a
// test asks it to (FailLogAppends), as a failing disk would.
type headChecked struct {
	*wal.WAL
	failAppends *atomic.Int64
}

// errAppendFailed is a failure a test asked for (FailLogAppends).
var errAppendFailed = errors.New("append failed, as a test asked")

func (h headChecked) StoreLogs(logs []*raft.Log) error {
	if h.failAppends.Load() > 0 && h.failAppends.Add(-1) >= 0 {
		return errAppendFailed
	}
	return h.WAL.StoreLogs(logs)
}

func (h headChecked) StoreLog(log *raft.Log) error { return h.StoreLogs([]*raft.Log{log}) }

func (h headChecked) GetLog(index uint64, log *raft.Log) error {
	first, err := h.FirstIndex()
	if err != nil {
		return err
	}
	if index < first {
		return raft.ErrLogNotFound
	}
	return h.WAL.GetLog(index, log)
}
