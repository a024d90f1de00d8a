package kv

// Writes: a change gathers the puts and deletes of one command into one
// Pebble batch under the stripes of its keys, and applies it.

import (
	"math/bits"

	"github.com/cockroachdb/pebble/v2"
)

// change gathers one command's writes into a batch and the counter changes
// to apply once it commits. The caller holds the stripes of every key it
// touches.
type change struct {
	db  *pebble.DB
	b   *pebble.Batch
	now int64

	writes                    int // puts and deletes asked by the command, not lazy-expiry deletes
	keys, withExpiry, expired int64
	deadlines                 int64 // added to less removed, absolute: see Store.deadlineSum

	hooked bool       // a key hook is set: record events (notify.go)
	events []keyEvent // keys expired and made, told once committed
}

func (c *change) batch() *pebble.Batch {
	if c.b == nil {
		c.b = c.db.NewBatch()
	}
	return c.b
}

// put writes r as it.key's record, keeping the expiry index in step.
func (c *change) put(it *item, r record) {
	b := c.batch()
	op := b.SetDeferred(len(it.dk), r.encodedLen())
	copy(op.Key, it.dk)
	r.encodeTo(op.Value)
	_ = op.Finish() // only fails for indexed batches
	old := it.cur
	if old.present && old.rec.typ != TypeString {
		c.stale(old.rec, &r)
	}
	if old.present && old.rec.expiry != 0 && old.rec.expiry != r.expiry {
		_ = b.Delete(expiryKey(old.rec.expiry, it.key), nil)
	}
	if r.expiry != 0 && (!old.present || old.rec.expiry != r.expiry) {
		_ = b.Set(expiryKey(r.expiry, it.key), nil, nil)
	}
	if !old.present {
		c.keys++
		c.note(KeyNew, it.key)
	}
	if old.present && !old.live {
		c.expired++
		c.note(KeyExpired, it.key)
	}
	if old.present && old.rec.expiry != 0 {
		c.withExpiry--
		c.deadlines -= old.rec.expiry
	}
	if r.expiry != 0 {
		c.withExpiry++
		c.deadlines += r.expiry
	}
	c.writes++
	it.cur = slot{present: true, live: true, vs: valueRead, rec: r}
	if len(it.st.watched) != 0 {
		touchWatched(it.st, it.key, false)
	}
}

// del deletes it.key's record and its expiry index entry.
func (c *change) del(it *item) {
	c.writes++
	c.drop(it)
}

// move is del for RENAME's source: a collection's generation is not
// stale, as the record put under the new name carries it on.
func (c *change) move(it *item) {
	c.writes++
	c.remove(it, false)
}

// drop is del for lazy expiry: it does not count as the command's write.
func (c *change) drop(it *item) { c.remove(it, true) }

// remove deletes it.key's record and its expiry index entry, and with
// stale a collection's members (see storage_reclaim.go).
func (c *change) remove(it *item, stale bool) {
	old := it.cur
	if !old.present {
		return
	}
	b := c.batch()
	_ = b.Delete(it.dk, nil)
	if stale && old.rec.typ != TypeString {
		c.stale(old.rec, nil)
	}
	if old.rec.expiry != 0 {
		_ = b.Delete(expiryKey(old.rec.expiry, it.key), nil)
		c.withExpiry--
		c.deadlines -= old.rec.expiry
	}
	c.keys--
	if !old.live {
		c.expired++
		c.note(KeyExpired, it.key)
	}
	it.cur = slot{}
	if len(it.st.watched) != 0 {
		touchWatched(it.st, it.key, !old.live)
	}
}

// apply commits c (NoSync: see storage_walsync.go) and applies its counters. The
// caller holds the stripes of every key in c. It reports whether the
// command wrote.
func (s *Store) apply(c *change) (wrote bool, err error) {
	if c.b == nil {
		return false, nil
	}
	if err := s.commitCommand(c.b); err != nil {
		return false, err
	}
	s.count(c)
	return c.writes > 0, nil
}

// applySwept is apply for the sweeper's deletes of expired keys, which
// are not counted as unsettled (storage_readsettle.go): no writer waits
// for them, and a read that saw one shows nothing a crash can take back,
// as the key it deletes is expired whether or not the delete survives.
func (s *Store) applySwept(c *change) error {
	if c.b == nil {
		return nil
	}
	if err := s.commit(c.b, pebble.NoSync); err != nil {
		return err
	}
	s.count(c)
	return nil
}

// count applies c's counter changes once its batch (or the transaction's
// batch that holds it) has committed.
func (s *Store) count(c *change) {
	s.keys.Add(c.keys)
	s.changes.Add(int64(c.writes))
	if c.withExpiry != 0 || c.deadlines != 0 {
		s.keysWithExpiry.Add(c.withExpiry)
		s.deadlineSum.Add(c.deadlines - c.withExpiry*s.deadlineBase)
	}
	if c.expired != 0 {
		s.expiredTotal.Add(c.expired)
	}
	s.markDirty()
	s.tell(c)
}

// add adds the counter changes of d to c's.
func (c *change) add(d *change) {
	c.writes += d.writes
	c.keys += d.keys
	c.withExpiry += d.withExpiry
	c.expired += d.expired
	c.deadlines += d.deadlines
	c.events = append(c.events, d.events...)
}

func (c *change) close() {
	if c.b != nil {
		_ = c.b.Close()
		c.b = nil
	}
}

// update runs fn on key's current state with key's stripe held. An expired
// record is deleted first, so fn sees it missing. What fn writes into c is
// committed before the stripe is released; then, with no stripe held, the
// caller waits for the fsync mode's durability.
func (s *Store) update(key []byte, withValue bool, fn func(c *change, it *item) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.tx != nil {
		return s.tx.update(s, [][]byte{key}, withValue, func(c *change, items []item, _ []int) error {
			return fn(c, &items[0])
		})
	}
	if err := s.refused(); err != nil {
		return err
	}
	it := s.newItem(key)
	c := change{db: s.db, now: s.nowMs(), hooked: s.hooked()}
	it.st.Lock()
	err := s.load(&it, c.now, withValue)
	if err == nil {
		if it.cur.present && !it.cur.live {
			c.drop(&it)
		}
		err = fn(&c, &it)
	}
	var wrote bool
	if err == nil {
		wrote, err = s.apply(&c)
		s.committed(&it, err)
	}
	it.st.Unlock()
	c.close()
	return s.settleCommand(wrote, err)
}

// updateMany is update for several keys. Repeated keys share one item; idx
// maps each position in keys to its item.
func (s *Store) updateMany(keys [][]byte, withValue bool, fn func(c *change, items []item, idx []int) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.tx != nil {
		return s.tx.update(s, keys, withValue, fn)
	}
	if err := s.refused(); err != nil {
		return err
	}
	items, idx, stripes := s.itemsOf(keys)
	c := change{db: s.db, now: s.nowMs(), hooked: s.hooked()}
	// Ascending order, so that multi-key commands never deadlock.
	forStripes(&stripes, func(n int) { s.stripes[n].Lock() })
	var err error
	for i := range items {
		if err = s.load(&items[i], c.now, withValue); err != nil {
			break
		}
		if items[i].cur.present && !items[i].cur.live {
			c.drop(&items[i])
		}
	}
	if err == nil {
		err = fn(&c, items, idx)
	}
	var wrote bool
	if err == nil {
		wrote, err = s.apply(&c)
		for i := range items {
			s.committed(&items[i], err)
		}
	}
	forStripes(&stripes, func(n int) { s.stripes[n].Unlock() })
	c.close()
	return s.settleCommand(wrote, err)
}

// itemsOf makes one item per distinct key of keys; idx maps each position
// in keys to its item, and stripes is the set of their stripes.
func (s *Store) itemsOf(keys [][]byte) (items []item, idx []int, stripes [numStripes / 64]uint64) {
	return s.itemsIn(nil, keys)
}

// itemScratch is where a transaction's commands make a single key's item
// and its data key (itemsIn), without an allocation each: one item, reused
// by every command, and the data keys, kept until the batch commits; and
// the values txn.note keeps for the metadata cache, as long.
type itemScratch struct {
	one  [1]item
	dks  []byte
	vals []byte
}

// oneIdx is idx for a single key; nobody writes it.
var oneIdx = []int{0}

// itemsIn is itemsOf, with a single key's item made in sc when sc is not
// nil: then items is valid until the next call.
func (s *Store) itemsIn(sc *itemScratch, keys [][]byte) (items []item, idx []int, stripes [numStripes / 64]uint64) {
	if len(keys) == 1 {
		if sc == nil {
			it, n := s.newItemAt(keys[0])
			stripes[n/64] |= 1 << (n % 64)
			return []item{it}, oneIdx, stripes
		}
		h := hashKey(keys[0])
		n := int(h % numStripes)
		from := len(sc.dks)
		sc.dks = appendDataKey(sc.dks, h, keys[0])
		sc.one[0] = item{key: keys[0], dk: sc.dks[from:len(sc.dks):len(sc.dks)], st: &s.stripes[n]}
		stripes[n/64] |= 1 << (n % 64)
		return sc.one[:], oneIdx, stripes
	}
	items = make([]item, 0, len(keys))
	idx = make([]int, len(keys))
	seen := make(map[string]int, len(keys))
	for i, k := range keys {
		if j, ok := seen[string(k)]; ok {
			idx[i] = j
			continue
		}
		seen[string(k)] = len(items)
		idx[i] = len(items)
		it, n := s.newItemAt(k)
		items = append(items, it)
		stripes[n/64] |= 1 << (n % 64)
	}
	return items, idx, stripes
}

func forStripes(set *[numStripes / 64]uint64, f func(n int)) {
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			f(w*64 + bits.TrailingZeros64(word))
		}
	}
}
