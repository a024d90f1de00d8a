package kv

// Transactions (MULTI/EXEC): several commands run as one, their writes
// reaching Pebble in one batch, with no other write in between.

import (
	"bytes"
	"errors"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2"
)

// errNestedTx is what Tx answers when called on a transaction's view.
var errNestedTx = errors.New("kv: a transaction cannot run inside another")

// txn is a transaction under way: the writes of its commands so far, in an
// indexed batch that its commands read through to Pebble, and what is to
// be done to the counters and the metadata cache once that batch has
// committed. (Watchers are touched as the commands write, as outside a
// transaction: see Watch.)
type txn struct {
	b   *pebble.Batch
	now int64 // one instant for the whole transaction

	// counts holds the counter changes since the start, or since the last
	// FLUSHALL inside the transaction (flushed): the keyspace counts from
	// 0 after it.
	counts  change
	flushed bool

	touched map[string]int // key to its index in items, once there are more than scanMax (see find)
	items   []item         // each key met, as it is after the transaction, without its value
	wrote   bool           // the batch committed something

	// pipe is the pipeline whose view this is, nil in a transaction's:
	// then b is nil until a command writes, stripes are taken as commands
	// need them, and now is each command's own (see storage_pipeline.go).
	pipe *Pipeline

	// rng, when not nil, is where the commands' random choices come from
	// (see Store.rand).
	rng *rand.Rand

	// A command's scratch (update), reused by the next: the commands run
	// one at a time and keep none of it but what note copies.
	c       change
	scratch itemScratch
}

// Tx runs fn as one transaction, for EXEC: fn calls the methods of the
// view it is given as it would call s's, each seeing what the ones before
// it wrote, and everything they wrote is committed to Pebble in one batch
// once fn returns: all of it or, if the commit fails, none. A method that
// fails inside (a value that is not a number, a fence refused) changes
// nothing and does not stop the others, as in Redis; only a failed commit
// fails Tx.
//
// Every stripe is held from the watch check to the commit, so that no
// other write falls between the transaction's commands; reads go on
// meanwhile and see the transaction whole or not at all, as the batch
// commits at one sequence number. The whole transaction runs at one
// instant: expiry inside it is judged at the time it started.
//
// With w not nil, Tx first checks w (see Watch): if one of its keys was
// touched since it was watched, or expired, fn does not run and Tx
// reports ran false. Tx leaves w as it is; the caller unwatches.
//
// fn must not call Tx, Watch or Close on its view, nor keep the view after
// it returns.
func (s *Store) Tx(w *Watch, fn func(tx *Store)) (ran bool, err error) {
	if s.tx != nil {
		return false, errNestedTx
	}
	if s.closed.Load() {
		return false, ErrClosed
	}
	ran, wrote, err := s.runTx(w, nil, fn)
	if err == nil && wrote {
		err = s.settle()
	} else if err == nil {
		// What it read, a broken watch included, may be another
		// writer's commit that is not yet in the WAL's hands.
		err = s.settleRead()
	}
	if err != nil {
		return ran, wrap("exec", err)
	}
	return ran, nil
}

// runTx is Tx with every stripe held, released however fn ends. With at
// not nil the transaction runs at at's instant and writes at's records in
// its batch, whatever fn writes (a replicated entry: see ApplyAt).
func (s *Store) runTx(w *Watch, at *applyAt, fn func(tx *Store)) (ran, wrote bool, err error) {
	for i := range s.stripes {
		s.stripes[i].Lock() // in ascending order, as updateMany takes them
	}
	defer func() {
		for i := range s.stripes {
			s.stripes[i].Unlock()
		}
	}()
	now := s.nowMs()
	if at != nil {
		now = at.nowMs
	}
	if w != nil {
		broken, err := s.watchBroken(w, now)
		if err != nil || broken {
			return false, false, err
		}
	}
	t := &txn{b: s.db.NewIndexedBatch(), now: now}
	if at != nil {
		// A replicated entry's random choices (SPOP's) are every copy's:
		// drawn from a source seeded by the entry.
		t.rng = rand.New(rand.NewPCG(at.index, uint64(at.nowMs)))
	}
	defer t.b.Close()
	fn(&Store{keyspace: s.keyspace, tx: t})
	if at != nil {
		if err := at.record(t.b); err != nil {
			return true, false, err
		}
	}
	err = t.commit(s)
	return true, t.wrote, err
}

// commit commits t's batch, if it holds anything, and then applies its
// counters and brings the metadata cache and the watchers in step. The
// caller holds every stripe.
func (t *txn) commit(s *Store) error {
	if t.b.Empty() {
		return nil
	}
	err := s.commitCommand(t.b)
	if t.flushed {
		// After FLUSHALL (or a failed commit of one: the disk is in
		// doubt) the cache holds nothing, as after FlushAll.
		for i := range s.stripes {
			s.stripes[i].meta.reset()
		}
	} else {
		for i := range t.items {
			s.committed(&t.items[i], err)
		}
	}
	if err != nil {
		return err
	}
	t.wrote = true
	if t.flushed {
		s.keys.Store(0)
		s.keysWithExpiry.Store(0)
		s.deadlineSum.Store(0)
	}
	s.count(&t.counts)
	return nil
}

// update is Store.update inside a transaction: the stripes are held
// already, keys are read through the transaction's batch, and what fn
// writes goes into that batch instead of Pebble. A command that fails
// leaves the batch as it was.
func (t *txn) update(s *Store, keys [][]byte, withValue bool, fn func(c *change, items []item, idx []int) error) error {
	if err := s.refused(); err != nil {
		return err
	}
	items, idx, stripes := s.itemsIn(&t.scratch, keys)
	if t.pipe != nil {
		if err := t.pipe.acquire(&stripes); err != nil {
			return err
		}
		t.now = s.now().UnixMilli()
	}
	c := &t.c
	*c = change{db: s.db, now: t.now, hooked: s.hooked()}
	defer c.close()
	for i := range items {
		if err := t.load(s, &items[i], withValue); err != nil {
			return err
		}
		if items[i].cur.present && !items[i].cur.live {
			c.drop(&items[i])
		}
	}
	if err := fn(c, items, idx); err != nil {
		return err
	}
	if c.b == nil {
		return nil
	}
	if t.b == nil {
		t.b = s.db.NewIndexedBatch()
	}
	if err := t.b.Apply(c.b, nil); err != nil {
		return err
	}
	t.counts.add(c)
	for i := range items {
		t.note(&items[i])
	}
	return nil
}

// load is Store.load inside a transaction or a pipeline. A key none of its
// commands wrote is read as outside, through the metadata cache: its stripe
// is held (a transaction holds every one, a pipeline the ones it took), so
// the cache is true of it. A key a command wrote is read from what that
// command left, or from the batch when its value is wanted and was not
// kept. After a FLUSHALL in the transaction every read goes to the batch,
// whose range deletion the cache knows nothing of.
func (t *txn) load(s *Store, it *item, withValue bool) error {
	if t.flushed {
		return loadFrom(t.b, it, t.now, withValue)
	}
	j, touched := t.find(it.key)
	switch {
	case !touched:
		return s.loadCommitted(it, t.now, withValue)
	case withValue:
		return loadFrom(t.b, it, t.now, withValue)
	}
	it.cur = t.items[j].cur
	it.cur.live = it.cur.present && !expiredAt(it.cur.rec.expiry, t.now)
	return nil
}

// note remembers it, met by a command of the transaction that wrote, for
// the commit: the last state noted of a key is its state after the
// transaction. A value short enough for the metadata cache is copied (the
// command's own is the client's buffer), to be cached at the commit;
// a longer one is dropped.
func (t *txn) note(it *item) {
	kept := *it
	if v := kept.cur.rec.value; kept.cur.vs == valueRead && len(v) <= maxCachedValue {
		from := len(t.scratch.vals)
		t.scratch.vals = append(t.scratch.vals, v...)
		kept.cur.rec.value = t.scratch.vals[from:len(t.scratch.vals):len(t.scratch.vals)]
	} else {
		kept.cur.rec.value = nil
		if kept.cur.vs == valueRead {
			kept.cur.vs = valueDropped
		}
	}
	if j, ok := t.find(it.key); ok {
		t.items[j] = kept
		return
	}
	t.items = append(t.items, kept)
	switch n := len(t.items); {
	case n == scanMax+1:
		if t.touched == nil {
			t.touched = make(map[string]int, 4*scanMax)
		}
		for j := range t.items {
			t.touched[string(t.items[j].key)] = j
		}
	case n > scanMax+1:
		t.touched[string(it.key)] = n - 1
	}
}

// scanMax is how many keys a transaction notes before it indexes them in
// touched: up to that many (a pipeline's usually are) are found sooner by
// comparing them than by hashing, and noted without an allocation.
const scanMax = 16

// find returns the index in items of key, if noted.
func (t *txn) find(key []byte) (int, bool) {
	if len(t.items) > scanMax {
		j, ok := t.touched[string(key)]
		return j, ok
	}
	for j := range t.items {
		if bytes.Equal(t.items[j].key, key) {
			return j, true
		}
	}
	return 0, false
}

// flushAll is FLUSHALL inside a transaction.
func (t *txn) flushAll(s *Store) error {
	if err := s.refused(); err != nil {
		return err
	}
	hits, err := s.flushWatched(t.b)
	if err != nil {
		return err
	}
	if err := t.b.DeleteRange(userSpanStart, userSpanEnd, nil); err != nil {
		return err
	}
	touchFlushed(hits)
	t.flushed = true
	t.items, t.touched = nil, nil
	t.counts = change{expired: t.counts.expired}
	return nil
}

// dbSize is DBSIZE inside a transaction.
func (t *txn) dbSize(s *Store) int64 {
	if t.flushed {
		return t.counts.keys
	}
	return s.keys.Load() + t.counts.keys
}

// reader is where s's reads look: Pebble, or inside a transaction its
// batch, read through to Pebble.
func (s *Store) reader() pebble.Reader {
	if s.tx != nil && s.tx.b != nil {
		return s.tx.b
	}
	return s.db
}
