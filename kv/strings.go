package kv

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/tenure-db/tenure/internal/redistext"
)

// ExpiryMode says what a write does to a key's TTL.
type ExpiryMode int

const (
	// ExpiryNone: for Set, the key has no TTL afterwards (a plain SET clears
	// it). For GetEx, the TTL is left as is (GETEX without options).
	ExpiryNone ExpiryMode = iota
	// ExpiryKeep keeps the TTL the key has (SET … KEEPTTL); for GetEx the same
	// as ExpiryNone.
	ExpiryKeep
	// ExpiryAt sets the deadline to Expiry.At (EX, PX, EXAT, PXAT, converted
	// by the caller). A deadline at or before now deletes the key at once.
	ExpiryAt
	// ExpiryPersist removes the TTL (GETEX PERSIST); for Set the same as
	// ExpiryNone.
	ExpiryPersist
)

// Expiry is a TTL change.
type Expiry struct {
	Mode ExpiryMode
	At   int64 // unix ms, for ExpiryAt
}

// SetOptions are SET's options.
type SetOptions struct {
	NX, XX bool // write only if the key is missing (NX) or exists (XX)
	Get    bool // return the old value in SetResult
	Expiry Expiry
	// Fence, when not 0, is SET … FENCE: refuse with ErrFenced, writing
	// nothing, when the key remembers a fence larger than Fence; otherwise
	// write and remember Fence (LOCK-12). A Set without a fence keeps the
	// fence the key remembers.
	Fence uint64
	// Cond is SET … IFEQ|IFNE|IFDEQ|IFDNE: write only when it holds on the
	// key's current value, checked in the same update as the write. On a
	// key of another type it is ErrWrongType.
	Cond Condition
}

// SetResult is what Set did.
type SetResult struct {
	Written   bool   // the write happened (false: NX, XX or Cond said no)
	Old       []byte // the old value, with SetOptions.Get and OldExists
	OldExists bool   // with SetOptions.Get: the key existed
}

// Set is SET. With Get, the old value is returned whether or not the write
// happened (Redis 7 allows NX with GET). With both NX and XX nothing is ever
// written; resp rejects that combination before.
func (s *Store) Set(key, value []byte, o SetOptions) (SetResult, error) {
	var res SetResult
	err := s.update(key, o.Get || o.Cond.Kind != IfNone, func(c *change, it *item) error {
		cur := it.cur
		if o.Fence != 0 && cur.live && cur.rec.fence > o.Fence {
			return ErrFenced // LOCK-12: checked before NX/XX, so a stale holder learns it
		}
		if o.Get || o.Cond.Kind != IfNone {
			if err := cur.is(TypeString); err != nil {
				return err // SET … GET and SET … IF* read a string, as GETSET does; a plain SET overwrites any type
			}
		}
		if o.Get && cur.live {
			res.Old, res.OldExists = cur.rec.value, true
		}
		if (o.NX && cur.live) || (o.XX && !cur.live) || !o.Cond.holds(cur.live, cur.rec.value) {
			return nil
		}
		res.Written = true
		r := record{value: value}
		if cur.live {
			r.fence = cur.rec.fence
		}
		r.fence = max(r.fence, o.Fence)
		switch o.Expiry.Mode {
		case ExpiryKeep:
			if cur.live {
				r.expiry = cur.rec.expiry
			}
		case ExpiryAt:
			if o.Expiry.At <= c.now {
				c.del(it)
				return nil
			}
			r.expiry = o.Expiry.At
		}
		c.put(it, r)
		return nil
	})
	if err != nil {
		return SetResult{}, wrap("set", err)
	}
	return res, nil
}

// Get is GET. ok is false when the key is missing; a present empty string is
// an empty, non-nil slice.
func (s *Store) Get(key []byte) (value []byte, ok bool, err error) {
	ok, err = s.view(key, TypeString, func(rec record) { value = clone(rec.value) })
	if err != nil {
		return nil, false, wrap("get", err)
	}
	return value, ok, nil
}

// GetFunc is Get without the copy: fn is called with the value, which is
// Pebble's memory (or the read's copy of the cached value), valid only until fn returns, and must not be changed.
// found is false, and fn not called, for a missing or expired key.
func (s *Store) GetFunc(key []byte, fn func(value []byte)) (found bool, err error) {
	found, err = s.view(key, TypeString, func(rec record) { fn(rec.value) })
	if err != nil {
		return false, wrap("get", err)
	}
	return found, nil
}

// dropExpired deletes key if it has expired (lazy expiry). On a disk that
// refuses writes the key stays, and the read that found it expired still
// answers: reads go on while writes fail.
func (s *Store) dropExpired(key []byte) error {
	if s.replica && s.tx == nil {
		// A read on a replica changes nothing: its clock is not the log's,
		// and an entry proposed before the read, not yet applied, may be
		// judged at an instant when the key still lived (see replica.go).
		return nil
	}
	err := s.update(key, false, func(*change, *item) error { return nil })
	if errors.Is(err, ErrDiskFailed) {
		return nil
	}
	return wrap("expire", err)
}

// GetDel is GETDEL.
func (s *Store) GetDel(key []byte) ([]byte, bool, error) {
	var v []byte
	var ok bool
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		if it.cur.live {
			v, ok = it.cur.rec.value, true
			c.del(it)
		}
		return nil
	})
	if err != nil {
		return nil, false, wrap("getdel", err)
	}
	return v, ok, nil
}

// GetEx is GETEX: ExpiryAt sets the deadline (deleting the key when it is
// not after now, returning the value all the same), ExpiryPersist removes
// the TTL, ExpiryNone and ExpiryKeep leave it as is.
func (s *Store) GetEx(key []byte, e Expiry) ([]byte, bool, error) {
	var v []byte
	var ok bool
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		if !it.cur.live {
			return nil
		}
		v, ok = it.cur.rec.value, true
		r := it.cur.rec
		switch e.Mode {
		case ExpiryAt:
			if e.At <= c.now {
				c.del(it)
				return nil
			}
			r.expiry = e.At
		case ExpiryPersist:
			r.expiry = 0
		default:
			return nil
		}
		if r.expiry != it.cur.rec.expiry {
			c.put(it, r)
		}
		return nil
	})
	if err != nil {
		return nil, false, wrap("getex", err)
	}
	return v, ok, nil
}

// MGet is MGET: one value per key, nil for a missing key. The values are read
// from one snapshot, so an MSet is seen whole or not at all.
func (s *Store) MGet(keys [][]byte) ([][]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.tx != nil && s.tx.pipe != nil && s.tx.b != nil && len(keys) > 1 {
		// Read from one snapshot, and so first commit what the
		// pipeline wrote so far.
		s.tx.pipe.commitPart()
	}
	r := s.reader()
	if (s.tx == nil || s.tx.pipe != nil) && len(keys) > 1 {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		r = snap
	}
	now := s.nowMs()
	out := make([][]byte, len(keys))
	var expired [][]byte
	for i, k := range keys {
		rec, closer, found, err := getRecord(r, dataKey(hashKey(k), k))
		if err != nil {
			return nil, wrap("mget", err)
		}
		if !found {
			s.lookups.count(false)
			continue
		}
		switch {
		case expiredAt(rec.expiry, now):
			expired = append(expired, k)
		case rec.is(TypeString) == nil: // MGET answers nil for a key of another type, as Redis does
			out[i] = clone(rec.value)
		}
		s.lookups.count(!expiredAt(rec.expiry, now))
		_ = closer.Close()
	}
	if err := s.settleRead(); err != nil {
		return nil, wrap("mget", err)
	}
	for _, k := range expired {
		if err := s.dropExpired(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MSet is MSET: pairs of key and value, written atomically. Like SET it
// clears TTLs and keeps the keys' fences.
func (s *Store) MSet(pairs [][]byte) error {
	keys, err := pairKeys(pairs)
	if err != nil {
		return wrap("mset", err)
	}
	err = s.updateMany(keys, false, func(c *change, items []item, idx []int) error {
		for i := 0; i < len(pairs); i += 2 {
			it := &items[idx[i/2]]
			c.put(it, record{value: pairs[i+1], fence: it.cur.rec.fence})
		}
		return nil
	})
	return wrap("mset", err)
}

// MSetNX is MSETNX: it writes all pairs if none of the keys exists, else
// nothing.
func (s *Store) MSetNX(pairs [][]byte) (bool, error) {
	keys, err := pairKeys(pairs)
	if err != nil {
		return false, wrap("msetnx", err)
	}
	var written bool
	err = s.updateMany(keys, false, func(c *change, items []item, idx []int) error {
		for i := range items {
			if items[i].cur.live {
				return nil
			}
		}
		for i := 0; i < len(pairs); i += 2 {
			c.put(&items[idx[i/2]], record{value: pairs[i+1]})
		}
		written = true
		return nil
	})
	if err != nil {
		return false, wrap("msetnx", err)
	}
	return written, nil
}

func pairKeys(pairs [][]byte) ([][]byte, error) {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return nil, fmt.Errorf("kv: want key-value pairs, got %d arguments", len(pairs))
	}
	keys := make([][]byte, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		keys = append(keys, pairs[i])
	}
	return keys, nil
}

// IncrBy is INCRBY (and INCR, DECR, DECRBY): a missing key counts as 0; the
// TTL and fence stay.
func (s *Store) IncrBy(key []byte, delta int64) (int64, error) {
	var n int64
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		var old int64
		if it.cur.live {
			v, ok := redistext.ParseInt(it.cur.rec.value)
			if !ok {
				return ErrNotInteger
			}
			old = v
		}
		if (delta < 0 && old < 0 && delta < math.MinInt64-old) ||
			(delta > 0 && old > 0 && delta > math.MaxInt64-old) {
			return ErrOverflow
		}
		n = old + delta
		r := it.cur.rec
		r.value = strconv.AppendInt(nil, n, 10)
		r.raw = false // a new integer, as Redis makes one
		c.put(it, r)
		return nil
	})
	if err != nil {
		return 0, wrap("incrby", err)
	}
	return n, nil
}

// IncrByFloat is INCRBYFLOAT. The sum is computed in float64 (Redis uses long
// double, so the last digits of long fractions can differ) and stored and
// returned in plain decimal, the shortest that reads back the same.
func (s *Store) IncrByFloat(key []byte, delta float64) ([]byte, error) {
	var out []byte
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		var old float64
		if it.cur.live {
			v, ok := redistext.ParseFloat(it.cur.rec.value)
			if !ok {
				return ErrNotFloat
			}
			old = v
		}
		n := old + delta
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return ErrNaN
		}
		out = redistext.FormatFloat(n)
		r := it.cur.rec
		r.value = out
		r.raw = false // a new string, as Redis makes one
		c.put(it, r)
		return nil
	})
	if err != nil {
		return nil, wrap("incrbyfloat", err)
	}
	return out, nil
}

// Append is APPEND: it returns the new length. The TTL and fence stay.
// Pebble has no append in place: each call rewrites the whole string.
func (s *Store) Append(key, value []byte) (int64, error) {
	var n int64
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		r := it.cur.rec
		if !it.cur.live {
			r = record{}
		}
		if int64(len(value)) > s.MaxValueLen()-int64(len(r.value)) {
			return ErrTooLarge
		}
		r.raw = it.cur.live // Redis encodes a new key as SET does
		r.value = append(r.value, value...)
		n = int64(len(r.value))
		c.put(it, r)
		return nil
	})
	if err != nil {
		return 0, wrap("append", err)
	}
	return n, nil
}

// StrLen is STRLEN: 0 for a missing key.
func (s *Store) StrLen(key []byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	rec, closer, found, err := getRecord(s.reader(), dataKey(hashKey(key), key))
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		if found {
			_ = closer.Close()
		}
		return 0, wrap("strlen", err)
	}
	if !found {
		s.lookups.count(false)
		return 0, nil
	}
	n, typeErr := int64(len(rec.value)), rec.is(TypeString)
	_ = closer.Close()
	if s.expiredNow(rec.expiry) {
		s.lookups.count(false)
		return 0, s.dropExpired(key)
	}
	s.lookups.count(true)
	if typeErr != nil {
		return 0, typeErr
	}
	return n, nil
}

// GetRange is GETRANGE, with Redis 7's index rules: negative indexes count
// from the end, both are clamped to the string, and a missing key or an
// empty range gives an empty (non-nil) string.
func (s *Store) GetRange(key []byte, start, end int64) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	rec, closer, found, err := getRecord(s.reader(), dataKey(hashKey(key), key))
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		if found {
			_ = closer.Close()
		}
		return nil, wrap("getrange", err)
	}
	if !found {
		s.lookups.count(false)
		return []byte{}, nil
	}
	defer closer.Close()
	if s.expiredNow(rec.expiry) {
		s.lookups.count(false)
		return []byte{}, s.dropExpired(key)
	}
	s.lookups.count(true)
	if err := rec.is(TypeString); err != nil {
		return nil, err
	}
	v := rec.value
	strlen := int64(len(v))
	if start < 0 && end < 0 && start > end {
		return []byte{}, nil
	}
	if start < 0 {
		start += strlen
	}
	if end < 0 {
		end += strlen
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= strlen {
		end = strlen - 1
	}
	if start > end || strlen == 0 {
		return []byte{}, nil
	}
	return clone(v[start : end+1]), nil
}

// SetRange is SETRANGE: it overwrites value at offset, zero-padding the
// string as needed, and returns the new length. An empty value writes
// nothing (and creates no key). The TTL and fence stay.
func (s *Store) SetRange(key []byte, offset int64, value []byte) (int64, error) {
	if offset < 0 {
		return 0, ErrOffsetOutOfRange
	}
	var n int64
	err := s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		r := it.cur.rec
		if !it.cur.live {
			r = record{}
		}
		if len(value) == 0 {
			n = int64(len(r.value))
			return nil
		}
		if int64(len(value)) > s.MaxValueLen()-offset {
			return ErrTooLarge
		}
		end := int(offset) + len(value)
		if end > len(r.value) {
			grown := make([]byte, end)
			copy(grown, r.value)
			r.value = grown
		}
		copy(r.value[offset:], value)
		r.raw = true
		n = int64(len(r.value))
		c.put(it, r)
		return nil
	})
	if err != nil {
		return 0, wrap("setrange", err)
	}
	return n, nil
}

// wrap adds the command's name to storage errors. Sentinel errors stay bare,
// so that resp can use their text as the reply.
func wrap(op string, err error) error {
	switch err {
	case nil, ErrNotInteger, ErrNotFloat, ErrOverflow, ErrNaN, ErrNoSuchKey,
		ErrTooLarge, ErrFenced, ErrOffsetOutOfRange, ErrLCSTooLarge, ErrWrongType, ErrClosed,
		ErrHashNotInteger, ErrHashNotFloat, ErrScoreNaN, ErrIndexOutOfRange:
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
