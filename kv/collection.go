package kv

// Collections: what every type of many members (hash, set, zset, list)
// shares, so that a type's file says what its commands do and nothing of
// how members reach Pebble (SPEC §13 Storage; see the package doc's "A new
// type").
//
// A collection is its metadata record (type, flags, expiry, fence, then
// the header: generation, size, and the type's own bytes, ext) and its
// member records, each under the generation: memberKey(gen, sub), where
// sub, the sub-key, is the type's to choose. Hashes and sets keep each
// member in a hashed space: sub = space byte, xxhash64(member) BE,
// member (memberSub), so that a member read is one point lookup, an
// HSCAN/SSCAN cursor is the hash to resume from as SCAN's is (a member
// present for the whole scan is met at least once, whatever is added or
// removed around it), and a random member is the first one after a random
// hash. A zset keeps its members so too and a score index in a space of
// its own; a list keeps its elements in a space keyed by position.
//
// A write command opens its key's collection under the key's stripe
// (openColl, or freshColl for a STORE that replaces what dst held), reads
// and writes members through it, changes size as it adds and removes, and
// ends with finish: the metadata record, with the new size, goes in the
// same batch as the members, or, when the size is 0, the key is deleted
// (its generation to be reclaimed). So a crash never leaves a size that
// disagrees with the members. A read command reads the header and then
// its members (readColl).

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Member spaces: the first byte of a sub-key. A type may use several.
const (
	// spaceMembers holds hash fields, set members and zset members, each
	// under its hash (memberSub).
	spaceMembers byte = 0x00
	// spaceScores is a zset's score index.
	spaceScores byte = 0x01
	// spaceElements is a list's elements, by position.
	spaceElements byte = 0x02
)

// memberSub is member's sub-key in hashed space sp: sp, xxhash64(member)
// BE, member.
func memberSub(sp byte, member []byte) []byte {
	sub := make([]byte, 9, 9+len(member))
	sub[0] = sp
	binary.BigEndian.PutUint64(sub[1:], hashKey(member))
	return append(sub, member...)
}

// subPrefix is the first sub-key of hashed space sp from hash h on.
func subPrefix(sp byte, h uint64) []byte {
	sub := make([]byte, 9)
	sub[0] = sp
	binary.BigEndian.PutUint64(sub[1:], h)
	return sub
}

// header is what a collection's metadata record says of it beyond the
// key's: its generation (0: it does not exist), size and the type's own
// bytes.
type header struct {
	gen  uint64
	size int64
	ext  []byte // owned: a copy
}

func headerOf(r record) header {
	if r.typ == TypeString || len(r.value) < collectionHeaderLen {
		return header{}
	}
	return header{gen: r.generation(), size: int64(r.size()), ext: clone(r.value[collectionHeaderLen:])}
}

// value is the record's payload for h.
func (h header) value() []byte {
	v := make([]byte, collectionHeaderLen, collectionHeaderLen+len(h.ext))
	binary.BigEndian.PutUint64(v, h.gen)
	binary.BigEndian.PutUint64(v[8:], uint64(h.size))
	return append(v, h.ext...)
}

// collRead reads one collection's members, as its header names them,
// through r: Pebble, or a transaction's or pipeline's batch.
type collRead struct {
	r pebble.Reader
	header
	rng *rand.Rand // random choices; nil: math/rand's (see Store.rand)
}

// intN is a random number in [0, n).
func (cr *collRead) intN(n int) int {
	if cr.rng != nil {
		return cr.rng.IntN(n)
	}
	return rand.IntN(n)
}

// rand is the source of a command's random choices: in a replicated
// entry's transaction one seeded by the entry, so that every copy of the
// keyspace chooses alike (SPOP); nil elsewhere, for math/rand's.
func (s *Store) rand() *rand.Rand {
	if s.tx != nil {
		return s.tx.rng
	}
	return nil
}

// get reads the member record sub; v is a copy.
func (cr *collRead) get(sub []byte) (v []byte, ok bool, err error) {
	if cr.gen == 0 {
		return nil, false, nil
	}
	raw, closer, err := cr.r.Get(memberKey(cr.gen, sub))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v = clone(raw)
	return v, true, closer.Close()
}

// bounds are the Pebble keys of sub-keys [lo, hi); a nil hi is the end
// of the generation.
func (cr *collRead) bounds(lo, hi []byte) (lower, upper []byte) {
	lower = append(memberPrefix(cr.gen), lo...)
	if hi == nil {
		if cr.gen == math.MaxUint64 {
			return lower, []byte{nsMember + 1}
		}
		return lower, memberPrefix(cr.gen + 1)
	}
	return lower, append(memberPrefix(cr.gen), hi...)
}

// each calls fn with every member record whose sub-key is in [lo, hi)
// (hi nil: to the end), in sub-key order, until fn returns false. sub and
// v alias Pebble's memory for the duration of the call.
func (cr *collRead) each(lo, hi []byte, fn func(sub, v []byte) (bool, error)) error {
	return cr.iter(lo, hi, false, fn)
}

// eachReverse is each from the last sub-key down.
func (cr *collRead) eachReverse(lo, hi []byte, fn func(sub, v []byte) (bool, error)) error {
	return cr.iter(lo, hi, true, fn)
}

func (cr *collRead) iter(lo, hi []byte, reverse bool, fn func(sub, v []byte) (bool, error)) error {
	if cr.gen == 0 {
		return nil
	}
	lower, upper := cr.bounds(lo, hi)
	iter, err := cr.r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	first, next := iter.First, iter.Next
	if reverse {
		first, next = iter.Last, iter.Prev
	}
	for valid := first(); valid; valid = next() {
		v, err := iter.ValueAndErr()
		if err != nil {
			return closeIter(iter, err)
		}
		more, err := fn(iter.Key()[prefixLen:], v)
		if err != nil || !more {
			return closeIter(iter, err)
		}
	}
	return closeIter(iter, iter.Error())
}

// members calls fn with each member of hashed space sp and its value, in
// hash order; member and v alias Pebble's memory for the call.
func (cr *collRead) members(sp byte, fn func(member, v []byte) (bool, error)) error {
	return cr.each([]byte{sp}, []byte{sp + 1}, func(sub, v []byte) (bool, error) {
		return fn(sub[9:], v)
	})
}

// scan is HSCAN, SSCAN and ZSCAN's walk of hashed space sp: it calls fn
// with the members whose hash is at least cursor, in hash order, and stops
// once it has met count members and the next one's hash differs from the
// last one's, returning that hash as the cursor to resume from; 0 when
// the space is exhausted. As SCAN's (Store.walkFrom): a member present for
// the whole scan is met at least once, members of equal hashes together.
func (cr *collRead) scan(sp byte, cursor uint64, count int, fn func(member, v []byte)) (next uint64, err error) {
	seen := 0
	var last uint64
	err = cr.each(subPrefix(sp, cursor), []byte{sp + 1}, func(sub, v []byte) (bool, error) {
		h := binary.BigEndian.Uint64(sub[1:9])
		if seen >= count && h != last {
			next = h // > last >= cursor, so never 0
			return false, nil
		}
		seen++
		last = h
		fn(sub[9:], v)
		return true, nil
	})
	return next, err
}

// random returns a member of hashed space sp chosen at random, and its
// value (copies): the first one from a random hash on, wrapping around,
// as RandomKey chooses a key. ok is false for an empty space.
func (cr *collRead) random(sp byte) (member, v []byte, ok bool, err error) {
	take := func(sub, val []byte) (bool, error) {
		member, v, ok = clone(sub[9:]), clone(val), true
		return false, nil
	}
	from := rand.Uint64()
	if cr.rng != nil {
		from = cr.rng.Uint64()
	}
	if err := cr.each(subPrefix(sp, from), []byte{sp + 1}, take); err != nil || ok {
		return member, v, ok, err
	}
	err = cr.each([]byte{sp}, subPrefix(sp, from), take)
	return member, v, ok, err
}

// readColl calls fn with key's collection of type t, if key is a live
// one: ErrWrongType for a live key of another type, found false (and fn
// not called) for a missing one. fn's reads see what was committed when
// it reads them (or, in a transaction or pipeline, its batch); the header
// is the one read just before. The read settles (storage_readsettle.go)
// once fn has read.
func (s *Store) readColl(key []byte, t Type, fn func(cr *collRead) error) (found bool, err error) {
	var h header
	found, err = s.view(key, t, func(rec record) { h = headerOf(rec) })
	if err != nil || !found {
		return found, err
	}
	if err := fn(&collRead{r: s.reader(), header: h}); err != nil {
		return true, err
	}
	return true, s.settleRead()
}

// coll is a collection as a write command holds it, under its key's
// stripe: it reads members through the command's reader, writes them into
// the command's change, and keeps what this command wrote (pend) for the
// reads after, as the change's batch cannot be read.
type coll struct {
	collRead
	s    *Store
	c    *change
	it   *item
	typ  Type
	pend map[string]pendingMember
	// dirty: a member was written, or the header changed, and finish must
	// write the metadata record.
	dirty bool
}

type pendingMember struct {
	v   []byte
	del bool
}

// openColl opens it's collection of type t for a write: ErrWrongType if
// it holds a live key of another type; an empty collection, to be made
// at its first put, if it holds none.
func (s *Store) openColl(c *change, it *item, t Type) (*coll, error) {
	if err := it.cur.is(t); err != nil {
		return nil, err
	}
	co := &coll{collRead: collRead{r: s.reader(), rng: s.rand()}, s: s, c: c, it: it, typ: t}
	if it.cur.live {
		co.header = headerOf(it.cur.rec)
	}
	return co, nil
}

// freshColl opens an empty collection of type t on it, whatever it holds:
// for a STORE form (SINTERSTORE …), whose result replaces dst. The old
// value, if any, goes at finish, as SET over a collection does.
func (s *Store) freshColl(c *change, it *item, t Type) *coll {
	return &coll{collRead: collRead{r: s.reader(), rng: s.rand()}, s: s, c: c, it: it, typ: t, dirty: it.cur.live}
}

// exists reports whether the collection was there when opened, or has
// been made since.
func (co *coll) exists() bool { return co.gen != 0 }

// get reads sub, with this command's own writes.
func (co *coll) get(sub []byte) ([]byte, bool, error) {
	if p, ok := co.pend[string(sub)]; ok {
		return p.v, !p.del, nil
	}
	return co.collRead.get(sub)
}

// has reports whether sub exists, with this command's own writes.
func (co *coll) has(sub []byte) (bool, error) {
	_, ok, err := co.get(sub)
	return ok, err
}

// put writes sub's record (a new collection gets its generation at its
// first put). The caller keeps size.
func (co *coll) put(sub, v []byte) {
	if co.gen == 0 {
		co.gen = co.s.newGeneration()
	}
	_ = co.c.batch().Set(memberKey(co.gen, sub), v, nil)
	co.note(sub, pendingMember{v: v})
}

// del deletes sub's record. The caller keeps size.
func (co *coll) del(sub []byte) {
	if co.gen == 0 {
		return
	}
	_ = co.c.batch().Delete(memberKey(co.gen, sub), nil)
	co.note(sub, pendingMember{del: true})
}

func (co *coll) note(sub []byte, p pendingMember) {
	if co.pend == nil {
		co.pend = map[string]pendingMember{}
	}
	co.pend[string(sub)] = p
	co.dirty = true
}

// finish writes the metadata record, with the size and ext as the command
// left them, into the same batch as the members; a collection left empty
// is deleted, and its generation goes to be reclaimed. The key's expiry
// and fence stay, as Redis keeps a collection's TTL across writes.
func (co *coll) finish() {
	if !co.dirty {
		return
	}
	co.dirty = false
	if co.size <= 0 {
		if co.it.cur.live {
			co.c.del(co.it)
		}
		return
	}
	r := record{typ: co.typ, value: co.header.value()}
	if co.it.cur.live {
		r.fence = co.it.cur.rec.fence
		if co.it.cur.rec.typ == co.typ && co.it.cur.rec.generation() == co.gen {
			r.expiry = co.it.cur.rec.expiry // the same collection: a STORE's new one has none
		}
	}
	co.c.put(co.it, r)
}

// Encodings: OBJECT ENCODING's name for a collection comes from its
// header (collectionEncoders, keys.go). A type whose name depends on what
// its members held once (a hash keeps "hashtable" after its long values
// are gone, as Redis never converts back) keeps that in ext.

// extBig is bit 0 of a hash's or set's ext byte: it grew past what Redis
// keeps packed (listpack, intset), and stays so as Redis's does.
const extBig byte = 1 << 0

// isBig reports ext's extBig.
func (h header) isBig() bool { return len(h.ext) > 0 && h.ext[0]&extBig != 0 }

// markBig sets ext's extBig.
func (co *coll) markBig() {
	if co.isBig() {
		return
	}
	if len(co.ext) == 0 {
		co.ext = []byte{0}
	}
	co.ext[0] |= extBig
	co.dirty = true
}

// EncodingLimits are the sizes up to which Redis 7.0 keeps a collection
// packed, as its configuration names them: OBJECT ENCODING answers by
// them. A collection's name is decided as it is written, and stays once
// it is the big one, as Redis converts one way only.
type EncodingLimits struct {
	HashMaxListpackEntries int64 // hash-max-listpack-entries
	HashMaxListpackValue   int64 // hash-max-listpack-value (bytes of a field or value)
	SetMaxIntsetEntries    int64 // set-max-intset-entries
	ZSetMaxListpackEntries int64 // zset-max-listpack-entries
	ZSetMaxListpackValue   int64 // zset-max-listpack-value (bytes of a member)
}

// DefaultEncodingLimits are Redis 7.0's defaults, which Open starts with.
var DefaultEncodingLimits = EncodingLimits{HashMaxListpackEntries: 512, HashMaxListpackValue: 64, SetMaxIntsetEntries: 512,
	ZSetMaxListpackEntries: 128, ZSetMaxListpackValue: 64}

// SetEncodingLimits sets the limits OBJECT ENCODING answers by, from the
// next write on (CONFIG SET). In a cluster each node has its own, as each
// has its own configuration: they decide no member, only that name.
func (s *Store) SetEncodingLimits(l EncodingLimits) { s.limits.Store(&l) }

// EncodingLimits returns the limits in force.
func (s *Store) EncodingLimits() EncodingLimits { return *s.limits.Load() }

// isInt reports whether member is an integer Redis would keep in an
// intset: one string2ll reads.
func isInt(member []byte) bool {
	_, ok := redistext.ParseInt(member)
	return ok
}

// randomLoadMax is the size up to which a random pick reads every member
// and chooses among them evenly, as Redis does; a larger collection is
// sampled with random seeks (random), which favours a member by the gap
// of hashes before it, close to even for a 64-bit hash.
const randomLoadMax = 4096

// all reads every member of hashed space sp, and its value with values.
func (cr *collRead) all(sp byte, values bool) (members, vals [][]byte, err error) {
	err = cr.members(sp, func(m, v []byte) (bool, error) {
		members = append(members, clone(m))
		if values {
			vals = append(vals, clone(v))
		}
		return true, nil
	})
	return members, vals, err
}

// randomMembers is HRANDFIELD's, SRANDMEMBER's and ZRANDMEMBER's choice
// from hashed space spaceMembers: count > 0 distinct members (all of them
// when count is the size or more), count < 0 that many picks that may
// repeat; with values each member is followed by its value.
func (cr *collRead) randomMembers(count int64, values bool) ([][]byte, error) {
	out := [][]byte{}
	emit := func(m, v []byte) {
		out = append(out, m)
		if values {
			out = append(out, v)
		}
	}
	switch {
	case count == 0 || cr.size == 0:
		return out, nil
	case count >= cr.size || cr.size <= randomLoadMax || (count > 0 && count*2 > cr.size):
		ms, vs, err := cr.all(spaceMembers, values)
		if err != nil {
			return nil, err
		}
		if !values {
			vs = make([][]byte, len(ms))
		}
		if count < 0 {
			for range -count {
				i := cr.intN(len(ms))
				emit(ms[i], vs[i])
			}
			return out, nil
		}
		// A partial Fisher–Yates shuffle: the first count are an even choice.
		n := int(min(count, int64(len(ms))))
		for i := range n {
			j := i + cr.intN(len(ms)-i)
			ms[i], ms[j] = ms[j], ms[i]
			vs[i], vs[j] = vs[j], vs[i]
			emit(ms[i], vs[i])
		}
		return out, nil
	}
	seen := map[string]bool{}
	for picks := int64(0); count < 0 && picks < -count || count > 0 && int64(len(seen)) < count; picks++ {
		m, v, ok, err := cr.random(spaceMembers)
		if err != nil || !ok {
			return out, err
		}
		if count > 0 {
			if seen[string(m)] {
				continue
			}
			seen[string(m)] = true
		}
		emit(m, v)
	}
	return out, nil
}

// randomOne is one member of hashed space spaceMembers chosen at random
// (evenly up to randomLoadMax members), and its value.
func (cr *collRead) randomOne() (m, v []byte, ok bool, err error) {
	if cr.size > randomLoadMax {
		return cr.random(spaceMembers)
	}
	out, err := cr.randomMembers(1, true)
	if err != nil || len(out) < 2 {
		return nil, nil, false, err
	}
	return out[0], out[1], true, nil
}

// MemoryUsage is MEMORY USAGE key [SAMPLES n]: an estimate, in bytes, of
// what the key takes, in Redis's manner: its name, its value or header,
// and for a collection the average of the first samples members (0: all
// of them) times its size. ok is false for a missing key.
func (s *Store) MemoryUsage(key []byte, samples int64) (n int64, ok bool, err error) {
	const overhead = 16 // an object header, a dict entry's share
	var h header
	var strLen int64
	ok, err = s.view(key, typeAny, func(rec record) {
		if rec.typ == TypeString {
			strLen = int64(len(rec.value))
			return
		}
		h = headerOf(rec)
	})
	if err != nil || !ok {
		return 0, ok, wrap("memory", err)
	}
	n = overhead + int64(len(key)) + strLen
	if h.gen == 0 {
		return n, true, nil
	}
	var seen, bytes int64
	cr := &collRead{r: s.reader(), header: h}
	err = cr.each(nil, nil, func(sub, v []byte) (bool, error) {
		seen++
		bytes += int64(len(sub)+len(v)) + overhead
		return samples <= 0 || seen < samples, nil
	})
	if err != nil {
		return 0, false, wrap("memory", err)
	}
	if seen > 0 {
		n += bytes * h.size / seen
	}
	return n, true, nil
}
