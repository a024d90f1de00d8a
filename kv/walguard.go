package kv

import (
	"io/fs"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walGuard is the file system Pebble is opened on: the real one, watched
// where Pebble cannot take an error. Pebble does not survive a WAL it cannot
// write: when the file of a new WAL cannot be made, or the old one cannot be
// closed, at a memtable rotation, it panics with its DB mutex released and
// then unlocks it again: "fatal error: sync: unlock of unlocked mutex",
// which no recover stops, and the process dies (a read-only data directory
// does it at the first rotation). So:
//
//   - the first error writing or syncing a WAL file latches the store as
//     failed at once (see Store.commit), before Pebble's commit path meets
//     it: no new write goes in, and with none, no rotation happens;
//   - a WAL file that cannot be made is handed to Pebble as a file whose
//     every write fails with that error, so the rotation goes through and
//     the write that caused it fails, recoverably, at its own sync.
//
// Nothing is acknowledged that is not on disk: the errors still reach the
// writes they belong to.
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
		return deadFile{name: name, err: err}, nil
	}
	return walFile{File: f, s: g.s}, nil
}

// walFile latches the store as failed on the first error writing or
// syncing it, and returns the error as it came.
type walFile struct {
	vfs.File
	s *Store
}

func (f walFile) check(err error) error {
	if err != nil {
		f.s.failWAL(err)
	}
	return err
}

func (f walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.check(err)
}

func (f walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.check(err)
}

func (f walFile) Sync() error     { return f.check(f.File.Sync()) }
func (f walFile) SyncData() error { return f.check(f.File.SyncData()) }

func (f walFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.check(err)
}

func (f walFile) Preallocate(offset, length int64) error {
	return f.check(f.File.Preallocate(offset, length))
}

// deadFile is a WAL file that could not be made: every write and sync
// fails with the error that stopped it.
type deadFile struct {
	name string
	err  error
}

func (d deadFile) Close() error                       { return nil }
func (d deadFile) Read([]byte) (int, error)           { return 0, d.err }
func (d deadFile) ReadAt([]byte, int64) (int, error)  { return 0, d.err }
func (d deadFile) Write([]byte) (int, error)          { return 0, d.err }
func (d deadFile) WriteAt([]byte, int64) (int, error) { return 0, d.err }
func (d deadFile) Preallocate(int64, int64) error     { return nil }
func (d deadFile) Stat() (vfs.FileInfo, error)        { return deadInfo{d.name}, nil }
func (d deadFile) Sync() error                        { return d.err }
func (d deadFile) SyncTo(int64) (bool, error)         { return false, d.err }
func (d deadFile) SyncData() error                    { return d.err }
func (d deadFile) Prefetch(int64, int64) error        { return nil }
func (d deadFile) Fd() uintptr                        { return vfs.InvalidFd }

// deadInfo is a dead file's Stat: empty.
type deadInfo struct{ name string }

func (i deadInfo) Name() string           { return i.name }
func (i deadInfo) Size() int64            { return 0 }
func (i deadInfo) Mode() fs.FileMode      { return 0o644 }
func (i deadInfo) ModTime() time.Time     { return time.Time{} }
func (i deadInfo) IsDir() bool            { return false }
func (i deadInfo) Sys() any               { return nil }
func (i deadInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
