package kv

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walGuard is the file system Pebble is opened on: the real one, watched
// where Pebble cannot take an error. Pebble does not survive a WAL it cannot
// write: when a write to its WAL fails, the error sticks to the WAL's
// writer, and at the next memtable rotation closing that writer fails and
// Pebble panics with its DB mutex released and then unlocks it again:
// "fatal error: sync: unlock of unlocked mutex", which no recover stops, and
// the process dies (a full disk or a read-only data directory does it at the
// first rotation after the failure). The WAL is written by a goroutine of
// Pebble's, so a commit already under way when the disk fails cannot be
// kept from that rotation. So Pebble never sees a WAL error:
//
//   - the first error writing or syncing a WAL file latches the store as
//     failed (Store.failWAL), and the call reports success to Pebble;
//   - a WAL file that cannot be made is handed to Pebble as a file whose
//     every write and sync is such a failure;
//   - a commit or sync that returns once the store is latched is reported
//     failed to its caller (Store.commit, Store.syncWAL), whatever Pebble
//     said, and no write is let in afterwards.
//
// Nothing is acknowledged that is not on disk as the fsync mode promises:
// a write is acknowledged only after a sync that covers it (with
// FsyncAlways an fsync, otherwise a write(2); see storage_walsync.go) returned with
// the store not latched, and the latch is set by the failing write or sync
// itself, before that sync returns.
type walGuard struct {
	vfs.FS
	s *Store
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (g walGuard) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, category)
	return g.guard(name, f, err)
}

func (g walGuard) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(oldname, newname, category)
	return g.guard(newname, f, err)
}

func (g walGuard) guard(name string, f vfs.File, err error) (vfs.File, error) {
	if !isWAL(name) {
		return f, err
	}
	if err != nil {
		g.s.failWAL(err)
		return deadFile{name: name}, nil
	}
	return walFile{File: f, s: g.s}, nil
}

// walFile latches the store as failed on an error writing or syncing it,
// and hides the error from Pebble (see walGuard).
type walFile struct {
	vfs.File
	s *Store
}

func (f walFile) check(err error) error {
	if err != nil {
		f.s.failWAL(err)
	}
	return nil
}

func (f walFile) Write(p []byte) (int, error) {
	_, err := f.File.Write(p)
	return len(p), f.check(err)
}

func (f walFile) WriteAt(p []byte, off int64) (int, error) {
	_, err := f.File.WriteAt(p, off)
	return len(p), f.check(err)
}

// Sync and SyncData fsync only when the fsync mode or fsyncWAL asks; else
// what Pebble wrote is already the OS's, and that is all that is owed (see
// storage_walsync.go).
func (f walFile) Sync() error {
	if !f.s.fsync.walSyncIsFsync() {
		return nil
	}
	return f.check(f.File.Sync())
}

func (f walFile) SyncData() error {
	if !f.s.fsync.walSyncIsFsync() {
		return nil
	}
	return f.check(f.s.syncData(f.File))
}

// Close fsyncs first: Pebble closes a WAL, syncing it, before it starts the
// next, so that only the last one can have an unclean tail after a crash.
func (f walFile) Close() error {
	if f.s.fsync.fsyncOnClose() {
		_ = f.check(f.s.syncData(f.File))
	}
	return f.File.Close()
}

func (f walFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.check(err)
}

func (f walFile) Preallocate(offset, length int64) error {
	return f.check(f.File.Preallocate(offset, length))
}

// deadFile is a WAL file that could not be made, the store latched as
// failed: it takes every write and sync and keeps nothing.
type deadFile struct{ name string }

func (d deadFile) Close() error                           { return nil }
func (d deadFile) Read([]byte) (int, error)               { return 0, io.EOF }
func (d deadFile) ReadAt([]byte, int64) (int, error)      { return 0, io.EOF }
func (d deadFile) Write(p []byte) (int, error)            { return len(p), nil }
func (d deadFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (d deadFile) Preallocate(int64, int64) error         { return nil }
func (d deadFile) Stat() (vfs.FileInfo, error)            { return deadInfo{d.name}, nil }
func (d deadFile) Sync() error                            { return nil }
func (d deadFile) SyncTo(int64) (bool, error)             { return true, nil }
func (d deadFile) SyncData() error                        { return nil }
func (d deadFile) Prefetch(int64, int64) error            { return nil }
func (d deadFile) Fd() uintptr                            { return vfs.InvalidFd }

// deadInfo is a dead file's Stat: empty.
type deadInfo struct{ name string }

func (i deadInfo) Name() string           { return i.name }
func (i deadInfo) Size() int64            { return 0 }
func (i deadInfo) Mode() fs.FileMode      { return 0o644 }
func (i deadInfo) ModTime() time.Time     { return time.Time{} }
func (i deadInfo) IsDir() bool            { return false }
func (i deadInfo) Sys() any               { return nil }
func (i deadInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }

// useWALRing lets a store on the real disk sync its WAL through io_uring
// where the kernel gives one; tests turn it off to test fdatasync(2).
var useWALRing = true

// syncData is an fdatasync of a WAL file: through the store's ring when it
// has one and the file is an OS file, else the file's own SyncData. A ring
// that fails in itself (not the fdatasync it made) is let go, and the file
// synced by fdatasync(2) from then on.
func (s *Store) syncData(f vfs.File) error {
	ring := s.walRing.Load()
	if ring == nil {
		return f.SyncData()
	}
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return f.SyncData()
	}
	err := ring.fdatasync(int(fd))
	if errors.Is(err, errURing) {
		if s.walRing.CompareAndSwap(ring, nil) {
			s.log.Warn("io_uring failed; the WAL is synced by fdatasync(2) from now on", "err", err)
			ring.close()
		}
		return f.SyncData()
	}
	return err
}

// closeWALRing lets the ring go once Pebble no longer syncs.
func (s *Store) closeWALRing() {
	if ring := s.walRing.Swap(nil); ring != nil {
		ring.close()
	}
}
