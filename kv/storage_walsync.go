package kv

import (
	"fmt"
	"runtime"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// What a WAL sync costs, by fsync mode (SPEC §6).
//
// Pebble's WAL writer keeps what it is given in a 32 KB block in the
// process, and writes it to the file only when the block fills or a commit
// asks for a sync; then its WAL goroutine write(2)s what it has and calls
// the file's Sync. A NoSync commit is therefore not in the operating
// system's hands when it returns, and a SIGKILL loses it. So a command
// commits without a sync under its stripes, and once they are released
// waits for a WAL sync that covers it (Store.settle); the WAL file's Sync
// (walFile) decides what that sync is:
//
//   - FsyncAlways: an fsync.
//   - FsyncEverysec and FsyncNo: nothing, as the data was write(2)n before
//     Sync was called; when settle returns, the write survives the
//     process, though not the machine.
//
// Either way concurrent writers, a hot key's included, share the sync:
// settle lets the connections ready to run commit first, and Pebble groups
// the syncs that queue up while one runs.

// Pebble makes a batch visible before its WAL write or sync is done; a read
// that may have seen one waits for the WAL itself (storage_readsettle.go).
//
// A real fsync is still owed, and made, where nothing else would make one:
// BumpEpoch (LOCK-10), Sync, Close and, with FsyncEverysec, the syncer once
// a second call fsyncWAL. And a WAL that Pebble closes to switch to the next
// is fsynced (walFile.Close): Pebble relies on it so that only the last WAL
// can have an unclean tail after a crash. Only WAL files are wrapped:
// sstables, the MANIFEST and the OPTIONS file are synced by Pebble itself.

// fsyncWAL fsyncs every write handed to the OS so far, whatever the fsync
// mode; a write that Pebble still buffers may be left out, and none such
// was acknowledged.
//
// It cannot tell the Sync it causes, which runs on Pebble's WAL goroutine,
// to be an fsync; it owes one instead (fsyncPolicy.owe), and the next WAL
// Sync to start lowers it and fsyncs. That Sync may be another caller's,
// started before fsyncWAL's own record was written: it still covers every
// write that must be covered, all write(2)n before the flag was raised; and
// it ends before fsyncWAL's own Sync does, as Pebble syncs a WAL on one
// goroutine, and closes a WAL (with an fsync) before it starts the next.
func (s *Store) fsyncWAL() error {
	s.fsync.owe()
	if err := s.syncWAL(); err != nil {
		return err
	}
	s.lastSync.Store(s.now().Unix()) // LASTSAVE: the last fsync
	return nil
}

// syncWAL is commit for a WAL sync of everything committed so far: with
// FsyncAlways an fsync, otherwise a write to the OS (see storage_walsync.go).
func (s *Store) syncWAL() (err error) {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	defer s.recoverWrite(&err)
	upTo := s.unsettled.unsynced.Load()
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return err
	}
	if err := s.failedSince(); err != nil {
		return err
	}
	s.synced(upTo)
	if s.fsync.syncIsFsync() {
		s.lastSync.Store(s.now().Unix()) // LASTSAVE: the last fsync
	}
	return nil
}

// settle makes a write applied by this caller as durable as the fsync mode
// asks: it waits for a WAL sync (an fsync with FsyncAlways, a write(2)
// otherwise) that covers the caller's commit, made NoSync before (see
// storage_walsync.go). It is called with no stripe held.
//
// Writers share those syncs, as Redis's event loop writes its AOF once for
// every client it served in a turn. A caller first yields, so that the
// goroutines ready to run on its P go before it (their connections'
// commands commit and come to settle too), and then needs no sync of its
// own if one begun since covered it. Without that, each command would have
// the WAL goroutine, which a sync request readies to run next, write(2) its
// record alone. Then one writer syncs for all that wait (the group commit
// of storage_walgroup.go): the sync of an empty LogData record covers every
// batch committed before it.
func (s *Store) settle() error {
	// A count of commits that includes this caller's: a sync that began
	// after unsynced reached it covers this caller's commit (see synced).
	mine := s.unsettled.unsynced.Load()
	if s.unsettled.syncedTo.Load() >= mine {
		return nil
	}
	runtime.Gosched()
	if err := s.syncShared(mine); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// Sync forces an fsync of everything written so far.
func (s *Store) Sync() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.fsyncWAL(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

func (s *Store) runSyncer() {
	defer s.wg.Done()
	t := time.NewTicker(everysecInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if !s.fsync.takeWritten() || s.failed.Load() != nil {
			continue
		}
		if err := s.fsyncWAL(); err != nil {
			s.log.Error("kv: everysec fsync failed", "dir", s.dir, "err", err)
		}
	}
}

// Save is SAVE and BGSAVE: a durable point of the whole keyspace. It
// flushes Pebble's memtables to its tables, synced, and fsyncs the WAL,
// so that everything committed before it is on disk however the store
// was opened (--fsync no included); LASTSAVE then says now.
func (s *Store) Save() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.refused(); err != nil {
		return err
	}
	changes := s.changes.Load()
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	if err := s.fsyncWAL(); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	s.changes.Add(-changes) // what was written meanwhile is still to save
	return nil
}
