package kv

// Lists (SPEC §13). A list's elements are member records in the space
// spaceElements, keyed by position: space, position (uint64 BE). The
// header's ext holds the head, the position of the first element; the
// elements are at head, head+1, …, head+size-1, and a new list's head is
// 2^63, so that either end can grow by 2^63 pushes.
//
// What each command costs, n being the list's size:
//
//   - LPUSH, RPUSH, LPOP, RPOP: O(1) a element: a put or a delete at an
//     end, and the header.
//   - LINDEX, LSET: one point lookup (position = head + index), O(1).
//   - LRANGE: a seek and a scan of what it returns.
//   - LTRIM: two range deletions and the header, O(1) in the foreground
//     whatever it drops (Pebble drops the records in compaction).
//   - LINSERT: a scan to the pivot, then the elements on the shorter side
//     of it move by one: O(min(p, n-p)) writes at the pivot's index p.
//   - LREM: a scan for the matches, then the elements between the end
//     nearer them and the farthest match move to close the gaps:
//     O(elements moved), at most n.
//   - LPOS: a scan from the end RANK names, up to MAXLEN elements.
//   - LLEN: the header's size. DEL, UNLINK and expiry: O(1), as every
//     collection's (storage_reclaim.go).

import (
	"bytes"
	"encoding/binary"
)

// listHead0 is a new list's head.
const listHead0 = uint64(1) << 63

func posSub(p uint64) []byte {
	sub := make([]byte, 9)
	sub[0] = spaceElements
	binary.BigEndian.PutUint64(sub[1:], p)
	return sub
}

// head is the position of a list's first element.
func (h header) head() uint64 {
	if len(h.ext) < 8 {
		return listHead0
	}
	return binary.BigEndian.Uint64(h.ext)
}

func (co *coll) setHead(p uint64) {
	co.ext = binary.BigEndian.AppendUint64(co.ext[:0], p)
	co.dirty = true
}

// at is the element at index i (0 ≤ i < size).
func (co *coll) at(i int64) ([]byte, error) {
	v, _, err := co.get(posSub(co.head() + uint64(i)))
	return v, err
}

// push adds v at the front (left) or the back.
func (co *coll) push(left bool, v []byte) {
	h := co.head()
	if left {
		h--
		co.put(posSub(h), v)
		co.setHead(h)
	} else {
		co.put(posSub(h+uint64(co.size)), v)
		co.setHead(h) // a new list's head goes in its header
	}
	co.size++
}

// pop takes up to count elements from the front (left) or the back.
func (co *coll) pop(left bool, count int64) ([][]byte, error) {
	out := [][]byte{}
	n := min(count, co.size)
	h := co.head()
	for i := range n {
		p := h + uint64(i)
		if !left {
			p = h + uint64(co.size-1-i)
		}
		v, _, err := co.get(posSub(p))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		co.del(posSub(p))
	}
	if left {
		co.setHead(h + uint64(n))
	}
	co.size -= n
	co.dirty = true
	return out, nil
}

// listUpdate runs fn on key's list with its stripe held, and finishes it.
func (s *Store) listUpdate(op string, key []byte, fn func(co *coll) error) error {
	err := s.update(key, false, func(c *change, it *item) error {
		co, err := s.openColl(c, it, TypeList)
		if err != nil {
			return err
		}
		if err := fn(co); err != nil {
			return err
		}
		co.finish()
		return nil
	})
	return wrap(op, err)
}

// Push is LPUSH and RPUSH (left false), and with onlyIfExists LPUSHX and
// RPUSHX: it returns the list's length after.
func (s *Store) Push(key []byte, left, onlyIfExists bool, elems [][]byte) (int64, error) {
	var n int64
	err := s.listUpdate("push", key, func(co *coll) error {
		if onlyIfExists && !co.exists() {
			return nil
		}
		for _, e := range elems {
			co.push(left, e)
		}
		n = co.size
		return nil
	})
	return n, err
}

// Pop is LPOP and RPOP: up to count elements; none (nil) for a missing
// key.
func (s *Store) Pop(key []byte, left bool, count int64) ([][]byte, error) {
	var out [][]byte
	err := s.listUpdate("pop", key, func(co *coll) error {
		if !co.exists() {
			return nil
		}
		var err error
		out, err = co.pop(left, count)
		return err
	})
	return out, err
}

// MPop is LMPOP and BLPOP, BRPOP and BLMPOP's attempt: up to count
// elements from the first of keys that holds a list; key is nil when
// none does. WRONGTYPE for a key of another type met first.
func (s *Store) MPop(keys [][]byte, left bool, count int64) (key []byte, out [][]byte, err error) {
	err = s.updateMany(keys, false, func(c *change, items []item, idx []int) error {
		for i, k := range keys {
			co, err := s.openColl(c, &items[idx[i]], TypeList)
			if err != nil {
				return err
			}
			if !co.exists() {
				continue
			}
			if out, err = co.pop(left, count); err != nil {
				return err
			}
			key = k
			co.finish()
			return nil
		}
		return nil
	})
	return key, out, wrap("mpop", err)
}

// LLen is LLEN, from the header.
func (s *Store) LLen(key []byte) (int64, error) {
	n, err := s.collSize(key, TypeList)
	return n, wrap("llen", err)
}

// LIndex is LINDEX: one point lookup.
func (s *Store) LIndex(key []byte, i int64) (v []byte, ok bool, err error) {
	_, err = s.readColl(key, TypeList, func(cr *collRead) error {
		if i < 0 {
			i += cr.size
		}
		if i < 0 || i >= cr.size {
			return nil
		}
		v, ok, err = cr.get(posSub(cr.head() + uint64(i)))
		return err
	})
	return v, ok, wrap("lindex", err)
}

// LRange is LRANGE: a seek and a scan.
func (s *Store) LRange(key []byte, start, stop int64) ([][]byte, error) {
	out := [][]byte{}
	_, err := s.readColl(key, TypeList, func(cr *collRead) error {
		a, b, ok := rankRange(start, stop, cr.size)
		if !ok {
			return nil
		}
		h := cr.head()
		return cr.each(posSub(h+uint64(a)), posSub(h+uint64(b)+1), func(_, v []byte) (bool, error) {
			out = append(out, clone(v))
			return true, nil
		})
	})
	return out, wrap("lrange", err)
}

// LSet is LSET: ErrNoSuchKey for a missing key, ErrIndexOutOfRange past
// either end.
func (s *Store) LSet(key []byte, i int64, v []byte) error {
	return s.listUpdate("lset", key, func(co *coll) error {
		if !co.exists() {
			return ErrNoSuchKey
		}
		if i < 0 {
			i += co.size
		}
		if i < 0 || i >= co.size {
			return ErrIndexOutOfRange
		}
		co.put(posSub(co.head()+uint64(i)), v)
		return nil
	})
}

// LTrim is LTRIM: the elements outside [start, stop] go, by two range
// deletions.
func (s *Store) LTrim(key []byte, start, stop int64) error {
	return s.listUpdate("ltrim", key, func(co *coll) error {
		if !co.exists() {
			return nil
		}
		h, n := co.head(), co.size
		a, b, ok := rankRange(start, stop, n)
		if !ok {
			co.size = 0 // finish deletes the key; its generation is reclaimed
			co.dirty = true
			return nil
		}
		batch := co.c.batch()
		if a > 0 {
			_ = batch.DeleteRange(memberKey(co.gen, posSub(h)), memberKey(co.gen, posSub(h+uint64(a))), nil)
		}
		if b < n-1 {
			_ = batch.DeleteRange(memberKey(co.gen, posSub(h+uint64(b)+1)), memberKey(co.gen, posSub(h+uint64(n))), nil)
		}
		co.setHead(h + uint64(a))
		co.size = b - a + 1
		return nil
	})
}

// elems reads the elements at indexes [from, to) in order.
func (co *coll) elems(from, to int64) ([][]byte, error) {
	var out [][]byte
	if from >= to {
		return out, nil
	}
	h := co.head()
	err := co.each(posSub(h+uint64(from)), posSub(h+uint64(to)), func(_, v []byte) (bool, error) {
		out = append(out, clone(v))
		return true, nil
	})
	return out, err
}

// find is the index of the first element equal to v, -1 if none.
func (co *coll) find(v []byte) (int64, error) {
	i, at := int64(0), int64(-1)
	err := co.each(posSub(co.head()), posSub(co.head()+uint64(co.size)), func(_, e []byte) (bool, error) {
		if bytes.Equal(e, v) {
			at = i
			return false, nil
		}
		i++
		return true, nil
	})
	return at, err
}

// insertAt puts v at index i (0 ≤ i ≤ size), moving the elements on the
// shorter side of it by one.
func (co *coll) insertAt(i int64, v []byte) error {
	h := co.head()
	if i < co.size-i {
		front, err := co.elems(0, i)
		if err != nil {
			return err
		}
		for j, e := range front {
			co.put(posSub(h-1+uint64(j)), e)
		}
		co.put(posSub(h-1+uint64(i)), v)
		co.setHead(h - 1)
	} else {
		back, err := co.elems(i, co.size)
		if err != nil {
			return err
		}
		for j, e := range back {
			co.put(posSub(h+uint64(i)+1+uint64(j)), e)
		}
		co.put(posSub(h+uint64(i)), v)
		co.setHead(h)
	}
	co.size++
	return nil
}

// LInsert is LINSERT: the list's length after, -1 when pivot is not in
// it, 0 for a missing key.
func (s *Store) LInsert(key []byte, before bool, pivot, v []byte) (int64, error) {
	var n int64
	err := s.listUpdate("linsert", key, func(co *coll) error {
		if !co.exists() {
			return nil
		}
		p, err := co.find(pivot)
		if err != nil {
			return err
		}
		if p < 0 {
			n = -1
			return nil
		}
		if !before {
			p++
		}
		if err := co.insertAt(p, v); err != nil {
			return err
		}
		n = co.size
		return nil
	})
	return n, err
}

// LRem is LREM: up to |count| elements equal to v (all for 0), from the
// front for count ≥ 0, from the back for count < 0; how many went.
func (s *Store) LRem(key []byte, count int64, v []byte) (int64, error) {
	var removed int64
	err := s.listUpdate("lrem", key, func(co *coll) error {
		if !co.exists() {
			return nil
		}
		h, n := co.head(), co.size
		var hits []int64 // indexes, ascending
		i, step := int64(0), int64(1)
		each := co.each
		if count < 0 {
			i, step, each = n-1, -1, co.eachReverse
		}
		limit := count
		if limit < 0 {
			limit = -limit
		}
		err := each(posSub(h), posSub(h+uint64(n)), func(_, e []byte) (bool, error) {
			if bytes.Equal(e, v) {
				hits = append(hits, i)
			}
			i += step
			return limit == 0 || int64(len(hits)) < limit, nil
		})
		if err != nil || len(hits) == 0 {
			return err
		}
		if count < 0 {
			for a, b := 0, len(hits)-1; a < b; a, b = a+1, b-1 {
				hits[a], hits[b] = hits[b], hits[a]
			}
		}
		first, last := hits[0], hits[len(hits)-1]
		k := int64(len(hits))
		hit := map[int64]bool{}
		for _, x := range hits {
			hit[x] = true
		}
		if n-first <= last+1 {
			// Close the gaps toward the front: what follows the first
			// match moves down.
			tail, err := co.elems(first, n)
			if err != nil {
				return err
			}
			w := first
			for j, e := range tail {
				if hit[first+int64(j)] {
					continue
				}
				co.put(posSub(h+uint64(w)), e)
				w++
			}
			for p := n - k; p < n; p++ {
				co.del(posSub(h + uint64(p)))
			}
		} else {
			// Toward the back: what precedes the last match moves up.
			front, err := co.elems(0, last+1)
			if err != nil {
				return err
			}
			w := last
			for j := len(front) - 1; j >= 0; j-- {
				if hit[int64(j)] {
					continue
				}
				co.put(posSub(h+uint64(w)), front[j])
				w--
			}
			for p := int64(0); p < k; p++ {
				co.del(posSub(h + uint64(p)))
			}
			co.setHead(h + uint64(k))
		}
		co.size -= k
		co.dirty = true
		removed = k
		return nil
	})
	return removed, err
}

// LPosOptions are LPOS's RANK, COUNT (0: all; -1: not given) and MAXLEN
// (0: no limit).
type LPosOptions struct {
	Rank, Count, MaxLen int64
}

// LPos is LPOS: the indexes of the elements equal to v, from the front
// for a positive rank, from the back for a negative one, skipping
// |rank|-1 matches, at most Count of them, looking at MaxLen elements.
func (s *Store) LPos(key, v []byte, o LPosOptions) ([]int64, error) {
	var out []int64
	_, err := s.readColl(key, TypeList, func(cr *collRead) error {
		h, n := cr.head(), cr.size
		skip := o.Rank - 1
		i, step := int64(0), int64(1)
		each := cr.each
		if o.Rank < 0 {
			skip = -o.Rank - 1
			i, step, each = n-1, -1, cr.eachReverse
		}
		want := o.Count
		if want < 0 {
			want = 1
		}
		var looked int64
		return each(posSub(h), posSub(h+uint64(n)), func(_, e []byte) (bool, error) {
			if o.MaxLen > 0 && looked >= o.MaxLen {
				return false, nil
			}
			looked++
			if bytes.Equal(e, v) {
				if skip > 0 {
					skip--
				} else {
					out = append(out, i)
					if want > 0 && int64(len(out)) >= want {
						return false, nil
					}
				}
			}
			i += step
			return true, nil
		})
	})
	return out, wrap("lpos", err)
}

// LMove is LMOVE and RPOPLPUSH (and BLMOVE's attempt): the element popped
// from src's front (fromLeft) or back, pushed at dst's front (toLeft) or
// back; ok is false, and nothing happens, when src is missing. WRONGTYPE
// when src or dst holds another type.
func (s *Store) LMove(src, dst []byte, fromLeft, toLeft bool) (v []byte, ok bool, err error) {
	err = s.updateMany([][]byte{src, dst}, false, func(c *change, items []item, idx []int) error {
		from, err := s.openColl(c, &items[idx[0]], TypeList)
		if err != nil || !from.exists() {
			return err // Redis looks at dst only once src has an element
		}
		to := from
		if idx[1] != idx[0] {
			if to, err = s.openColl(c, &items[idx[1]], TypeList); err != nil {
				return err
			}
		}
		popped, err := from.pop(fromLeft, 1)
		if err != nil || len(popped) == 0 {
			return err
		}
		v, ok = popped[0], true
		to.push(toLeft, v)
		from.finish()
		if to != from {
			to.finish()
		}
		return nil
	})
	return v, ok, wrap("lmove", err)
}

// listElems reads all of key's elements, for SORT: nil, false for a
// missing key.
func (cr *collRead) listElems() ([][]byte, error) {
	out := make([][]byte, 0, min(cr.size, 1<<16))
	err := cr.each(posSub(cr.head()), posSub(cr.head()+uint64(cr.size)), func(_, v []byte) (bool, error) {
		out = append(out, clone(v))
		return true, nil
	})
	return out, err
}

// ListStore makes dst a new list of elems, whatever it held (SORT …
// STORE); none deletes it. It returns the list's length.
func (s *Store) ListStore(dst []byte, elems [][]byte) (int64, error) {
	var n int64
	err := s.update(dst, false, func(c *change, it *item) error {
		co := s.freshColl(c, it, TypeList)
		for _, e := range elems {
			co.push(false, e)
		}
		co.finish()
		n = co.size
		return nil
	})
	return n, wrap("sort", err)
}

// SortSource reads key's elements for SORT: a list's in order, a set's,
// a zset's in its order (with desc, from the high end); WRONGTYPE for a
// string, nil for a missing key.
func (s *Store) SortSource(key []byte) (elems [][]byte, typ Type, err error) {
	var found bool
	found, err = s.view(key, typeAny, func(rec record) { typ = rec.typ })
	if err != nil || !found {
		return nil, 0, err
	}
	switch typ {
	case TypeList:
		_, err = s.readColl(key, TypeList, func(cr *collRead) error {
			elems, err = cr.listElems()
			return err
		})
	case TypeSet:
		elems, err = s.SMembers(key)
	case TypeZSet:
		var zs []ZMember
		zs, err = s.ZRange(key, ZRangeSpec{By: ByRank, Start: 0, Stop: -1})
		for _, z := range zs {
			elems = append(elems, z.Member)
		}
	default:
		return nil, typ, ErrWrongType
	}
	return elems, typ, wrap("sort", err)
}
