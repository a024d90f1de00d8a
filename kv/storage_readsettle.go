package kv

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Reads see only what a crash of the process keeps.
//
// Pebble makes a batch visible to readers once it is in the memtable
// (commitPipeline.publish), before the WAL goroutine has write(2)n it, let
// alone fsynced it: only the committer waits for those. A GET could so
// answer a value that a SIGKILL then takes back — with --fsync always, the
// value of a SET whose own reply never left (a dirty read; the torture
// harness's counters found it). So a read that may have seen such a write
// makes the WAL hold it before it answers (settleRead): it syncs the WAL
// itself, which covers every batch Pebble had queued before, as a
// committer would; Pebble groups that sync with the writers' own.
//
// What may be unsettled is counted, not tracked per key:
//   - committing: command commits under way (from before Pebble's Commit
//     to after it returned and was counted in unsynced), whatever the mode;
//   - unsynced: command commits made, all without a sync (the command
//     syncs later, in settle, with no stripe held), and syncedTo, the
//     count of them that a WAL sync has covered.
//
// A read loads them after it read: a write it saw had raised committing
// before it was visible, and lowers it only after unsynced counts it, so
// a read that finds both settled saw only writes a WAL sync covered.
type unsettled struct {
	committing atomic.Int64
	unsynced   atomic.Int64
	syncedTo   atomic.Int64
}

// commitCommand commits a command's batch without a sync (its caller
// settles it later: see storage_walsync.go), counting it as unsettled while it may
// be visible and not yet in the WAL's hands.
func (s *Store) commitCommand(b *pebble.Batch) error {
	s.unsettled.committing.Add(1)
	defer s.unsettled.committing.Add(-1)
	err := s.commit(b, pebble.NoSync)
	s.unsettled.unsynced.Add(1) // failed too: what it wrote may be visible
	return err
}

// synced records that a WAL sync covered every command commit counted in
// unsynced before it began (upTo).
func (s *Store) synced(upTo int64) {
	for {
		cur := s.unsettled.syncedTo.Load()
		if cur >= upTo || s.unsettled.syncedTo.CompareAndSwap(cur, upTo) {
			return
		}
	}
}

// settleRead is called by a read after it read and before it answers: if
// a command commit it may have seen is not yet in the WAL's hands, it
// syncs the WAL so that it is.
func (s *Store) settleRead() error {
	if s.replica {
		// A replica applies only what a majority has in the log: a
		// read of it shows nothing a crash can take back (replica.go).
		return nil
	}
	u := &s.unsettled
	if u.committing.Load() == 0 && u.syncedTo.Load() >= u.unsynced.Load() {
		return nil
	}
	if s.failed.Load() != nil {
		// The WAL failed (see commit): reads go on (SPEC §7), though what
		// they show may include a write the disk did not take, which
		// was refused to its writer.
		return nil
	}
	return s.syncWAL()
}

// settleCommand ends a command that ran under its stripes: one that wrote
// waits for the fsync mode's durability (settle); one that only read, or
// was refused on what it read (SET … FENCE, SET NX), settles that read.
func (s *Store) settleCommand(wrote bool, err error) error {
	if wrote {
		if err == nil {
			err = s.settle()
		}
		return err
	}
	if e := s.settleRead(); err == nil {
		err = e
	}
	return err
}
