package kv

// What a failed write or sync does to the store: it refuses writes from
// then on (ErrDiskFailed), while reads go on (SPEC §7). See storage_walguard.go
// for how Pebble is kept from seeing a WAL error.

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// commit commits b. Pebble cannot go on after it failed to write or sync
// its WAL (a full disk, a read-only or failing data directory), so it never
// learns of such a failure (see walGuard): the first one is latched, the
// commit under way is reported failed, and from then on every write is
// refused with ErrDiskFailed without going near Pebble, while reads go on
// (SPEC §7: the server stays up, and loses nothing acknowledged). While
// flushes fail, writes are refused too (see events).
func (s *Store) commit(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
	if err := s.refused(); err != nil {
		return err
	}
	defer s.recoverWrite(&err)
	if err := b.Commit(o); err != nil {
		return err
	}
	return s.failedSince()
}

// failedSince is the latched failure, if a WAL write or sync failed while
// a commit or sync was under way: Pebble was told all was well (see
// walGuard), so this is how the caller learns its write is in doubt.
func (s *Store) failedSince() error {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	return nil
}

// refused is the error every write is refused with now, or nil. Writes
// check it before they take their stripes too: a write caught in a wedged
// Pebble holds its stripe forever.
func (s *Store) refused() error {
	if failed := s.failed.Load(); failed != nil {
		return *failed
	}
	if failed := s.flushFailed.Load(); failed != nil {
		return *failed
	}
	return nil
}

// failWAL latches the store as failed on an error writing a WAL file
// (see walGuard).
func (s *Store) failWAL(cause error) {
	failed := fmt.Errorf("%w until the server restarts: %w", ErrDiskFailed, cause)
	if s.failed.CompareAndSwap(nil, &failed) {
		s.log.Error("kv: a write to the WAL failed; refusing writes until the store is reopened", "dir", s.dir, "err", cause)
	}
}

// recoverWrite turns a panic of Pebble's write path into the latched
// ErrDiskFailed. It must be deferred directly.
func (s *Store) recoverWrite(err *error) {
	p := recover()
	if p == nil {
		return
	}
	cause, ok := p.(error)
	if !ok {
		cause = fmt.Errorf("%v", p)
	}
	failed := fmt.Errorf("%w until the server restarts: %w", ErrDiskFailed, cause)
	if s.failed.CompareAndSwap(nil, &failed) {
		s.log.Error("kv: a write to the disk failed; refusing writes until the store is reopened", "dir", s.dir, "err", cause)
	}
	*err = *s.failed.Load()
}

// events watches Pebble's flushes. A flush that fails (a full disk, a
// read-only data directory) is retried at once and without end, and when the
// memtables are full Pebble stalls every write until one succeeds: a client
// would wait forever. So while flushes fail, writes are refused at once with
// the flush's error, and the first flush that succeeds lets them in again.
// Of Pebble's background errors, which repeat as fast as it retries, the
// first of a failing spell is logged.
func (s *Store) events() *pebble.EventListener {
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			// Pebble reports a flush that made no table as "empty table".
			if info.Err == nil || info.Err.Error() == "pebble: empty table" {
				if s.flushFailed.Swap(nil) != nil {
					s.log.Info("kv: a flush succeeded; writes are accepted again", "dir", s.dir)
				}
				return
			}
			failed := fmt.Errorf("%w while flushes fail: %w", ErrDiskFailed, info.Err)
			if s.flushFailed.Swap(&failed) == nil {
				s.log.Error("kv: a flush failed; refusing writes until one succeeds", "dir", s.dir, "err", info.Err)
			}
		},
		BackgroundError: func(err error) {
			if s.flushFailed.Load() == nil {
				s.log.Error("background error: "+err.Error(), "component", "pebble")
			}
		},
	}
}

// closeFailed closes a store whose disk failed a write. Pebble's commit
// pipeline may be wedged by it, and a goroutine caught inside never
// returns; Pebble's Close would wait for it forever. So it gets a moment,
// and then what is left open is left to the process's exit: what was
// acknowledged is on disk already, and the next open recovers the WAL.
func (s *Store) closeFailed(failed error) error {
	done := make(chan error, 1)
	go func() {
		s.wg.Wait()
		err := func() (err error) {
			defer s.recoverWrite(&err)
			return s.db.Close()
		}()
		s.closeWALRing() // Pebble's close may still have synced the WAL
		done <- err
	}()
	select {
	case err := <-done:
		return fmt.Errorf("close %s: %w", s.dir, errors.Join(failed, err))
	case <-time.After(2 * time.Second):
		return fmt.Errorf("close %s: left open, as a write had failed: %w", s.dir, failed)
	}
}
