package kv

import (
	"io"
	"slices"
	"sync"
	"sync/atomic"
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

// view calls fn with key's live record, if it has one, and counts the
// lookup; a live key of another type than want (typeAny: any) is
// ErrWrongType, and fn is not called. rec.value aliases Pebble's memory, or a copy of what the metadata
// cache keeps, for the duration of fn. An expired record is dropped (lazy
// expiry) and fn is not called.
//
// Where it can hold key's stripe (see readStripe), it answers from the
// metadata cache when that keeps the value, and otherwise reads Pebble
// with the stripe held and leaves the value in the cache: with the stripe
// held no write of key falls between the read and the caching.
func (s *Store) view(key []byte, want Type, fn func(rec record)) (found bool, err error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	buf := dataKeyBufs.Get().(*[]byte)
	defer dataKeyBufs.Put(buf)
	h := hashKey(key)
	// Room for a cached value after the data key: cachedValue copies it there.
	*buf = appendDataKey(slices.Grow((*buf)[:0], prefixLen+len(key)+maxCachedValue), h, key)
	dk := *buf
	st, locked := s.readStripe(h, key)
	var (
		rec    record
		closer io.Closer
	)
	if st != nil {
		rec, found = st.cachedValue(h, key, dk[len(dk):])
	}
	if !found {
		rec, closer, found, err = getRecord(s.reader(), dk)
		if st != nil && found && err == nil {
			s.rememberRead(st, h, key, rec)
		}
	}
	if locked {
		st.Unlock()
	}
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		if closer != nil {
			_ = closer.Close()
		}
		return false, err
	}
	if found && s.expiredNow(rec.expiry) {
		if closer != nil {
			_ = closer.Close()
		}
		s.lookups.count(false)
		return false, s.dropExpired(key)
	}
	s.lookups.count(found)
	if !found {
		return false, nil
	}
	if closer != nil {
		defer closer.Close()
	}
	if want != typeAny {
		if err := rec.is(want); err != nil {
			return true, err
		}
	}
	fn(rec)
	return true, nil
}

// readStripe takes key's stripe for a read that may use the metadata
// cache and returns it, locked when the caller must unlock it; st is nil
// where the cache cannot say what the read must see. A stripe is only
// tried: a read never waits for a writer (a transaction holds every
// stripe until it commits, and reads go on meanwhile), nor may a pipeline
// wait for a stripe while it holds one; a read that finds it taken reads
// Pebble as it is. A stripe a pipeline holds is its own already, as every
// stripe is a transaction's, and the cache is true of a key none of their
// commands wrote (one they wrote is read through the batch, as is every
// key after a FLUSHALL in the transaction).
func (s *Store) readStripe(h uint64, key []byte) (st *stripe, locked bool) {
	if s.metaPerStripe == 0 {
		return nil, false
	}
	n := int(h % numStripes)
	st = &s.stripes[n]
	switch t := s.tx; {
	case t == nil:
		if st.TryLock() {
			return st, true
		}
	case t.flushed:
		// The batch deleted every key; the cache knows nothing of it.
	case t.pipe == nil || t.pipe.held[n/64]&(1<<(n%64)) != 0:
		// Held: a transaction holds every stripe, a pipeline the ones it
		// took. The cache is true of a key none of its commands wrote.
		if _, touched := t.find(key); !touched {
			return st, false
		}
	case st.TryLock():
		return st, true
	}
	return nil, false
}

// rememberRead leaves rec, just read from Pebble with st held, in the
// metadata cache, with its value when that is short enough; an expired
// record is left for lazy expiry to drop.
func (s *Store) rememberRead(st *stripe, h uint64, key []byte, rec record) {
	if s.expiredNow(rec.expiry) {
		return
	}
	m := keyMeta{expiry: rec.expiry, fence: rec.fence, typ: rec.typ}
	if len(rec.value) <= maxCachedValue {
		m.raw, m.valued = rec.raw, true
	}
	st.meta.put(h, key, m, rec.value, s.metaPerStripe)
}

// dataKeyBufs hold the data keys that reads look up, so that a read
// allocates none: Pebble's Get keeps no hold of its key.
var dataKeyBufs = sync.Pool{New: func() any { return new([]byte) }}
