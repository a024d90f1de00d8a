//go:build linux

package kv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// ringOrSkip is a ring, or skips the test where the kernel gives none (a
// seccomp profile, kernel.io_uring_disabled): the store then uses
// fdatasync(2), which TestWALFsyncWithoutTheRing covers.
func ringOrSkip(t *testing.T) *uring {
	t.Helper()
	u, err := newURing()
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	t.Cleanup(u.close)
	return u
}

// The ring's fdatasync answers with the kernel's own result, one
// submission at a time: success on a file, EBADF on a closed descriptor,
// EINVAL on a pipe (which cannot be synced), and after close a ring error
// that sends the store back to fdatasync(2).
func TestURingFdatasyncAnswersTheKernelsResult(t *testing.T) {
	u := ringOrSkip(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "wal.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 20 {
		if _, err := fmt.Fprintf(f, "record %d\n", i); err != nil {
			t.Fatal(err)
		}
		if err := u.fdatasync(int(f.Fd())); err != nil {
			t.Fatalf("fdatasync %d: %v", i, err)
		}
	}

	closed, err := os.Create(filepath.Join(t.TempDir(), "closed"))
	if err != nil {
		t.Fatal(err)
	}
	fd := int(closed.Fd())
	closed.Close()
	if err := u.fdatasync(fd); !errors.Is(err, syscall.EBADF) || errors.Is(err, errURing) {
		t.Fatalf("fdatasync of a closed descriptor: %v, want EBADF from the kernel", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := u.fdatasync(int(w.Fd())); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("fdatasync of a pipe: %v, want EINVAL", err)
	}
	// The ring goes on after failures: the next one is the file's again.
	if err := u.fdatasync(int(f.Fd())); err != nil {
		t.Fatalf("fdatasync after the failures: %v", err)
	}

	u.close()
	if err := u.fdatasync(int(f.Fd())); !errors.Is(err, errURing) {
		t.Fatalf("fdatasync on a closed ring: %v, want a ring error", err)
	}
}

// onDisk opens a store on the real disk (the only place the ring is used)
// with --fsync always.
func onDisk(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Fsync: FsyncAlways, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SPEC §6 (--fsync always acknowledges a write once it is on disk): a
// store on the real disk syncs its WAL through the ring where the kernel
// has one, writers sharing its fsyncs, and what it acknowledged is there
// after a reopen. INFO persistence's wal_fsync says which way it syncs.
func TestWALFsyncThroughTheRing(t *testing.T) {
	ringOrSkip(t)
	dir := t.TempDir()
	s := onDisk(t, dir)
	if got := s.Stats().WALFsync; got != "io_uring" {
		t.Fatalf("WALFsync %q on the real disk, want io_uring", got)
	}
	const writers, each = 8, 50
	concurrently(t, writers, func(w int) error {
		for i := range each {
			if _, err := s.Set(fmt.Appendf(nil, "k%d-%d", w, i), []byte("v"), SetOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	if st := s.Stats(); st.WALSyncs == 0 || st.WALSyncs >= writers*each {
		t.Fatalf("%d WAL syncs for %d writes", st.WALSyncs, writers*each)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = onDisk(t, dir)
	defer s.Close()
	for w := range writers {
		for i := range each {
			if _, ok, err := s.Get(fmt.Appendf(nil, "k%d-%d", w, i)); err != nil || !ok {
				t.Fatalf("k%d-%d after reopen: %v %v", w, i, ok, err)
			}
		}
	}
}

// A ring that fails in itself is let go: the store syncs by fdatasync(2)
// from then on, and the write under way is not failed for it.
func TestWALRingFailureFallsBackToFdatasync(t *testing.T) {
	ringOrSkip(t)
	s := onDisk(t, t.TempDir())
	defer s.Close()
	ring := s.walRing.Load()
	if ring == nil {
		t.Fatal("no ring on the real disk")
	}
	ring.close() // every fdatasync of it now fails as the ring's own error
	if _, err := s.Set([]byte("k"), []byte("v"), SetOptions{}); err != nil {
		t.Fatalf("SET with the ring gone: %v", err)
	}
	if got := s.Stats().WALFsync; got != "fdatasync" {
		t.Fatalf("WALFsync %q after the ring failed, want fdatasync", got)
	}
	if _, err := s.Set([]byte("k2"), []byte("v"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Without the ring (a kernel that refuses it) the WAL is synced by
// fdatasync(2), and says so.
func TestWALFsyncWithoutTheRing(t *testing.T) {
	useWALRing = false
	t.Cleanup(func() { useWALRing = true })
	dir := t.TempDir()
	s := onDisk(t, dir)
	if got := s.Stats().WALFsync; got != "fdatasync" {
		t.Fatalf("WALFsync %q with the ring off", got)
	}
	if _, err := s.Set([]byte("k"), []byte("v"), SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = onDisk(t, dir)
	defer s.Close()
	if v, ok, err := s.Get([]byte("k")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("GET k after reopen: %q %v %v", v, ok, err)
	}
}

// What a completion means decides between falling back to fdatasync(2) and
// latching the store failed (SPEC §7: nothing acknowledged is lost). The
// kernel cancels an fsync it cannot start a worker for (RLIMIT_NPROC, a
// pids limit): the fsync never ran, so fdatasync(2) may make it. An fsync
// that ran and failed may have taken the file's error report, and a
// completion of something else leaves this one's result unknown: both are
// the disk's failure, never the ring's.
func TestURingCompletionSaysWhoFailed(t *testing.T) {
	notRun := []syscall.Errno{syscall.ECANCELED, syscall.EAGAIN, syscall.ENOMEM, syscall.EINTR}
	for _, e := range notRun {
		if err := completion(-int32(e), true); !errors.Is(err, errURing) || !errors.Is(err, e) {
			t.Errorf("%v: %v, want the ring's own failure", e, err)
		}
	}
	for _, e := range []syscall.Errno{syscall.EIO, syscall.ENOSPC, syscall.EROFS, syscall.EBADF, syscall.EINVAL} {
		if err := completion(-int32(e), true); err == nil || errors.Is(err, errURing) || !errors.Is(err, e) {
			t.Errorf("%v: %v, want the disk's failure", e, err)
		}
	}
	if err := completion(0, false); err == nil || errors.Is(err, errURing) {
		t.Errorf("a completion of another submission: %v, want the disk's failure", err)
	}
	if err := completion(0, true); err != nil {
		t.Errorf("success: %v", err)
	}
}
