package kv

// WATCH: optimistic locking for transactions, with Redis 7's rules.

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Watch is one client's watched keys (WATCH). A Tx given it does not run
// once any of them was touched after it was watched, as Redis 7 rules:
//
//   - a write to it (by anyone, its own client included) that changed
//     something: SET, DEL of a live key, EXPIRE that took, a transaction's
//     write. A command that wrote nothing (SET NX on a live key, DEL of a
//     missing one) does not count;
//   - FLUSHALL or FLUSHDB, when the key was on disk;
//   - its expiry: a key live when watched and expired by the time of the
//     transaction, whether or not it has been deleted yet.
//
// A key that had already expired when it was watched is not touched by its
// own deletion (lazy, by the sweep, or by FLUSHALL): logically nothing
// changed. Its zero value is ready to use; it belongs to one goroutine,
// which calls Watch, Unwatch and Tx with it.
type Watch struct {
	dirty   atomic.Bool   // touched: set under the key's stripe by whoever touched it
	entries []*watchEntry // what Unwatch removes
}

// watchEntry is one watched key, kept in its stripe's watched map.
type watchEntry struct {
	w      *Watch
	key    string
	stripe int
	// expired: the key had expired when it was watched. Guarded by the
	// stripe.
	expired bool
}

// Len is how many keys w watches.
func (w *Watch) Len() int { return len(w.entries) }

// Watch adds key to w. Watching a key twice is watching it once.
func (s *Store) Watch(w *Watch, key []byte) error {
	if s.tx != nil {
		return errNestedTx
	}
	if s.closed.Load() {
		return ErrClosed
	}
	it, n := s.newItemAt(key)
	it.st.Lock()
	defer it.st.Unlock()
	for _, e := range it.st.watched[string(key)] {
		if e.w == w {
			return nil
		}
	}
	if err := s.load(&it, s.nowMs(), false); err != nil {
		return wrap("watch", err)
	}
	e := &watchEntry{w: w, key: string(key), stripe: n, expired: it.cur.present && !it.cur.live}
	if it.st.watched == nil {
		it.st.watched = map[string][]*watchEntry{}
	}
	it.st.watched[e.key] = append(it.st.watched[e.key], e)
	w.entries = append(w.entries, e)
	return nil
}

// Unwatch forgets all of w's keys and clears its touched mark: w is as new.
func (s *Store) Unwatch(w *Watch) {
	for _, e := range w.entries {
		st := &s.stripes[e.stripe]
		st.Lock()
		list := st.watched[e.key]
		for i, o := range list {
			if o == e {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(st.watched, e.key)
		} else {
			st.watched[e.key] = list
		}
		st.Unlock()
	}
	w.entries = nil
	w.dirty.Store(false)
}

// touchWatched marks the watchers of key, which a command writes, as
// touched; expiredDelete says the write deletes the key as expired. It is
// called as the write goes into the command's batch, before the commit: a
// commit that then fails, or a command that fails after writing, leaves
// the watchers touched, which can only abort an EXEC that might have run.
// The caller holds st, key's stripe.
func touchWatched(st *stripe, key []byte, expiredDelete bool) {
	for _, e := range st.watched[string(key)] {
		if expiredDelete && e.expired {
			e.expired = false // an expired key deleted: no logical change
			continue
		}
		e.w.dirty.Store(true)
	}
}

// flushWatched lists the watched keys that are on disk, as r reads them,
// for a FLUSHALL about to delete them. The caller holds every stripe.
func (s *Store) flushWatched(r pebble.Reader) ([]*watchEntry, error) {
	var hits []*watchEntry
	for i := range s.stripes {
		for key, list := range s.stripes[i].watched {
			k := []byte(key)
			_, closer, found, err := getRecord(r, dataKey(hashKey(k), k))
			if err != nil {
				return nil, err
			}
			if found {
				_ = closer.Close()
				hits = append(hits, list...)
			}
		}
	}
	return hits, nil
}

// touchFlushed marks the watchers of keys a committed FLUSHALL deleted.
// The caller holds every stripe.
func touchFlushed(hits []*watchEntry) {
	for _, e := range hits {
		if e.expired {
			e.expired = false
			continue
		}
		e.w.dirty.Store(true)
	}
}

// watchBroken reports whether a Tx given w must not run: a key of w was
// touched, or was live when watched and has expired by now. The caller
// holds every stripe.
func (s *Store) watchBroken(w *Watch, now int64) (bool, error) {
	if w.dirty.Load() {
		return true, nil
	}
	for _, e := range w.entries {
		if e.expired {
			continue
		}
		it := s.newItem([]byte(e.key))
		if err := s.load(&it, now, false); err != nil {
			return false, err
		}
		if it.cur.present && !it.cur.live {
			return true, nil
		}
	}
	return false, nil
}
