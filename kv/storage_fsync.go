package kv

// When writes reach the disk: the fsync modes, and the policy that is the
// one place a mode is read. The write paths ask the policy what to do;
// none compares modes. How a WAL sync is made and shared is storage_walsync.go's.

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// FsyncMode says when writes reach the disk (SPEC §6, --fsync). In every
// mode a write returns only once the operating system has it, so a crash
// of the process loses no acknowledged write (see storage_walsync.go).
type FsyncMode int

const (
	// FsyncEverysec hands every write to the OS before it returns, and
	// fsyncs the WAL once a second when something was written: a crash of
	// the machine loses at most about a second of acknowledged writes.
	FsyncEverysec FsyncMode = iota
	// FsyncAlways acknowledges a write only once it is on disk; concurrent
	// writers share fsyncs.
	FsyncAlways
	// FsyncNo hands every write to the OS before it returns and leaves the
	// fsync to the OS (and to Pebble when it switches WAL files).
	// BumpEpoch, Sync and Close still fsync.
	FsyncNo
)

// ParseFsyncMode reads "always", "everysec" or "no" (any case).
func ParseFsyncMode(s string) (FsyncMode, error) {
	switch strings.ToLower(s) {
	case "everysec":
		return FsyncEverysec, nil
	case "always":
		return FsyncAlways, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("fsync mode %q: want always, everysec or no", s)
}

func (m FsyncMode) known() bool { return m == FsyncEverysec || m == FsyncAlways || m == FsyncNo }

// String returns the name ParseFsyncMode reads.
func (m FsyncMode) String() string {
	switch m {
	case FsyncEverysec:
		return "everysec"
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// fsyncPolicy is what the fsync mode asks of the write paths, and the
// state that carries it out: whether a WAL sync is an fsync, whether a
// syncer fsyncs once a second and whether anything was written for it to
// sync, and whether a WAL file is fsynced as Pebble closes it.
type fsyncPolicy struct {
	mode FsyncMode
	// dirty: written since the everysec syncer last synced.
	dirty atomic.Bool
	// owed: the next WAL Sync to start must fsync (see Store.fsyncWAL).
	owed atomic.Bool
}

// syncIsFsync: every WAL sync is an fsync (always), so a write's own sync
// makes it durable, and LASTSAVE moves with each.
func (p *fsyncPolicy) syncIsFsync() bool { return p.mode == FsyncAlways }

// fsyncsEverySecond: a syncer fsyncs once a second, when something was
// written (everysec).
func (p *fsyncPolicy) fsyncsEverySecond() bool { return p.mode == FsyncEverysec }

// written notes a write for the everysec syncer.
func (p *fsyncPolicy) written() {
	if p.mode == FsyncEverysec && !p.dirty.Load() {
		p.dirty.Store(true)
	}
}

// takeWritten reports whether anything was written since it was last
// called, for the everysec syncer.
func (p *fsyncPolicy) takeWritten() bool { return p.dirty.Swap(false) }

// owe makes the next WAL Sync to start an fsync, in a mode whose WAL
// syncs are not all fsyncs (see Store.fsyncWAL).
func (p *fsyncPolicy) owe() {
	if !p.syncIsFsync() {
		p.owed.Store(true)
	}
}

// walSyncIsFsync reports whether a WAL Sync that starts now must fsync:
// every one in always, an owed one otherwise.
func (p *fsyncPolicy) walSyncIsFsync() bool {
	return p.syncIsFsync() || (p.owed.Load() && p.owed.CompareAndSwap(true, false))
}

// fsyncOnClose: a WAL that Pebble closes must be fsynced first, where its
// syncs were not fsyncs (see walFile.Close).
func (p *fsyncPolicy) fsyncOnClose() bool { return !p.syncIsFsync() }
