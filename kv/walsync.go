package kv

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
// that may have seen one waits for the WAL itself (readsettle.go).
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
// to be an fsync; it raises Store.walFsyncOwed instead, and the next WAL
// Sync to start lowers it and fsyncs. That Sync may be another caller's,
// started before fsyncWAL's own record was written: it still covers every
// write that must be covered, all write(2)n before the flag was raised; and
// it ends before fsyncWAL's own Sync does, as Pebble syncs a WAL on one
// goroutine, and closes a WAL (with an fsync) before it starts the next.
func (s *Store) fsyncWAL() error {
	if s.fsync != FsyncAlways {
		s.walFsyncOwed.Store(true)
	}
	if err := s.syncWAL(); err != nil {
		return err
	}
	s.lastSync.Store(s.now().Unix()) // LASTSAVE: the last fsync
	return nil
}

// walSyncIsFsync reports whether a WAL Sync that starts now must fsync.
func (s *Store) walSyncIsFsync() bool {
	return s.fsync == FsyncAlways || s.walFsyncOwed.CompareAndSwap(true, false)
}
