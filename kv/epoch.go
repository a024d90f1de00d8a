package kv

// The epoch (LOCK-10): a counter kept in the internal namespace, made
// durable at each open before any lease is granted.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// BumpEpoch reads the epoch (0 if the store never had one), adds 1, writes
// it with an fsync and returns it (SPEC §2, LOCK-10, LOCK-02). A new data
// directory's first call returns 1.
func (s *Store) BumpEpoch() (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.epochMu.Lock()
	defer s.epochMu.Unlock()
	var cur uint64
	raw, closer, err := s.db.Get(metaEpoch)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return 0, fmt.Errorf("bump epoch: %w", err)
	default:
		if len(raw) != 8 {
			_ = closer.Close()
			return 0, fmt.Errorf("bump epoch: corrupt epoch record of %d bytes", len(raw))
		}
		cur = binary.BigEndian.Uint64(raw)
		_ = closer.Close()
	}
	next := cur + 1
	if next == 0 {
		return 0, fmt.Errorf("bump epoch: epoch %d cannot grow", cur)
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], next)
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(metaEpoch, buf[:], nil)
	if err := s.commit(b, pebble.Sync); err != nil {
		return 0, fmt.Errorf("bump epoch: %w", err)
	}
	// The commit's sync handed the epoch to the OS; this makes it durable.
	if err := s.fsyncWAL(); err != nil {
		return 0, fmt.Errorf("bump epoch: %w", err)
	}
	s.epoch.Store(next)
	return next, nil
}

// Epoch returns the value BumpEpoch last returned, 0 before the first call.
func (s *Store) Epoch() uint64 { return s.epoch.Load() }
