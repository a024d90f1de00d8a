package kv

import "github.com/cockroachdb/pebble/v2"

// What a WAL sync costs, by fsync mode (SPEC §6).
//
// Pebble's WAL writer keeps what it is given in a 32 KB block in the
// process, and writes it to the file only when the block fills or a commit
// asks for a sync; then its WAL goroutine write(2)s what it has and calls
// the file's Sync. A NoSync commit is therefore not in the operating
// system's hands when it returns, and a SIGKILL loses it. So every command
// commits with a sync, and the WAL file's Sync (walFile) decides what that
// is:
//
//   - FsyncAlways: an fsync. A command commits without sync, and waits for
//     one once its stripes are released (Store.settle), so that concurrent
//     writers, a hot key's included, share fsyncs.
//   - FsyncEverysec and FsyncNo: nothing, as the data was write(2)n before
//     Sync was called; when the commit returns, the write survives the
//     process, though not the machine. The command waits for it under its
//     stripes, as a write(2) is short; Pebble groups the syncs that queue up
//     while one runs, so concurrent writers share a write(2).

// Pebble makes a batch visible before its WAL write or sync is done; a read
// that may have seen one waits for the WAL itself (readsettle.go).
//
// A real fsync is still owed, and made, where nothing else would make one:
// BumpEpoch (LOCK-10), Sync, Close and, with FsyncEverysec, the syncer once
// a second call fsyncWAL. And a WAL that Pebble closes to switch to the next
// is fsynced (walFile.Close): Pebble relies on it so that only the last WAL
// can have an unclean tail after a crash. Only WAL files are wrapped:
// sstables, the MANIFEST and the OPTIONS file are synced by Pebble itself.

// commandWriteOptions are the write options of a command's commit: with
// FsyncAlways it syncs later (Store.settle); otherwise this commit's sync
// hands the write to the OS.
func (s *Store) commandWriteOptions() *pebble.WriteOptions {
	if s.fsync == FsyncAlways {
		return pebble.NoSync
	}
	return pebble.Sync
}

// fsyncWAL fsyncs every write handed to the OS so far, whatever the fsync
// mode; a write that Pebble still buffers may be left out, and none such
// was acknowledged.
//
// It cannot tell the Sync it causes, which runs on Pebble's WAL goroutine,
// to be an fsync; it raises Store.walFsyncOwed instead, and the next WAL
// Sync to start lowers it and fsyncs. That Sync may be another commit's,
// started before fsyncWAL's own record was written: it still covers every
// write that must be covered, all write(2)n before the flag was raised; and
// it ends before fsyncWAL's own Sync does, as Pebble syncs a WAL on one
// goroutine, and closes a WAL (with an fsync) before it starts the next.
func (s *Store) fsyncWAL() error {
	if s.fsync != FsyncAlways {
		s.walFsyncOwed.Store(true)
	}
	return s.syncWAL()
}

// walSyncIsFsync reports whether a WAL Sync that starts now must fsync.
func (s *Store) walSyncIsFsync() bool {
	return s.fsync == FsyncAlways || s.walFsyncOwed.CompareAndSwap(true, false)
}
