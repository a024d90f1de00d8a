package kv

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Active expiry. The expiry index holds one entry per key with a TTL, in
// deadline order, so the keys due are a prefix of it. Each pass deletes
// them in rounds of sweepRound entries until none is due or sweepBudget
// has passed, and the next pass continues where it stopped.
const (
	sweepRound  = 256
	sweepBudget = 25 * time.Millisecond
)

// runSweeper is the store's background goroutine: each interval, an
// expiry sweep (but on a replica) and a round of reclaim (storage_reclaim.go).
func (s *Store) runSweeper() {
	defer s.wg.Done()
	t := time.NewTicker(s.sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.failed.Load() != nil {
			continue // the disk failed a write: no more deletes
		}
		if !s.replica { // a replica's keys expire by SweepAt alone
			if err := s.sweep(sweepBudget); err != nil {
				s.log.Error("kv: expiry sweep failed", "dir", s.dir, "err", err)
			}
		}
		if s.refused() != nil {
			continue // flushes fail: the reclaim waits, as writes do
		}
		if _, err := s.reclaim(reclaimRound); err != nil {
			s.log.Error("kv: reclaim of stale members failed", "dir", s.dir, "err", err)
		}
	}
}

// sweep deletes keys whose deadline has passed, until none is due or budget
// has passed (budget 0: until none is due).
func (s *Store) sweep(budget time.Duration) error {
	start := time.Now()
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		n, err := s.sweepOnce(s.nowMs(), sweepRound)
		if err != nil || n < sweepRound || (budget > 0 && time.Since(start) >= budget) {
			return err
		}
	}
}

// sweepOnce handles up to limit index entries due at now and returns how
// many it handled.
func (s *Store) sweepOnce(now int64, limit int) (int, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{nsExpiry},
		UpperBound: expiryPrefix(now), // deadlines < now: expired, as now > deadline
	})
	if err != nil {
		return 0, err
	}
	var due [][]byte
	for valid := iter.First(); valid && len(due) < limit; valid = iter.Next() {
		due = append(due, clone(iter.Key()))
	}
	if err := closeIter(iter, iter.Error()); err != nil {
		return 0, err
	}
	for _, ek := range due {
		if err := s.sweepKey(ek, now); err != nil {
			return 0, err
		}
	}
	return len(due), nil
}

// sweepKey deletes the key of index entry ek if its record still has that
// deadline; otherwise the entry is stale and only it is deleted.
func (s *Store) sweepKey(ek []byte, now int64) error {
	if len(ek) < prefixLen {
		b := s.db.NewBatch()
		defer b.Close()
		_ = b.Delete(ek, nil)
		return s.commit(b, pebble.NoSync)
	}
	at := int64(binary.BigEndian.Uint64(ek[1:prefixLen]))
	key := ek[prefixLen:]
	it := s.newItem(key)
	c := change{db: s.db, now: now, hooked: s.hooked()}
	it.st.Lock()
	err := s.load(&it, now, false)
	if err == nil {
		if it.cur.present && it.cur.rec.expiry == at && !it.cur.live {
			c.drop(&it)
		} else {
			_ = c.batch().Delete(ek, nil)
		}
		err = s.applySwept(&c)
		s.committed(&it, err)
	}
	it.st.Unlock()
	c.close()
	return err
}
