package kv

// The metadata cache: each stripe remembers the expiry and fence of the
// keys on disk that it guards, so that a write that does not need the value
// skips reading Pebble.

import (
	"errors"
	"io"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// stripe is one of the per-key-hash mutexes, with the metadata cache of
// the keys it guards, padded to its own cache line.
type stripe struct {
	sync.Mutex
	meta metaTable // guarded by the mutex; see remember
	// watched holds the WATCHes of its keys (see Watch); guarded by the
	// mutex, nil until a key is watched.
	watched map[string][]*watchEntry
	_       [16]byte
}

// keyMeta is what the store remembers of a key that is on disk: all a write
// needs to know of it when it does not need the value.
type keyMeta struct {
	expiry int64
	fence  uint64
}

// getRecord looks a record up. When found, rec.value aliases Pebble's memory
// and the caller must close closer once done with it.
func getRecord(r pebble.Reader, dk []byte) (rec record, closer io.Closer, found bool, err error) {
	raw, closer, err := r.Get(dk)
	if errors.Is(err, pebble.ErrNotFound) {
		return record{}, nil, false, nil
	}
	if err != nil {
		return record{}, nil, false, err
	}
	rec, err = decodeRecord(raw)
	if err != nil {
		_ = closer.Close()
		return record{}, nil, false, err
	}
	return rec, closer, true, nil
}

// slot is a key's state as read under its stripe.
type slot struct {
	present bool // a record is on disk, expired or not
	live    bool // present and not expired
	rec     record
}

// item is one key of a command holding its stripe.
type item struct {
	key, dk []byte
	st      *stripe
	cur     slot
}

func (s *Store) newItem(key []byte) item {
	it, _ := s.newItemAt(key)
	return it
}

// newItemAt is newItem that also says its stripe's index in Store.stripes,
// for updateMany's lock order. The index is not kept in the item, which
// every write allocates: without it an item fits Go's 112-byte size class,
// with it (and the record's raw flag) the 128-byte one.
func (s *Store) newItemAt(key []byte) (item, int) {
	h := hashKey(key)
	n := int(h % numStripes)
	return item{key: key, dk: dataKey(h, key), st: &s.stripes[n]}, n
}

// load reads it.cur, with its stripe held. The value is copied when
// withValue is set and left nil otherwise; without it, a key whose metadata
// the stripe remembers is not read from Pebble at all.
func (s *Store) load(it *item, now int64, withValue bool) error {
	if s.tx != nil {
		return s.tx.load(s, it, withValue)
	}
	return s.loadCommitted(it, now, withValue)
}

// loadCommitted is load outside a transaction: what is committed.
func (s *Store) loadCommitted(it *item, now int64, withValue bool) error {
	if m, ok := it.st.meta.get(dataKeyHash(it.dk), it.key); ok && !withValue {
		it.cur = slot{present: true, live: !expiredAt(m.expiry, now), rec: record{expiry: m.expiry, fence: m.fence}}
		return nil
	}
	if err := loadFrom(s.db, it, now, withValue); err != nil || !it.cur.present {
		return err
	}
	s.remember(it)
	return nil
}

// loadFrom reads it.cur from r, the value copied when withValue is set.
func loadFrom(r pebble.Reader, it *item, now int64, withValue bool) error {
	rec, closer, found, err := getRecord(r, it.dk)
	if err != nil || !found {
		it.cur = slot{}
		return err
	}
	if withValue {
		rec.value = clone(rec.value)
	} else {
		rec.value = nil
	}
	_ = closer.Close()
	it.cur = slot{present: true, live: !expiredAt(rec.expiry, now), rec: rec}
	return nil
}

// remember records it.cur, which is on disk, in its stripe's metadata
// cache; when the cache is full, an arbitrary key is forgotten to make room
// (Go's map iteration starts at a random place). The caller holds the
// stripe.
func (s *Store) remember(it *item) {
	m, h := &it.st.meta, dataKeyHash(it.dk)
	if !it.cur.present {
		m.del(h, it.key)
		return
	}
	if s.metaPerStripe == 0 {
		return
	}
	m.put(h, it.key, keyMeta{expiry: it.cur.rec.expiry, fence: it.cur.rec.fence}, s.metaPerStripe)
}

// committed brings the metadata cache in step with it once the commit of
// its change returned: what was written is remembered; after a failed
// commit the key is forgotten, since what is on disk is in doubt. The
// caller holds its stripe.
func (s *Store) committed(it *item, err error) {
	if err != nil {
		it.st.meta.del(dataKeyHash(it.dk), it.key)
		return
	}
	s.remember(it)
}

// clone copies b; unlike bytes.Clone an empty b gives an empty, non-nil slice.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
