package kv

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// failingFS is an in-memory file system whose disk can be made to fail:
// writes and syncs of files opened for writing return ENOSPC once full is
// set, and files can no longer be made once readOnly is set.
type failingFS struct {
	vfs.FS
	full, readOnly atomic.Bool
}

func (f *failingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.readOnly.Load() {
		return nil, fmt.Errorf("open %s: %w", name, syscall.EACCES)
	}
	file, err := f.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &failingFile{File: file, fs: f}, nil
}

func (f *failingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f.readOnly.Load() {
		return nil, fmt.Errorf("rename %s: %w", newname, syscall.EACCES)
	}
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	if err != nil {
		return nil, err
	}
	return &failingFile{File: file, fs: f}, nil
}

type failingFile struct {
	vfs.File
	fs *failingFS
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.fs.full.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f *failingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.full.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(p, off)
}

func (f *failingFile) Sync() error {
	if f.fs.full.Load() {
		return syscall.ENOSPC
	}
	return f.File.Sync()
}

// SPEC §7 (the server never crashes, loses nothing acknowledged): when the
// disk fails Pebble's WAL, Pebble panics (and, at a memtable rotation, dies
// of "unlock of unlocked mutex", which no recover stops). The store turns
// that into ErrDiskFailed for every write from then on, and reads go on.
// Found by cmd/tenure's TestDisk, where a full tmpfs crashed the server or
// hung its writers for ever.
func TestDiskFailureRefusesWritesAndServesReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode FsyncMode
		fail func(*failingFS)
	}{
		{"full, fsync always", FsyncAlways, func(f *failingFS) { f.full.Store(true) }},
		{"full, fsync everysec", FsyncEverysec, func(f *failingFS) { f.full.Store(true) }},
		{"read-only, fsync always", FsyncAlways, func(f *failingFS) { f.readOnly.Store(true) }},
		{"read-only, fsync no", FsyncNo, func(f *failingFS) { f.readOnly.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &failingFS{FS: vfs.NewMem()}
			s, err := Open("db", Options{FS: fs, Fsync: tc.mode, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Set([]byte("before"), []byte("v"), SetOptions{}); err != nil {
				t.Fatal(err)
			}
			tc.fail(fs)
			// Enough to rotate the memtable, which needs a new WAL file.
			big := []byte(strings.Repeat("x", 64<<10))
			var werr error
			for i := 0; i < 1000 && werr == nil; i++ {
				_, werr = s.Set(fmt.Appendf(nil, "after:%d", i), big, SetOptions{})
				if werr == nil && tc.mode == FsyncEverysec && i%8 == 7 {
					werr = s.Sync() // everysec's syncer, sooner
				}
			}
			if !errors.Is(werr, ErrDiskFailed) {
				t.Fatalf("writes on a failed disk: got %v, want ErrDiskFailed", werr)
			}
			start := time.Now()
			if _, err := s.Set([]byte("later"), []byte("v"), SetOptions{}); !errors.Is(err, ErrDiskFailed) {
				t.Fatalf("a later write: got %v, want ErrDiskFailed", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("a later write took %v to be refused", d)
			}
			if v, ok, err := s.Get([]byte("before")); err != nil || !ok || string(v) != "v" {
				t.Fatalf("GET before: %q, %v, %v", v, ok, err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Close() }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrDiskFailed) {
					t.Errorf("Close: got %v, want ErrDiskFailed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close hung on a failed disk")
			}
		})
	}
}
