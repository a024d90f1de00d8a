package kv

// A keyspace under a replicated log (package cluster, SPEC §10): each
// entry of the log is applied as one transaction at the instant the
// leader wrote in it, with the index of the entry recorded in the same
// batch, so that a copy reopened after a crash knows exactly which
// entries it holds and applies none twice. Expiry on such a copy is
// judged at the entries' instants only (Options.Replica).

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

var metaApplied = []byte{nsMeta, 'a', 'p', 'p', 'l', 'i', 'e', 'd'}

// applyAt is what runTx adds for a replicated entry: its instant, and the
// records written in the transaction's batch whatever its commands did.
type applyAt struct {
	index  uint64
	nowMs  int64
	record func(b *pebble.Batch) error
}

// ApplyAt runs fn (which may be nil) as one transaction at the instant
// nowMs, as Tx runs it, and records index as the applied index in the
// same batch; with bumpEpoch it also adds 1 to the epoch there and
// returns the new epoch (0 otherwise). All of it commits, or none.
//
// It commits without waiting for the WAL (Settle does): the log the
// entry came from is the durable copy, on a majority's disk before the
// entry is applied, and a copy reopened behind it applies again what its
// keyspace lost (the index recorded tells it where to start). So a batch
// of entries shares one Settle, where each settled on its own before.
func (s *Store) ApplyAt(index uint64, nowMs int64, bumpEpoch bool, fn func(tx *Store)) (epoch uint64, err error) {
	if s.tx != nil {
		return 0, errNestedTx
	}
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if fn == nil {
		fn = func(*Store) {}
	}
	if bumpEpoch {
		s.epochMu.Lock()
		defer s.epochMu.Unlock()
	}
	at := &applyAt{index: index, nowMs: nowMs, record: func(b *pebble.Batch) error {
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], index)
		if err := b.Set(metaApplied, buf[:], nil); err != nil {
			return err
		}
		if !bumpEpoch {
			return nil
		}
		cur, err := s.readUint64(metaEpoch)
		if err != nil {
			return err
		}
		if epoch = cur + 1; epoch == 0 {
			return fmt.Errorf("epoch %d cannot grow", cur)
		}
		binary.BigEndian.PutUint64(buf[:], epoch)
		return b.Set(metaEpoch, buf[:], nil)
	}}
	if _, _, err = s.runTx(nil, at, fn); err != nil {
		return 0, wrap("apply", err)
	}
	if bumpEpoch {
		s.epoch.Store(epoch)
	}
	return epoch, nil
}

// AppliedIndex is the index ApplyAt or SweepAt last recorded, 0 for a
// store that never had one.
func (s *Store) AppliedIndex() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	n, err := s.readUint64(metaApplied)
	if err != nil {
		return 0, fmt.Errorf("applied index: %w", err)
	}
	return n, nil
}

// StoredEpoch reads the epoch on disk (0 for none), for a copy that has
// not applied one since it opened; Epoch returns it from then on.
func (s *Store) StoredEpoch() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.epochMu.Lock()
	defer s.epochMu.Unlock()
	e, err := s.readUint64(metaEpoch)
	if err == nil {
		s.epoch.Store(e)
	}
	return e, err
}

// SweepAt deletes up to limit keys expired at nowMs, the oldest deadlines
// first, and records index as applied. The deletes and the record are not
// one batch: applied again after a crash between them, the same sweep at
// the same instant finds nothing more to delete, so it is applied once in
// effect.
func (s *Store) SweepAt(index uint64, nowMs int64, limit int) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	n, err := s.sweepOnce(nowMs, limit)
	if err != nil {
		return 0, wrap("sweep", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], index)
	_ = b.Set(metaApplied, buf[:], nil)
	if err := s.commitCommand(b); err != nil {
		return 0, wrap("sweep", err)
	}
	return n, nil // the caller settles, as after ApplyAt
}

// Settle waits until what ApplyAt and SweepAt committed before it is in
// the operating system's hands (fsynced with FsyncAlways): a replicated
// log's applier calls it once per batch of entries, so that the
// keyspace's WAL is not left in Pebble's buffer.
func (s *Store) Settle() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.settle(); err != nil {
		return wrap("apply", err)
	}
	return nil
}

// Due reports whether a key is expired at nowMs and not yet deleted: the
// leader of a cluster proposes a sweep when one is.
func (s *Store) Due(nowMs int64) (bool, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{nsExpiry},
		UpperBound: expiryPrefix(nowMs),
	})
	if err != nil {
		return false, err
	}
	due := iter.First()
	return due, closeIter(iter, iter.Error())
}

// WatchBroken is Tx's check of w (see Watch), on its own: whether one of
// w's keys was touched since it was watched, or has expired. The leader
// of a cluster decides EXEC's watch with it before it proposes the
// transaction, which every copy then applies unconditionally.
func (s *Store) WatchBroken(w *Watch) (bool, error) {
	for i := range s.stripes {
		s.stripes[i].Lock()
	}
	defer func() {
		for i := range s.stripes {
			s.stripes[i].Unlock()
		}
	}()
	return s.watchBroken(w, s.nowMs())
}

func (s *Store) readUint64(key []byte) (uint64, error) {
	raw, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	if len(raw) != 8 {
		return 0, fmt.Errorf("corrupt record %q of %d bytes", key[1:], len(raw))
	}
	return binary.BigEndian.Uint64(raw), nil
}
