package kv

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Del is DEL (and UNLINK): it deletes the keys and returns how many existed.
// A key named twice counts once.
func (s *Store) Del(keys [][]byte) (int64, error) {
	var n int64
	err := s.updateMany(keys, false, func(c *change, items []item, _ []int) error {
		for i := range items {
			if items[i].cur.live {
				n++
				c.del(&items[i])
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap("del", err)
	}
	return n, nil
}

// Exists is EXISTS: how many of keys exist, a key named twice counting twice.
func (s *Store) Exists(keys [][]byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	now := s.nowMs()
	var n int64
	for _, k := range keys {
		live, _, err := s.peek(k, now)
		if err != nil {
			return 0, wrap("exists", err)
		}
		if live {
			n++
		}
	}
	return n, nil
}

// peek reports whether key exists, and its type, dropping it if it has
// expired.
func (s *Store) peek(key []byte, now int64) (bool, Type, error) {
	expiry, typ, found, err := s.expiryOf(key)
	if err != nil {
		return false, 0, err
	}
	live := found && !expiredAt(expiry, now)
	s.lookups.count(live)
	if found && !live {
		return false, 0, s.dropExpired(key)
	}
	return live, typ, nil
}

// expiryOf reads key's deadline and type, whether live or not.
func (s *Store) expiryOf(key []byte) (expiry int64, typ Type, found bool, err error) {
	rec, closer, found, err := getRecord(s.reader(), dataKey(hashKey(key), key))
	if err == nil {
		err = s.settleRead()
	}
	if err != nil || !found {
		if found {
			_ = closer.Close()
		}
		return 0, 0, false, err
	}
	_ = closer.Close()
	return rec.expiry, rec.typ, true, nil
}

// ExpireCond is the condition options of EXPIRE and its kin, as bits:
// Redis takes XX together with GT or LT, and then both must hold.
type ExpireCond int

const (
	CondNone ExpireCond = 0      // always set
	CondNX   ExpireCond = 1 << 0 // only if the key has no TTL
	CondXX   ExpireCond = 1 << 1 // only if the key has a TTL
	CondGT   ExpireCond = 1 << 2 // only if the new deadline is later; no TTL counts as infinite, so never
	CondLT   ExpireCond = 1 << 3 // only if the new deadline is earlier; no TTL counts as infinite, so always
)

// ExpireAt is EXPIREAT/PEXPIREAT (and EXPIRE/PEXPIRE, converted by the
// caller): it sets key's deadline to atMs and reports whether it did. The
// condition is checked first; then a deadline at or before now deletes the
// key, which also reports true. The fence stays.
func (s *Store) ExpireAt(key []byte, atMs int64, cond ExpireCond) (bool, error) {
	var done bool
	err := s.update(key, true, func(c *change, it *item) error {
		if !it.cur.live {
			return nil
		}
		cur := it.cur.rec.expiry
		switch {
		case cond&CondNX != 0 && cur != 0,
			cond&CondXX != 0 && cur == 0,
			cond&CondGT != 0 && (cur == 0 || atMs <= cur),
			cond&CondLT != 0 && cur != 0 && atMs >= cur:
			return nil
		}
		done = true
		if atMs <= c.now {
			c.del(it)
			return nil
		}
		r := it.cur.rec
		r.expiry = atMs
		c.put(it, r)
		return nil
	})
	if err != nil {
		return false, wrap("expire", err)
	}
	return done, nil
}

// TTL returns the milliseconds key has left: -2 if it is missing, -1 if it
// has no TTL.
func (s *Store) TTL(key []byte) (int64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	expiry, _, found, err := s.expiryOf(key)
	if err != nil {
		return 0, wrap("ttl", err)
	}
	now := s.nowMs()
	s.lookups.count(found && !expiredAt(expiry, now))
	if !found {
		return -2, nil
	}
	switch {
	case expiry == 0:
		return -1, nil
	case expiredAt(expiry, now):
		return -2, s.dropExpired(key)
	}
	return expiry - now, nil
}

// Persist is PERSIST: it removes key's TTL and reports whether it had one.
func (s *Store) Persist(key []byte) (bool, error) {
	var done bool
	err := s.update(key, true, func(c *change, it *item) error {
		if !it.cur.live || it.cur.rec.expiry == 0 {
			return nil
		}
		r := it.cur.rec
		r.expiry = 0
		c.put(it, r)
		done = true
		return nil
	})
	if err != nil {
		return false, wrap("persist", err)
	}
	return done, nil
}

// Type is TYPE: the key's type's name (see Type.String), or "none" for a
// missing key.
func (s *Store) Type(key []byte) (string, error) {
	if s.closed.Load() {
		return "", ErrClosed
	}
	live, typ, err := s.peek(key, s.nowMs())
	if err != nil {
		return "", wrap("type", err)
	}
	if live {
		return typ.String(), nil
	}
	return "none", nil
}

// Keys is KEYS: every live key that matches the glob pattern (see Match), in
// no particular order. It walks the whole keyspace unless the pattern has no
// special character, in which case it is a single lookup.
func (s *Store) Keys(pattern []byte) ([][]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if !bytes.ContainsAny(pattern, `*?[\`) {
		live, _, err := s.peek(pattern, s.nowMs())
		if err == nil {
			err = s.settleRead()
		}
		if err != nil || !live {
			return [][]byte{}, wrap("keys", err)
		}
		return [][]byte{clone(pattern)}, nil
	}
	all := len(pattern) == 1 && pattern[0] == '*'
	keys := [][]byte{}
	err := s.walk(0, -1, func(key []byte, _ Type) {
		if all || redistext.Match(pattern, key) {
			keys = append(keys, clone(key))
		}
	})
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		return nil, wrap("keys", err)
	}
	return keys, nil
}

// Scan is SCAN: it returns live keys from the walk position cursor (0 to
// start), and the cursor to continue from, 0 when the walk is done. A key
// present for the whole walk is returned at least once, and exactly once if
// nothing is written during the walk. count (default 10 when <= 0) is how
// many records to examine, a hint: whole groups of keys with equal hashes
// are returned together. match, when not nil, filters by glob (see Match);
// typ, when not "", filters by TYPE name.
func (s *Store) Scan(cursor uint64, match []byte, count int, typ string) (uint64, [][]byte, error) {
	if s.closed.Load() {
		return 0, nil, ErrClosed
	}
	want := typeAny
	if typ != "" {
		t, ok := ParseType(typ)
		if !ok {
			return 0, [][]byte{}, nil // no key is of a type that is none
		}
		want = t
	}
	if count <= 0 {
		count = 10
	}
	all := match == nil || (len(match) == 1 && match[0] == '*')
	keys := [][]byte{}
	var next uint64
	err := s.walkFrom(cursor, count, &next, func(key []byte, t Type) {
		if (want == typeAny || t == want) && (all || redistext.Match(match, key)) {
			keys = append(keys, clone(key))
		}
	})
	if err == nil {
		err = s.settleRead()
	}
	if err != nil {
		return 0, nil, wrap("scan", err)
	}
	return next, keys, nil
}

// walk calls f with every live key from hash cursor on; see walkFrom.
func (s *Store) walk(cursor uint64, count int, f func(key []byte, t Type)) error {
	var next uint64
	return s.walkFrom(cursor, count, &next, f)
}

// walkFrom calls f with each live key whose hash is at least cursor, and
// its type, in hash order, and stops once it has examined count records
// (count < 0: no limit) and the next record's hash differs from the last
// one's, setting *next to that hash; *next is 0 when the keyspace is
// exhausted. key aliases Pebble's memory for the duration of the call.
func (s *Store) walkFrom(cursor uint64, count int, next *uint64, f func(key []byte, t Type)) error {
	iter, err := s.reader().NewIter(&pebble.IterOptions{
		LowerBound: hashPrefix(cursor),
		UpperBound: []byte{nsExpiry},
	})
	if err != nil {
		return err
	}
	now := s.nowMs()
	*next = 0
	seen := 0
	var last uint64
	for valid := iter.First(); valid; valid = iter.Next() {
		k := iter.Key()
		if len(k) < prefixLen {
			continue
		}
		h := binary.BigEndian.Uint64(k[1:prefixLen])
		if count >= 0 && seen >= count && h != last {
			*next = h // > last >= cursor, so never 0: 0 means done
			break
		}
		seen++
		last = h
		raw, err := iter.ValueAndErr()
		if err != nil {
			return closeIter(iter, err)
		}
		rec, err := decodeRecord(raw)
		if err != nil {
			return closeIter(iter, err)
		}
		if expiredAt(rec.expiry, now) {
			continue // the sweep deletes it
		}
		f(k[prefixLen:], rec.typ)
	}
	return closeIter(iter, iter.Error())
}

func closeIter(iter *pebble.Iterator, err error) error {
	if cerr := iter.Close(); err == nil {
		err = cerr
	}
	return err
}

// Rename is RENAME: dst takes src's value, TTL and fence, replacing whatever
// dst was; src is gone. ErrNoSuchKey if src is missing. Renaming a key to
// itself does nothing.
func (s *Store) Rename(src, dst []byte) error {
	_, err := s.rename(src, dst, false)
	return wrap("rename", err)
}

// RenameNX is RENAMENX: Rename only if dst is missing; it reports whether it
// renamed. Renaming a key to itself reports false.
func (s *Store) RenameNX(src, dst []byte) (bool, error) {
	done, err := s.rename(src, dst, true)
	return done, wrap("renamenx", err)
}

func (s *Store) rename(src, dst []byte, nx bool) (bool, error) {
	var done bool
	err := s.updateMany([][]byte{src, dst}, true, func(c *change, items []item, idx []int) error {
		from, to := &items[idx[0]], &items[idx[1]]
		if !from.cur.live {
			return ErrNoSuchKey
		}
		if from == to || (nx && to.cur.live) {
			return nil
		}
		r := from.cur.rec
		c.move(from) // a collection's members stay where they are: its generation goes with it
		c.put(to, r)
		done = true
		return nil
	})
	return done, err
}

// Fence is the fence key remembers (SPEC §3), 0 when it remembers none or
// is missing.
func (s *Store) Fence(key []byte) (uint64, error) {
	var f uint64
	_, err := s.view(key, typeAny, func(rec record) { f = rec.fence })
	if err != nil {
		return 0, wrap("fence", err)
	}
	return f, nil
}

// RaiseFence makes key remember fence if it remembers a smaller one,
// writing nothing else; a missing key is left alone. RESTORE … REPLACE
// gives the value it writes the fence of the one it replaced, as COPY …
// REPLACE does: a replacement is no DEL, which alone forgets a fence.
func (s *Store) RaiseFence(key []byte, fence uint64) error {
	err := s.update(key, true, func(c *change, it *item) error {
		if !it.cur.live || it.cur.rec.fence >= fence {
			return nil
		}
		r := it.cur.rec
		r.fence = fence
		c.put(it, r)
		return nil
	})
	return wrap("fence", err)
}

// Deadline is EXPIRETIME/PEXPIRETIME: key's deadline in unix ms, -1 if it
// has no TTL, -2 if it is missing.
func (s *Store) Deadline(key []byte) (int64, error) {
	at := int64(-2)
	_, err := s.view(key, typeAny, func(rec record) {
		at = rec.expiry
		if at == 0 {
			at = -1
		}
	})
	if err != nil {
		return 0, wrap("expiretime", err)
	}
	return at, nil
}

// Object is what OBJECT tells of a key, in Redis's terms: how Redis would
// hold a string with the same bytes and history.
type Object struct {
	// Encoding is "int" for an integer Redis would keep as a long, "embstr"
	// for a short string, "raw" for a longer one or one changed in place
	// (APPEND, SETRANGE, SETBIT, BITOP).
	Encoding string
	// Shared: the value is one of the integers 0 to 9999, which Redis keeps
	// once and shares (under tenure's only policy, noeviction), so that its
	// OBJECT REFCOUNT is INT_MAX.
	Shared bool
}

// Object is OBJECT ENCODING and REFCOUNT; ok is false for a missing key.
func (s *Store) Object(key []byte) (obj Object, ok bool, err error) {
	ok, err = s.view(key, typeAny, func(rec record) {
		if rec.typ != TypeString {
			obj.Encoding = collectionEncoders[rec.typ](headerOf(rec))
			return
		}
		n, isInt := redistext.ParseInt(rec.value)
		switch {
		case rec.raw:
			obj.Encoding = "raw"
		case isInt && len(rec.value) <= 20:
			obj.Encoding = "int"
			obj.Shared = n >= 0 && n < sharedIntegers
		case len(rec.value) <= embstrMax:
			obj.Encoding = "embstr"
		default:
			obj.Encoding = "raw"
		}
	})
	if err != nil {
		return Object{}, false, wrap("object", err)
	}
	return obj, ok, nil
}

// collectionEncoders name a collection's encoding, one per type: see
// collection.go. A type without its commands yet answers Redis's name for
// a large one.
var collectionEncoders = [numTypes]func(h header) string{
	TypeString: func(header) string { return "" },
	TypeHash:   func(h header) string { return bigOr(h, "listpack", "hashtable") },
	TypeSet:    func(h header) string { return bigOr(h, "intset", "hashtable") },
	TypeZSet:   func(h header) string { return bigOr(h, "listpack", "skiplist") },
	TypeList:   func(header) string { return "quicklist" },
}

// bigOr is small's name, or big's once the collection grew (extBig).
func bigOr(h header, small, big string) string {
	if h.isBig() {
		return big
	}
	return small
}

// sharedIntegers is how many small integers Redis shares (OBJ_SHARED_INTEGERS).
const sharedIntegers = 10000

// embstrMax is the longest string Redis embeds in its object header
// (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
const embstrMax = 44

// RandomKey is RANDOMKEY: a live key chosen at random, ok false when there
// is none. It starts the walk at a random hash and takes the first live
// key from there, wrapping around once; so a key's chance is in proportion
// to the gap of hashes before it, which for a 64-bit hash is close to even.
func (s *Store) RandomKey() (key []byte, ok bool, err error) {
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	from := rand.Uint64()
	take := func(k []byte) bool {
		key, ok = clone(k), true
		return false
	}
	if err := s.walkUntil(from, take); err != nil {
		return nil, false, wrap("randomkey", err)
	}
	if !ok && from != 0 {
		if err := s.walkUntil(0, take); err != nil {
			return nil, false, wrap("randomkey", err)
		}
	}
	if err := s.settleRead(); err != nil {
		return nil, false, wrap("randomkey", err)
	}
	return key, ok, nil
}

// walkUntil calls f with each live key from hash cursor on, in hash order,
// until f returns false.
func (s *Store) walkUntil(cursor uint64, f func(key []byte) bool) error {
	iter, err := s.reader().NewIter(&pebble.IterOptions{LowerBound: hashPrefix(cursor), UpperBound: []byte{nsExpiry}})
	if err != nil {
		return err
	}
	now := s.nowMs()
	for valid := iter.First(); valid; valid = iter.Next() {
		k := iter.Key()
		if len(k) < prefixLen {
			continue
		}
		raw, err := iter.ValueAndErr()
		if err != nil {
			return closeIter(iter, err)
		}
		rec, err := decodeRecord(raw)
		if err != nil {
			return closeIter(iter, err)
		}
		if !expiredAt(rec.expiry, now) && !f(k[prefixLen:]) {
			break
		}
	}
	return closeIter(iter, iter.Error())
}

// Copy is COPY src dst [REPLACE]: dst takes src's value and TTL, and src
// stays. Without replace an existing dst is left alone and Copy reports
// false; a missing src reports false. The caller refuses src == dst
// (Redis's "source and destination objects are the same").
//
// The fence dst remembers is the larger of src's and the one dst had. The
// key remembers the largest fence that wrote it (SPEC §3): the copied bytes
// were written under src's fence, and a dst that is replaced was written
// under its own, and COPY is no DEL, which alone forgets a fence. So a
// holder with an older fence than either is refused on dst afterwards
// (LOCK-12), and a copy never lowers what a key remembers.
func (s *Store) Copy(src, dst []byte, replace bool) (bool, error) {
	var done bool
	err := s.updateMany([][]byte{src, dst}, true, func(c *change, items []item, idx []int) error {
		from, to := &items[idx[0]], &items[idx[1]]
		if !from.cur.live || (to.cur.live && !replace) {
			return nil
		}
		r := from.cur.rec
		r.value = clone(r.value)
		if to.cur.live {
			r.fence = max(r.fence, to.cur.rec.fence)
		}
		if r.typ != TypeString {
			var err error
			if r, err = s.copyMembers(c, r); err != nil {
				return err
			}
		}
		c.put(to, r)
		done = true
		return nil
	})
	if err != nil {
		return false, wrap("copy", err)
	}
	return done, nil
}
