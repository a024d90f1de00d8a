package kv

// The metadata cache: each stripe remembers the expiry and fence of the
// keys on disk that it guards, so that a write that does not need the value
// skips reading Pebble, and the values of up to maxCachedValue bytes, so
// that a read skips it too.

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
// needs to know of it when it does not need the value, and whether the
// value is kept beside it (valued, with its encoding: raw).
type keyMeta struct {
	expiry int64
	fence  uint64
	typ    Type
	raw    bool
	valued bool
}

// maxCachedValue is the longest value the metadata cache keeps: a GET of a
// key it holds so is answered from memory, without Pebble's lookup (about
// half of a pipelined GET's time). At the default MetaCacheKeys that is at
// most 32 MiB of values.
const maxCachedValue = 128

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
	// vs says what rec.value is (see valueState).
	vs  valueState
	rec record
}

// valueState says whether a slot's rec.value is the key's value.
type valueState uint8

const (
	// valueUnread: not read (rec.value is nil); the value is the one on
	// disk, unchanged by whoever holds the slot.
	valueUnread valueState = iota
	// valueRead: rec.value is the value, read or written.
	valueRead
	// valueDropped: written, but not kept (a pipeline's or a transaction's
	// long value, see txn.note): unknown here, and changed.
	valueDropped
)

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
// the stripe remembers is not read from Pebble at all. A collection's
// payload, its header, is always read: deleting it needs its generation.
func (s *Store) load(it *item, now int64, withValue bool) error {
	if s.tx != nil {
		return s.tx.load(s, it, withValue)
	}
	return s.loadCommitted(it, now, withValue)
}

// loadCommitted is load outside a transaction: what is committed.
func (s *Store) loadCommitted(it *item, now int64, withValue bool) error {
	if m, v, ok := it.st.meta.getValue(dataKeyHash(it.dk), it.key); ok && (m.valued || (!withValue && m.typ == TypeString)) {
		it.cur = slot{present: true, live: !expiredAt(m.expiry, now), rec: record{expiry: m.expiry, fence: m.fence, typ: m.typ, raw: m.raw}}
		if withValue || m.typ != TypeString {
			it.cur.vs, it.cur.rec.value = valueRead, clone(v)
		}
		return nil
	}
	h := dataKeyHash(it.dk)
	if s.metaPerStripe > 0 && it.st.meta.isGone(h, it.key) {
		it.cur = slot{}
		return nil
	}
	if err := loadFrom(s.db, it, now, withValue); err != nil {
		return err
	}
	if !it.cur.present {
		if s.metaPerStripe > 0 {
			it.st.meta.markGone(h, it.key)
		}
		return nil
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
	vs := valueUnread
	if withValue || rec.typ != TypeString {
		vs, rec.value = valueRead, clone(rec.value)
	} else {
		rec.value = nil
	}
	_ = closer.Close()
	it.cur = slot{present: true, live: !expiredAt(rec.expiry, now), vs: vs, rec: rec}
	return nil
}

// remember records it.cur, which is on disk, in its stripe's metadata
// cache, with its value when that is known and short; when the cache is
// full, another key is forgotten to make room (see metaTable). The caller
// holds the stripe.
func (s *Store) remember(it *item) {
	m, h := &it.st.meta, dataKeyHash(it.dk)
	if !it.cur.present {
		if s.metaPerStripe > 0 {
			m.markGone(h, it.key)
		} else {
			m.del(h, it.key)
		}
		return
	}
	if s.metaPerStripe == 0 {
		return
	}
	rec := &it.cur.rec
	km, value := keyMeta{expiry: rec.expiry, fence: rec.fence, typ: rec.typ}, []byte(nil)
	switch it.cur.vs {
	case valueRead:
		if len(rec.value) <= maxCachedValue {
			km.raw, km.valued, value = rec.raw, true, rec.value
		}
	case valueUnread:
		// Unchanged: what the cache kept of the value still holds.
		if had, v, ok := m.getValue(h, it.key); ok && had.valued {
			km.raw, km.valued, value = had.raw, true, v
		}
	}
	m.put(h, it.key, km, value, s.metaPerStripe)
}

// cachedValue is key's value as the metadata cache keeps it, copied into
// buf, and its record (with that value); ok is false when the cache does
// not keep it. The caller holds the stripe.
func (st *stripe) cachedValue(h uint64, key, buf []byte) (rec record, ok bool) {
	m, v, ok := st.meta.getValue(h, key)
	if !ok || !m.valued {
		return record{}, false
	}
	return record{value: append(buf, v...), expiry: m.expiry, fence: m.fence, typ: m.typ, raw: m.raw}, true
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
