package kv

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// lookupStats count the reads that found their key and those that did not,
// as Redis's keyspace_hits and keyspace_misses do: reads only (GET, EXISTS,
// TTL, GETBIT …), never the lookups a write makes.
type lookupStats struct {
	hits, misses atomic.Int64
}

func (l *lookupStats) count(found bool) {
	if found {
		l.hits.Add(1)
	} else {
		l.misses.Add(1)
	}
}

// ResetStats zeroes the counters CONFIG RESETSTAT resets: keyspace hits
// and misses, and expired keys.
func (s *Store) ResetStats() {
	s.lookups.hits.Store(0)
	s.lookups.misses.Store(0)
	s.expiredTotal.Store(0)
}

// view calls fn with key's live record, if it has one, and counts the
// lookup. rec.value aliases Pebble's memory for the duration of fn. An
// expired record is dropped (lazy expiry) and fn is not called.
func (s *Store) view(key []byte, fn func(rec record)) (found bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	buf := dataKeyBufs.Get().(*[]byte)
	defer dataKeyBufs.Put(buf)
	*buf = appendDataKey((*buf)[:0], hashKey(key), key)
	rec, closer, found, err := getRecord(s.reader(), *buf)
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		if found {
			_ = closer.Close()
		}
		return false, err
	}
	if found && s.expiredNow(rec.expiry) {
		_ = closer.Close()
		s.lookups.count(false)
		return false, s.dropExpired(key)
	}
	s.lookups.count(found)
	if !found {
		return false, nil
	}
	defer closer.Close()
	fn(rec)
	return true, nil
}

// GetFunc is Get without the copy: fn is called with the value, which is
// Pebble's memory, valid only until fn returns, and must not be changed.
// found is false, and fn not called, for a missing or expired key.
func (s *Store) GetFunc(key []byte, fn func(value []byte)) (found bool, err error) {
	found, err = s.view(key, func(rec record) { fn(rec.value) })
	if err != nil {
		return false, wrap("get", err)
	}
	return found, nil
}

// dataKeyBufs hold the data keys that reads look up, so that a read
// allocates none: Pebble's Get keeps no hold of its key.
var dataKeyBufs = sync.Pool{New: func() any { return new([]byte) }}

// avgTTL is the mean of the milliseconds left to the keys with a TTL.
// Keys that expired and are not swept yet count as 0 left, so the mean
// is never negative.
func (s *Store) avgTTL() int64 {
	n := s.keysWithExpiry.Load()
	if n <= 0 {
		return 0
	}
	return max(0, s.deadlineSum.Load()/n+s.deadlineBase-s.nowMs())
}

// sumDeadlines adds up the deadlines in the expiry index, less
// deadlineBase, for Store.deadlineSum at open.
func (s *Store) sumDeadlines() (int64, error) {
	iter, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{nsExpiry}, UpperBound: []byte{nsEnd}})
	if err != nil {
		return 0, err
	}
	var sum int64
	for valid := iter.First(); valid; valid = iter.Next() {
		if k := iter.Key(); len(k) >= prefixLen {
			sum += int64(binary.BigEndian.Uint64(k[1:prefixLen])) - s.deadlineBase
		}
	}
	return sum, errors.Join(iter.Error(), iter.Close())
}
